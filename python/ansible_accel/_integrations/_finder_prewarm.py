"""Scanning and locating ansible-core's own module_utils before workers fork (the ``finder``
path).

ansible-playbook builds each module's payload in a forked worker, whose caches die with it.
Every module needs ansible-core's module_utils, so the controller scans them once, on a thread
(the GIL is released while parsing), and each worker inherits the answers.  The scan starts
when the second worker whose task may build a payload is about to fork (the ``workers`` path
asks; a task of an action that runs no module, such as ``debug`` or ``set_fact``, does not
count), so a run without modules, or with one, pays nothing for it.  Without the ``workers`` path, the
first fork starts it.  A fork waits for the thread to finish and leave the process first, so
no worker is forked from a process with a scan in flight, or with a second thread at all.
"""

from __future__ import annotations

import os
import pathlib
import threading
import typing as t

from .. import _counters, _fork
from . import _finder_closure as closure_memo
from . import _finder_disk
from . import _finder_locate as locate_memo
from . import _finder_scan

PATH = "finder"

_prewarm_thread: threading.Thread | None = None


def _prewarm(walk: t.Any) -> None:
    root = pathlib.Path(walk.mc._MODULE_UTILS_PATH).resolve()
    sources = []
    imported: set[tuple[str, ...]] = set()
    for path in sorted(root.rglob("*.py")):
        parts = ("ansible", "module_utils") + path.relative_to(root).with_suffix("").parts
        is_pkg_init = parts[-1] == "__init__"
        try:
            source = path.read_bytes()
        except OSError:
            continue
        sources.append(source)
        scan = _finder_scan.scan(walk, ".".join(parts[:-1] if is_pkg_init else parts), source, is_pkg_init,
                                 event="prewarm_scan")
        if scan is not None:
            imported.update(scan.submodules)
    _prewarm_locations(walk, imported)
    # the payload writer's one-off check of the native zlib, answered once for every worker,
    # and the deflate streams of those same files, which every payload carries
    from ..payload import _native_zlib_matches as native_zlib_matches, warm_cache

    if native_zlib_matches():
        warm_cache(sources)
    # the directories of closure records and kept entries every worker's walk looks in:
    # found (or made) once here, where each forked worker inherits the answer
    if os.environ.get("ANSIBLE_ACCEL_FINDER_DISK", "1") != "0":
        try:
            _finder_disk.directory()
            _finder_disk.block_directory()
        except Exception:  # noqa: BLE001 - the walks find it themselves
            pass
    if walk.has_embeds:
        _prewarm_resources()


def _prewarm_resources() -> None:
    """What the first embedded resource of a process costs before any file is looked at:
    importlib.resources importing its readers and dispatching on a package name, both
    remembered by the interpreter afterwards.  Asked here for ansible-core's own (already
    imported) package, so every worker inherits them."""
    try:
        from importlib import resources

        resources.files("ansible")
    except Exception:  # noqa: BLE001 - the first embed pays for it then
        pass


def _module_utils_paths_unshared(mc: t.Any) -> list[str] | None:
    """What _finder_scan.module_utils_paths() will say, computed without leaving anything in
    the shared plugin loader: its path cache, filled from this thread, could otherwise keep a
    stale list over a directory the main thread adds meanwhile."""
    loader = mc.module_utils_loader
    if getattr(loader, "_paths", None) is not None:
        return _finder_scan.module_utils_paths(mc)
    if "_paths" not in vars(loader):
        return None
    probe = object.__new__(type(loader))
    probe.__dict__.update(vars(loader))
    paths = [p for p in probe._get_paths(subdirs=False) if os.path.isdir(p)]
    paths.append(mc._MODULE_UTILS_PATH)
    return paths


def _prewarm_locations(walk: t.Any, imported: set[tuple[str, ...]]) -> None:
    """Where ansible-core's module_utils import each other (and what every payload carries)
    is the same for every module: locate it once in the controller, as a walk would."""
    mc = walk.mc
    if closure_memo.collection_loader() is None:
        return  # no routing to check against yet: leave it to the walks
    try:
        paths = _module_utils_paths_unshared(mc)
        entries = [(m, True) for m in sorted(imported)]
        entries += [(e.name_parts, e.is_ambiguous) for e in _finder_scan.always_required(mc, "legacy", _NO_EXTENSIONS)]
    except Exception:  # noqa: BLE001 - an ansible-core this does not fit: the walks locate
        return
    ran = locate_memo.prewarm(mc, entries, paths) if paths is not None else 0
    if ran:
        _counters.extra(PATH, "prewarm_locate", ran)


