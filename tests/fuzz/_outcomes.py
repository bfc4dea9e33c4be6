"""Outcomes of one call (value or exception), a type-exact iterative deep comparison, and
zipfile's own archive as the payload reference: shared by the fuzz, no_log and hardening tests
(the last two import this file by path: ``tests`` is not a package)."""

from __future__ import annotations

import io
import math
import typing as t
import zipfile


def outcome(fn: t.Callable, *args: t.Any, **kwargs: t.Any) -> tuple:
    try:
        return ("returned", fn(*args, **kwargs))
    except Exception as ex:  # noqa: BLE001 - the exception itself is what is compared
        return ("raised", type(ex), str(ex))


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


def assert_identical(expected: t.Any, got: t.Any, *, identity_of: t.Any = None) -> None:
    """Equal values of the very same types all the way down (iterative: deep inputs are fine);
    with ``identity_of`` (the input), the result is the input's very object in one path exactly
    when it is in the other."""
    stack: list[tuple[t.Any, t.Any, _Where]] = [(expected, got, _Where(None, "$"))]
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
    if identity_of is not None:
        assert (expected is identity_of) == (got is identity_of), "unchanged input returned as itself in one path only"


def assert_same_outcome(expected: tuple, got: tuple, *, identity_of: t.Any = None) -> None:
    assert expected[0] == got[0], f"reference {expected!r:.300}, native {got!r:.300}"
    if expected[0] == "raised":
        assert expected[1:] == got[1:], f"reference {expected!r:.300}, native {got!r:.300}"
    else:
        assert_identical(expected[1], got[1], identity_of=identity_of)


def zipfile_reference(entries: t.Iterable[tuple[str, t.Any]], date_time: t.Sequence[int], compression: int) -> bytes:
    """The archive ``zipfile`` writes for these entries: what ``payload.build_zip`` must match."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression) as archive:
        for name, data in entries:
            info = zipfile.ZipInfo(filename=name, date_time=tuple(date_time))
            info.compress_type = compression
            archive.writestr(info, data)
    return buffer.getvalue()
