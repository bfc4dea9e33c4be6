"""Per-path counters: calls that went native, and fallbacks to pure Python by reason.

Counters are per process.  Forked workers (ansible-playbook runs each task in one) start from
zero and, when ``ANSIBLE_ACCEL_STATS`` is set, leave their counts in a spool directory that
the controller folds into the stats file at exit (see ``_stats``).
"""

from __future__ import annotations

import collections
import threading
import typing as t

from . import _fork

_R = t.TypeVar("_R")

PATHS = ("finder", "payload", "argspec", "masking", "no_log", "bytecode", "runner", "remote_runner", "ssh_client", "workers", "controller")

_lock = threading.Lock()
_native: collections.Counter[str] = collections.Counter()
_fallback: dict[str, collections.Counter[str]] = {p: collections.Counter() for p in PATHS}
_extra: dict[str, collections.Counter[str]] = {p: collections.Counter() for p in PATHS}
# path -> a function giving (and zeroing) native calls counted elsewhere (in the Rust core).
_pending: dict[str, t.Callable[[], int]] = {}


def native(path: str, n: int = 1) -> None:
    """Count ``n`` calls on ``path`` that the native engine answered."""
    with _lock:
        _native[path] += n


def fallback(path: str, reason: str) -> None:
    """Count one call on ``path`` that went to ansible-core's pure-Python code, and why."""
    with _lock:
        _fallback[path][reason] += 1


def call_original(path: str, reason: str, original: t.Callable[..., _R], /, *args: t.Any, **kwargs: t.Any) -> _R:
    """A call the native side did not answer: count it on ``path`` under ``reason`` and return
    what ``original`` (ansible-core's own code) returns for ``args`` and ``kwargs``, its
    exceptions, warnings and messages included."""
    fallback(path, reason)
    return original(*args, **kwargs)


def extra(path: str, name: str, n: int = 1) -> None:
    """Count a path-specific event (cache hits and the like)."""
    with _lock:
        _extra[path][name] += n


def pending(path: str, take: t.Callable[[], int]) -> None:
    """Native calls on ``path`` are also counted by ``take``, which gives the count since it
    was last called and starts again from zero."""
    _pending[path] = take


def _fold_pending() -> None:
    for path, take in _pending.items():
        n = take()
        if n:
            _native[path] += n


def snapshot() -> dict[str, dict]:
    """A JSON-ready copy of this process's counters."""
    with _lock:
        _fold_pending()
        return {
            p: {"native": _native[p], "fallback": dict(_fallback[p]), **({"events": dict(_extra[p])} if _extra[p] else {})}
            for p in PATHS
        }


def merge(total: dict[str, dict], part: dict[str, dict]) -> None:
    """Add the counters of ``part`` (a ``snapshot()``) into ``total``, in place."""
    for path, counts in part.items():
        into = total.setdefault(path, {"native": 0, "fallback": {}})
        into["native"] = into.get("native", 0) + counts.get("native", 0)
        for key in ("fallback", "events"):
            for reason, n in counts.get(key, {}).items():
                bucket = into.setdefault(key, {})
                bucket[reason] = bucket.get(reason, 0) + n


def reset() -> None:
    """Zero every counter (a forked child starts its own count)."""
    global _lock
    _lock = threading.Lock()  # the parent's lock may have been held by another thread at fork
    for take in _pending.values():
        take()  # the parent's uncounted calls are not this process's
    _native.clear()
    for c in (*_fallback.values(), *_extra.values()):
        c.clear()


_fork.register(after_in_child=reset)
