"""Callback for the end-to-end benchmark and the demo: every host's task results, in order, as JSON.

Enabled by benches/e2e/run_e2e.py and tests/demo/run_demo.py (ANSIBLE_CALLBACKS_ENABLED=e2e_results);
the file is named by E2E_RESULTS_FILE.  Results are what callbacks see (on 2.22 already masked by
ansible-core), made JSON-safe without losing type information that matters for comparing two runs.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import os

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = """
    name: e2e_results
    type: aggregate
    short_description: write every host's task results as JSON (ansible-accel e2e benchmark)
    description:
        - Collects each task result per host and writes them to the file in E(E2E_RESULTS_FILE).
    requirements:
        - enable in configuration
"""


def plain(value):
    """A JSON-ready copy: tagged/derived str, int, dict... become their base types; other
    objects (warning and deprecation summaries, ...) their type name and fields."""
    if value is None or isinstance(value, bool):
        return value
    for base in (str, int, float):
        if isinstance(value, base):
            return base(value)
    if isinstance(value, dict):
        return {str(plain(k)): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((plain(v) for v in value), key=repr)
    if isinstance(value, enum.Enum):
        return f"{type(value).__name__}.{value.name}"
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
        return {"__type__": type(value).__name__, **fields}
    if hasattr(value, "items"):
        return {str(plain(k)): plain(v) for k, v in value.items()}
    if hasattr(value, "__iter__") and not isinstance(value, (bytes, bytearray)):
        return [plain(v) for v in value]
    return {"__type__": type(value).__name__, "repr": repr(value)}


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "e2e_results"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._hosts: dict[str, list] = {}
        self._play = None

    def v2_playbook_on_play_start(self, play):
        self._play = play.get_name()

    def _record(self, status: str, result) -> None:
        self._hosts.setdefault(result.host.get_name(), []).append({
            "play": self._play,
            "task": result.task.get_name(),
            "action": result.task.action,
            "status": status,
            "result": plain(result.result),
        })

    def v2_runner_on_ok(self, result):
        self._record("ok", result)

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._record("failed (ignored)" if ignore_errors else "failed", result)

    def v2_runner_on_skipped(self, result):
        self._record("skipped", result)

    def v2_runner_on_unreachable(self, result):
        self._record("unreachable", result)

    def v2_playbook_on_stats(self, stats):
        summary = {host: plain(stats.summarize(host)) for host in sorted(stats.processed)}
        path = os.environ.get("E2E_RESULTS_FILE")
        if not path:
            return
        with open(path, "w") as handle:
            json.dump({"hosts": self._hosts, "stats": summary}, handle, indent=1, sort_keys=True)
