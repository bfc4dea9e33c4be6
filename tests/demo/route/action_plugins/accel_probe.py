"""Action plugin for the route checks: runs in the forked worker, reports whether
ansible-accel is installed in it, fails when that is not what ``expect_installed`` says,
and counts one ``route_probe`` event on the ``finder`` path so the stats file shows that
the workers' counters reached the controller."""

from __future__ import annotations

import os
import sys

from ansible.plugins.action import ActionBase


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        activation = sys.modules.get("ansible_accel._activation")
        installed = bool(activation is not None and activation.is_installed())
        if installed:
            from ansible_accel import _counters

            _counters.extra("finder", "route_probe")
        expected = self._task.args.get("expect_installed")
        result.update(changed=False, accel_installed=installed, worker_pid=os.getpid())
        if expected is not None and bool(expected) != installed:
            result.update(
                failed=True, msg=f"ansible-accel installed in the worker: {installed}, expected {bool(expected)}"
            )
        return result
