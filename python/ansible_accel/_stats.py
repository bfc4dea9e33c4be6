"""``ANSIBLE_ACCEL_STATS=FILE``: the counters of a whole run, written as JSON at exit.

The process that switches the accelerator on owns the file.  Workers that
``multiprocessing`` forks from it (ansible-playbook's WorkerProcess) each leave their counts
in a spool directory when they finish; the owner adds them to its own at exit.
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


class _AfterFork:
    """Weak-referenceable token for ``multiprocessing.util.register_after_fork``."""


_token = _AfterFork()


def activate() -> None:
    global _owner_pid, _spool, _target
    target = os.environ.get("ANSIBLE_ACCEL_STATS")
    if not target or _owner_pid is not None:
        return
    _owner_pid, _target = os.getpid(), os.path.abspath(target)
    _spool = tempfile.mkdtemp(prefix="ansible-accel-stats-")
    multiprocessing.util.register_after_fork(_token, _in_worker)
    atexit.register(_at_exit)


def _in_worker(_token: object) -> None:
    # Runs in each multiprocessing child after fork; its finalizers run when the child's
    # run() returns, just before multiprocessing's os._exit().
    multiprocessing.util.Finalize(None, _write_spool, exitpriority=0)


def _write_spool() -> None:
    if _spool is None or os.getpid() == _owner_pid:
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
        shutil.rmtree(_spool, ignore_errors=True)
