"""Shared pieces of the no_log tests: the two paths side by side, compared with the fuzz
tests' outcome and deep type-aware comparison (tests/fuzz/_outcomes.py)."""

from __future__ import annotations

import pathlib
import sys
import typing as t

import pytest

from ansible_accel import _activation, _counters

sys.path.insert(0, str(pathlib.Path(__file__).parents[1] / "fuzz"))
try:
    from _outcomes import assert_identical, assert_same_outcome, outcome  # noqa: F401 (assert_identical: for the tests)
finally:
    sys.path.pop(0)

CORE_MINOR = _activation.core_minor()
NATIVE_HERE = CORE_MINOR < (2, 22)
ONLY_WHERE_NATIVE = pytest.mark.skipif(
    not NATIVE_HERE, reason="ansible-core 2.22 deprecates these functions: every call goes to ansible-core"
)


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
    assert_same_outcome(expected, got)
    return got
