"""Ends the worker it runs in, for the failure tests of the ``controller`` and ``workers`` paths:
``how: kill`` (SIGKILL to itself) or ``how: exit`` (``os._exit(3)``), after ``after`` seconds,
on the host named by ``host``; every other host gets an ordinary result."""

from __future__ import annotations

import os
import signal
import time

from ansible.plugins.action import ActionBase


class ActionModule(ActionBase):
    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        args = self._task.args
        if task_vars["inventory_hostname"] == args["host"]:
            time.sleep(float(args.get("after", 0)))
            if args.get("how", "kill") == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
            os._exit(3)
        result.update(changed=False, survived=task_vars["inventory_hostname"])
        return result
