"""Writes every task result of a run as JSON to the file named by EXAMPLE_RESULTS_FILE."""

from __future__ import annotations

import json
import os

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = r"""
name: example_results
type: aggregate
short_description: Every task result of a run, as JSON, for the example collection's test
description:
  - Writes a list of (task name, host, status, result) to the file named by EXAMPLE_RESULTS_FILE
    when the run ends.
"""


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "example_results"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._results = []

    def _record(self, status, result):
        # Through JSON at once: the result's values as they are now, in plain types.
        record = [result._task.get_name(), result._host.get_name(), status, result._result]
        self._results.append(json.loads(json.dumps(record, default=repr)))

    def v2_runner_on_ok(self, result):
        self._record("ok", result)

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._record("failed", result)

    def v2_runner_on_skipped(self, result):
        self._record("skipped", result)

    def v2_runner_on_unreachable(self, result):
        self._record("unreachable", result)

    def v2_playbook_on_stats(self, stats):
        with open(os.environ["EXAMPLE_RESULTS_FILE"], "w", encoding="utf-8") as handle:
            json.dump(self._results, handle, indent=1, sort_keys=True)
