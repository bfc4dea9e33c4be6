"""Shared pieces of the no_log tests: the two paths side by side, and a deep type-aware compare."""

from __future__ import annotations

import math
import typing as t

import pytest

from ansible_accel import _activation, _counters

CORE_MINOR = _activation.core_minor()
NATIVE_HERE = CORE_MINOR < (2, 22)
ONLY_WHERE_NATIVE = pytest.mark.skipif(
    not NATIVE_HERE, reason="ansible-core 2.22 deprecates these functions: every call goes to ansible-core"
)


class _Where:
    """Where in the structure a difference is: built cheaply, spelled out only on failure."""

    def __init__(self, parent: _Where | None, step: t.Any) -> None:
        self.parent, self.step = parent, step

    def __str__(self) -> str:
        steps, node = [], self
        while node is not None:
            steps.append(node.step if isinstance(node.step, str) and node.parent is None else f"[{node.step!r:.30}]")
            node = node.parent
        return "".join(reversed(steps))


def assert_identical(expected: t.Any, got: t.Any) -> None:
    """Equal values of the very same types all the way down (iterative: deep inputs are fine)."""
    stack: list[tuple[t.Any, t.Any, t.Any]] = [(expected, got, _Where(None, "$"))]
    while stack:
        a, b, where = stack.pop()
        assert type(a) is type(b), f"{where}: {type(a).__name__} != {type(b).__name__} ({a!r:.80} vs {b!r:.80})"
        if isinstance(a, dict):
            assert len(a) == len(b), f"{where}: {a!r:.200} != {b!r:.200}"
            for (ka, va), (kb, vb) in zip(a.items(), b.items()):
                stack.append((ka, kb, _Where(where, ".key")))
                stack.append((va, vb, _Where(where, ka)))
        elif isinstance(a, (list, tuple)):
            assert len(a) == len(b), f"{where}: {a!r:.200} != {b!r:.200}"
            stack.extend((x, y, _Where(where, i)) for i, (x, y) in enumerate(zip(a, b)))
        elif isinstance(a, (set, frozenset)):
            assert a == b, f"{where}: {a!r:.200} != {b!r:.200}"
            assert sorted(map(repr, map(type, a))) == sorted(map(repr, map(type, b))), where
        elif isinstance(a, float) and math.isnan(a):
            assert math.isnan(b), where
        else:
            assert a == b, f"{where}: {a!r:.200} != {b!r:.200}"


def outcome(fn: t.Callable, *args: t.Any) -> tuple:
    try:
        return ("returned", fn(*args))
    except Exception as ex:  # noqa: BLE001 - the exception itself is what is compared
        return ("raised", type(ex), str(ex))


def native_count() -> int:
    return _counters.snapshot()["no_log"]["native"]


def assert_same(reference: t.Callable, native: t.Callable, *args: t.Any, runs_native: bool = True) -> tuple:
    """Run both paths on the same arguments; the native one must run natively and agree.

    ``runs_native=False``: arguments ansible-core rejects before any scrubbing starts."""
    expected = outcome(reference, *args)
    before = native_count()
    got = outcome(native, *args)
    if NATIVE_HERE:
        assert native_count() == before + runs_native, "the native path did not run"
    assert expected[0] == got[0], f"reference {expected!r:.300}, native {got!r:.300}"
    if expected[0] == "raised":
        assert expected[1:] == got[1:]
    else:
        assert_identical(expected[1], got[1])
    return got
