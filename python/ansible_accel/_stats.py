"""``ANSIBLE_ACCEL_STATS=FILE``: the counters of a whole run, written as JSON at exit.

The process that switches the accelerator on owns the file.  Workers that
``multiprocessing`` forks from it (ansible-playbook's WorkerProcess) each leave their counts
in a spool directory; the owner adds them to its own at exit.  A worker writes its counts
just before it sends its task result to the controller (and again when it exits): ansible-core
terminates workers still alive when the run ends, so the result send is the last moment
that is sure to come before the controller's exit.

The spool is made by the first worker that writes to it, in the temporary directory and
named after the owner's pid (``ansible-accel-stats-PID-TOKEN``), so an owner that ``exec``s
or is killed before any worker wrote leaves nothing behind; the owner removes it at exit.
The spool of an owner that was killed (or that ``exec``ed after workers wrote) is removed by
the next owner that starts once that pid is gone.  The spool is private to the user: a
directory of mode 0700 owned by them, files of mode 0600; one with another owner or looser
mode is neither written, read nor removed.

When the accelerator is disabled or the version is unsupported, the file is still written
(``installed: false`` and the reason), but nothing is hooked.
"""

from __future__ import annotations

import atexit
import json
import multiprocessing.util
import os
import secrets
import shutil
import tempfile
import typing as t

from . import _counters, _patches
from ._private_dir import is_private_dir

SPOOL_PREFIX = "ansible-accel-stats-"

_owner_pid: int | None = None
_spool: str | None = None
_target: str | None = None
_report: t.Callable[[], dict] | None = None
_workers_hooked = False
_send_hook: list[_patches.Applied] = []  # the result-send hook, while applied
_written: tuple[int, bytes] | None = None  # (pid, counts) this process last left in the spool


class _AfterFork:
    """Weak-referenceable token for ``multiprocessing.util.register_after_fork``."""


_token = _AfterFork()


def activate(report: t.Callable[[], dict], *, hook_workers: bool = True) -> None:
    """Write the stats file at exit if ``ANSIBLE_ACCEL_STATS`` is set: what ``report()`` says
    then (``status()``), with the counters of the whole run; with ``hook_workers`` also
    collect the counters of forked workers."""
    global _owner_pid, _spool, _target, _report, _workers_hooked
    target = os.environ.get("ANSIBLE_ACCEL_STATS")
    if not target:
        return
    _report = report
    if _owner_pid is None:
        _owner_pid, _target = os.getpid(), os.path.abspath(target)
        atexit.register(_at_exit)
    if not hook_workers:
        return
    if not _workers_hooked:
        parent = tempfile.gettempdir()
        # Named now, made by the first worker that writes: nothing exists until it is needed.
        _spool = os.path.join(parent, f"{SPOOL_PREFIX}{_owner_pid}-{secrets.token_hex(8)}")
        remove_stale_spools(parent)
        multiprocessing.util.register_after_fork(_token, _in_worker)
        _workers_hooked = True
    _hook_result_send()


def remove_stale_spools(parent: str) -> None:
    """Remove the spools in ``parent`` that no owner will read: those of pids that are gone,
    and those of this pid other than ours (left by an earlier process that had this pid or
    by this one before it ``exec``ed)."""
    try:
        names = os.listdir(parent)
    except OSError:
        return
    for name in names:
        if not name.startswith(SPOOL_PREFIX):
            continue
        pid_text, _, rest = name[len(SPOOL_PREFIX):].partition("-")
        if not pid_text.isdigit() or not rest:
            continue
        path = os.path.join(parent, name)
        pid = int(pid_text)
        if path == _spool or (pid != os.getpid() and _alive(pid)):
            continue
        if is_private_dir(path):
            shutil.rmtree(path, ignore_errors=True)


def _alive(pid: int) -> bool:
    if pid <= 0:
        return False  # kill(0) and kill(-1) would address process groups
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # e.g. EPERM: it exists, as another user
    return True


def _hook_result_send() -> None:
    if _send_hook:
        return
    try:
        from ansible.executor.task_queue_manager import FinalQueue
    except Exception:  # noqa: BLE001 - counters are advisory; e.g. a module_utils-only ansible
        return  # no controller code here, so no workers to hear from
    original = FinalQueue.send_task_result

    def send_task_result(self, *args, **kwargs):
        _write_spool()
        return original(self, *args, **kwargs)

    send_task_result.__wrapped__ = original
    _send_hook.append(_patches.apply(_patches.Patch(FinalQueue, "send_task_result", send_task_result)))


def deactivate() -> None:
    """Take the result-send hook out again (``uninstall()``); the file is still written."""
    while _send_hook:
        _patches.revert(_send_hook.pop())


def _in_worker(_token: object) -> None:
    # Runs in each multiprocessing child after fork; its finalizers run when the child's
    # run() returns, just before multiprocessing's os._exit().
    multiprocessing.util.Finalize(None, _write_spool, exitpriority=0)


def _write_spool() -> None:
    if _spool is None or _owner_pid is None or os.getpid() == _owner_pid:
        return
    if not _alive(_owner_pid):
        return  # nobody left to read it, and nobody to remove it
    global _written
    data = json.dumps(_counters.snapshot()).encode()
    if _written == (os.getpid(), data):
        return  # at exit, nothing counted since the result was sent
    path = os.path.join(_spool, f"{os.getpid()}.json")
    try:
        _make_spool()
        fd = os.open(path + ".tmp", os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        with open(fd, "wb") as handle:
            handle.write(data)
        os.replace(path + ".tmp", path)
        _written = (os.getpid(), data)
    except OSError:
        pass  # counters are advisory; never fail a worker over them


def _make_spool() -> None:
    try:
        os.mkdir(_spool, 0o700)
    except FileExistsError:
        pass  # another worker made it first
    if not is_private_dir(_spool):
        raise PermissionError(f"{_spool} is not a directory private to this user")


def collect() -> dict:
    """This process's counters plus those every finished worker left in the spool."""
    total: dict = {}
    _counters.merge(total, _counters.snapshot())
    workers = 0
    if _spool and is_private_dir(_spool):
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
    report = _report()
    report["run"] = collect()
    try:
        with open(_target, "w") as handle:
            json.dump(report, handle, indent=2, sort_keys=True)
            handle.write("\n")
    finally:
        if _spool and is_private_dir(_spool):
            shutil.rmtree(_spool, ignore_errors=True)
