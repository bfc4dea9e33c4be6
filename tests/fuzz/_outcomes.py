"""Outcomes of one call (value or exception) and a type-exact, iterative deep comparison."""

from __future__ import annotations

import math
import typing as t


def outcome(fn: t.Callable, *args: t.Any, **kwargs: t.Any) -> tuple:
    try:
        return ("returned", fn(*args, **kwargs))
    except Exception as ex:  # noqa: BLE001 - the exception itself is what is compared
        return ("raised", type(ex), str(ex))


def assert_identical(expected: t.Any, got: t.Any, *, identity_of: t.Any = None) -> None:
    """Equal values of the very same types all the way down; with ``identity_of`` (the input),
    a part is the input's very object in one result exactly when it is in the other."""
    stack = [(expected, got, "$")]
    while stack:
        a, b, where = stack.pop()
        assert type(a) is type(b), f"{where}: {type(a).__name__} != {type(b).__name__} ({a!r:.80} vs {b!r:.80})"
        if isinstance(a, dict):
            assert len(a) == len(b), f"{where}: {a!r:.200} != {b!r:.200}"
            for (ka, va), (kb, vb) in zip(a.items(), b.items()):
                stack.append((ka, kb, f"{where}.key"))
                stack.append((va, vb, f"{where}[{ka!r:.20}]"))
        elif isinstance(a, (list, tuple)):
            assert len(a) == len(b), f"{where}: {a!r:.200} != {b!r:.200}"
            stack.extend((x, y, f"{where}[{i}]") for i, (x, y) in enumerate(zip(a, b)))
        elif isinstance(a, (set, frozenset)):
            assert a == b, f"{where}: {a!r:.200} != {b!r:.200}"
            assert sorted(map(repr, map(type, a))) == sorted(map(repr, map(type, b))), where
        elif isinstance(a, float) and math.isnan(a):
            assert math.isnan(b), where
        else:
            assert a == b, f"{where}: {a!r:.200} != {b!r:.200}"
    if identity_of is not None:
        assert (expected is identity_of) == (got is identity_of), "unchanged input returned as itself in one path only"


def assert_same_outcome(expected: tuple, got: tuple, *, identity_of: t.Any = None) -> None:
    assert expected[0] == got[0], f"reference {expected!r:.300}, native {got!r:.300}"
    if expected[0] == "raised":
        assert expected[1:] == got[1:], f"reference {expected!r:.300}, native {got!r:.300}"
    else:
        assert_identical(expected[1], got[1], identity_of=identity_of)
