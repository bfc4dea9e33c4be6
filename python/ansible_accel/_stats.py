"""``ANSIBLE_ACCEL_STATS=FILE``: the counters of a whole run, written as JSON at exit.

The process that switches the accelerator on owns the file.  Workers that
``multiprocessing`` forks from it (ansible-playbook's WorkerProcess) each leave their counts
in a spool directory; the owner adds them to its own at exit.  A worker writes its counts
just before it sends its task result to the controller (and again when it exits): ansible-core
terminates workers still alive when the run ends, so the result send is the last moment
that is sure to come before the controller's exit.

When the accelerator is disabled or the version is unsupported, the file is still written
(``installed: false`` and the reason), but nothing is hooked.
"""

from __future__ import annotations

import atexit
import json
import multiprocessing.util
import os
import shutil
import tempfile

from . import _counters

_owner_pid: int | None = None
_spool: str | None = None
_target: str | None = None
_workers_hooked = False
_send_hook: list = []  # the _activation._Applied of the result-send hook, while applied


class _AfterFork:
    """Weak-referenceable token for ``multiprocessing.util.register_after_fork``."""


_token = _AfterFork()


def activate(*, hook_workers: bool = True) -> None:
    """Write the stats file at exit if ``ANSIBLE_ACCEL_STATS`` is set; with ``hook_workers``
    also collect the counters of forked workers."""
    global _owner_pid, _spool, _target, _workers_hooked
    target = os.environ.get("ANSIBLE_ACCEL_STATS")
    if not target:
        return
    if _owner_pid is None:
        _owner_pid, _target = os.getpid(), os.path.abspath(target)
        atexit.register(_at_exit)
    if not hook_workers:
        return
    if not _workers_hooked:
        _spool = tempfile.mkdtemp(prefix="ansible-accel-stats-")
        multiprocessing.util.register_after_fork(_token, _in_worker)
        _workers_hooked = True
    _hook_result_send()


def _hook_result_send() -> None:
    if _send_hook:
        return
    try:
        from ansible.executor.task_queue_manager import FinalQueue
    except Exception:  # noqa: BLE001 - counters are advisory; e.g. a module_utils-only ansible
        return  # no controller code here, so no workers to hear from
    from . import _activation

    original = FinalQueue.send_task_result

    def send_task_result(self, *args, **kwargs):
        _write_spool()
        return original(self, *args, **kwargs)

    send_task_result.__wrapped__ = original
    _send_hook.append(_activation._apply(_activation.Patch(FinalQueue, "send_task_result", send_task_result)))


def deactivate() -> None:
    """Take the result-send hook out again (``uninstall()``); the file is still written."""
    from . import _activation

    while _send_hook:
        _activation._revert(_send_hook.pop())


def _in_worker(_token: object) -> None:
    # Runs in each multiprocessing child after fork; its finalizers run when the child's
    # run() returns, just before multiprocessing's os._exit().
    multiprocessing.util.Finalize(None, _write_spool, exitpriority=0)


def _write_spool() -> None:
    if _spool is None or _owner_pid is None or os.getpid() == _owner_pid:
        return
    data = json.dumps(_counters.snapshot())
    path = os.path.join(_spool, f"{os.getpid()}.json")
    try:
        with open(path + ".tmp", "w") as handle:
            handle.write(data)
        os.replace(path + ".tmp", path)
    except OSError:
        pass  # counters are advisory; never fail a worker over them


def collect() -> dict:
    """This process's counters plus those every finished worker left in the spool."""
    total: dict = {}
    _counters.merge(total, _counters.snapshot())
    workers = 0
    if _spool and os.path.isdir(_spool):
        for name in sorted(os.listdir(_spool)):
            if name.endswith(".json"):
                try:
                    with open(os.path.join(_spool, name)) as handle:
                        _counters.merge(total, json.load(handle))
                    workers += 1
                except (OSError, ValueError):
                    continue
    return {"processes": 1 + workers, "paths": total}


def _at_exit() -> None:
    if os.getpid() != _owner_pid:
        _write_spool()  # a plain os.fork() child that exited normally
        return
    from . import _activation

    report = _activation.status()
    report["run"] = collect()
    try:
        with open(_target, "w") as handle:
            json.dump(report, handle, indent=2, sort_keys=True)
            handle.write("\n")
    finally:
        if _spool:
            shutil.rmtree(_spool, ignore_errors=True)
