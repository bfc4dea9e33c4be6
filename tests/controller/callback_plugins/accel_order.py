"""Writes every callback ansible-core fires, in the order it fires them, one JSON line each, as it
fires them (so a run that is cut short leaves what it fired): for the failure tests of the
``controller`` and ``workers`` paths.  The file is named by ACCEL_ORDER_FILE."""

from __future__ import annotations

import json
import os

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = """
    name: accel_order
    type: aggregate
    short_description: every callback fired, in order, as JSON lines (ansible-accel tests)
    description:
        - Appends one line per callback to the file in E(ACCEL_ORDER_FILE).
    requirements:
        - enable in configuration
"""

_EVENTS = ("v2_playbook_on_start", "v2_playbook_on_play_start", "v2_playbook_on_task_start",
           "v2_playbook_on_handler_task_start", "v2_playbook_on_no_hosts_matched", "v2_playbook_on_no_hosts_remaining",
           "v2_playbook_on_notify", "v2_playbook_on_stats", "v2_runner_on_start", "v2_runner_on_ok",
           "v2_runner_on_failed", "v2_runner_on_skipped", "v2_runner_on_unreachable", "v2_runner_item_on_ok",
           "v2_runner_item_on_failed", "v2_runner_item_on_skipped", "v2_runner_retry")


def _describe(value) -> object:
    """A host, a task, a play, a handler or a result: its name (and a result's host, task and flags)."""
    if hasattr(value, "result") and hasattr(value, "host") and hasattr(value, "task"):  # a task result
        result = value.result
        return {"host": value.host.get_name(), "task": value.task.get_name(),
                "flags": {k: result.get(k) for k in ("changed", "failed", "skipped", "unreachable", "msg", "rc")
                          if k in result}}
    if hasattr(value, "get_name"):
        return value.get_name()
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if hasattr(value, "processed"):  # the stats
        return {str(h): value.summarize(h) for h in sorted(value.processed)}
    return type(value).__name__


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "accel_order"
    CALLBACK_NEEDS_ENABLED = True


def _recorder(name):
    def record(self, *args, **kwargs):
        line = json.dumps([name, [_describe(a) for a in args], {k: _describe(v) for k, v in sorted(kwargs.items())}],
                          default=str)
        with open(os.environ["ACCEL_ORDER_FILE"], "a") as handle:
            handle.write(line + "\n")

    record.__name__ = name
    return record


# Methods of the class itself: ansible-core calls only the callbacks a plugin's class overrides.
for _name in _EVENTS:
    setattr(CallbackModule, _name, _recorder(_name))
