"""A process-wide memo shared by the finder's caches: lock-free reads, locked writes, a size
bound (cleared whole when reached: entries are cheap to recompute), and a lock that a forked
child gets afresh (the parent's may have been held by another thread at the fork)."""

from __future__ import annotations

import threading
import typing as t
import weakref

from .. import _fork

K = t.TypeVar("K")
V = t.TypeVar("V")

_all: weakref.WeakSet = weakref.WeakSet()


class BoundedMemo(t.Generic[K, V]):
    def __init__(self, limit: int) -> None:
        self._entries: dict[K, V] = {}
        self._lock = threading.Lock()
        self._limit = limit
        _all.add(self)

    def get(self, key: K) -> V | None:
        return self._entries.get(key)

    def put(self, key: K, value: V) -> None:
        with self._lock:
            if len(self._entries) >= self._limit:
                self._entries.clear()
            self._entries[key] = value

    def drop(self, key: K) -> None:
        with self._lock:
            self._entries.pop(key, None)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)


def _after_fork_in_child() -> None:
    for memo in list(_all):
        memo._lock = threading.Lock()


_fork.register(after_in_child=_after_fork_in_child)