class _NoExtensions:
    module_names: list[str] = []


_NO_EXTENSIONS = _NoExtensions()


# Actions of ansible-core that run in the worker without building a module payload.
MODULE_LESS_ACTIONS = frozenset({
    "add_host", "assert", "debug", "fail", "group_by", "include_role", "include_tasks", "include_vars",
    "import_role", "import_tasks", "meta", "pause", "set_fact", "set_stats", "validate_argument_spec",
})
_pending_walk: t.Any = None
_workers_decide = False  # the workers path starts the pre-warm for the tasks that need it
# The pre-warm scans all of ansible-core's module_utils; one payload needs a part of them, which
# its own walk scans as fast: the pre-warm pays off from the second payload on.
PAYLOADS_BEFORE_PREWARM = 1
_payload_workers = 0


def may_build_payload(action: t.Any) -> bool:
    if not isinstance(action, str):
        return True
    for prefix in ("ansible.builtin.", "ansible.legacy."):
        if action.startswith(prefix):
            action = action[len(prefix):]
            break
    return action not in MODULE_LESS_ACTIONS


def before_worker_start(task: t.Any) -> None:
    """The workers path, before it forks the worker of ``task``: start the pending pre-warm if
    that task may build a payload (the fork then waits for it)."""
    global _workers_decide, _payload_workers
    _workers_decide = True
    if _pending_walk is not None and may_build_payload(getattr(task, "action", None)):
        _payload_workers += 1
        if _payload_workers > PAYLOADS_BEFORE_PREWARM:
            _start_pending()


def _start_pending() -> None:
    global _pending_walk, _prewarm_thread
    walk, _pending_walk = _pending_walk, None
    if walk is None:
        return
    _prewarm_thread = threading.Thread(target=_prewarm, args=(walk,), name="ansible-accel-finder-prewarm", daemon=True)
    _prewarm_thread.start()


# How long a fork waits, at most, for the finished pre-warm thread to leave the process.
THREAD_EXIT_WAIT = 1.0


def _join() -> None:
    global _prewarm_thread
    thread = _prewarm_thread
    if thread is not None and thread is not threading.current_thread():
        thread.join()
        _gone_from_the_kernel(thread.native_id)
        if _prewarm_thread is thread:
            _prewarm_thread = None  # joined and gone: the next fork has nothing to wait for


def _gone_from_the_kernel(native_id: int | None) -> None:
    """Wait until a joined thread has left the process's kernel thread list (Linux): ``join``
    returns once the thread's Python work is done, a little before the system thread ends, and
    a fork in between is a fork of a process with two threads (Python 3.12 and later warn about
    it, and count threads that way)."""
    if native_id is None or not os.path.isdir("/proc/self/task"):
        return
    import time

    task = f"/proc/self/task/{native_id}"
    deadline = time.monotonic() + THREAD_EXIT_WAIT
    while os.path.exists(task) and time.monotonic() < deadline:
        time.sleep(0.0002)


def wait_for_prewarm() -> None:
    """Make sure the pre-warm has run (started now if still pending) and is finished."""
    _start_pending()
    _join()


def _before_fork() -> None:
    if not _workers_decide:
        _start_pending()
    _join()


_fork.register(before=_before_fork)


def start(walk: t.Any) -> None:
    """Make the pre-warm for ``walk`` pending (unless ANSIBLE_ACCEL_FINDER_PREWARM=0)."""
    global _pending_walk
    if os.environ.get("ANSIBLE_ACCEL_FINDER_PREWARM", "1") == "0":
        return
    _pending_walk = walk


def discard_pending() -> None:
    """Uninstalled: a pre-warm not started yet never runs; one running is waited for."""
    global _pending_walk
    _pending_walk = None
    _join()
