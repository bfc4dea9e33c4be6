"""The ``finder`` path: not implemented yet."""

from __future__ import annotations

from .._activation import Patch, Unavailable


def plan() -> list[Patch]:
    raise Unavailable("no native engine for this path in this release")
