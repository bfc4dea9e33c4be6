"""``remove_values``, ``sanitize_keys`` and ``heuristic_log_sanitize`` against the installed
ansible-core's own (2.19, 2.21) on generated structures: non-str keys, bytes, numbers, sets,
tuples, subclasses, lone surrogates, invalid UTF-8, odd no_log values."""

from __future__ import annotations

import datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_accel import _activation, _counters, no_log

from .conftest import CASES, fuzz_settings
from ._outcomes import assert_same_outcome, outcome

pytestmark = pytest.mark.skipif(
    _activation.core_minor() >= (2, 22), reason="ansible-core 2.22 deprecates these functions: every call goes to ansible-core"
)

CHARS = ["a", "b", "*", "@", ":", "/", " ", "=", "é", "中", "\U0001f600", "\ud83d", "\udc80", "1", "\n"]
texts = st.lists(st.sampled_from(CHARS), max_size=20).map("".join)
short = st.lists(st.sampled_from(CHARS), min_size=0, max_size=4).map("".join)


class Text(str):
    pass


class Items(list):
    pass


class Mapping(dict):
    pass


def _scalars(values):
    return st.one_of(
        texts, values, st.binary(max_size=5), values.map(lambda v: v.encode("utf-8", "surrogateescape") if "\ud83d" not in v else b"\xff" + b"a"),
        st.integers(-3, 300), st.floats(), st.booleans(), st.none(), values.map(Text),
        st.just(datetime.date(2024, 1, 2)), st.just(datetime.datetime(2024, 1, 2, 3, 4, 5)),
    )


def _structures(values):
    keys = st.one_of(texts, values, st.integers(0, 5), st.none(), st.booleans(), st.binary(max_size=3), st.tuples(texts), st.floats(allow_nan=False))
    return st.recursive(
        _scalars(values),
        lambda inner: st.one_of(
            st.lists(inner, max_size=4), st.tuples(inner, inner), st.lists(inner, max_size=3).map(Items),
            st.dictionaries(keys, inner, max_size=4), st.dictionaries(texts, inner, max_size=3).map(Mapping),
            st.frozensets(st.one_of(texts, st.integers(0, 5)), max_size=3), st.sets(values, max_size=3),
        ),
        max_leaves=12,
    )


SHORTS = st.sampled_from(["a", "ab", "b*", "@", "é", "\ud83d", "1", ":/", "a b", "中\U0001f600"])
STRUCTURES = _structures(st.one_of(SHORTS, short))


@st.composite
def case(draw):
    values = draw(st.lists(st.one_of(SHORTS, short, texts.map(lambda t: t[:6])), max_size=5))
    if draw(st.integers(0, 9)) == 0:
        values.append(draw(st.sampled_from([12, 1.5, True, None, b"ab", b"\xff", Text("ab")])))
    return draw(STRUCTURES), values


def _native() -> int:
    return _counters.snapshot()["no_log"]["native"]


def _compare(reference, native, *args):
    expected = outcome(reference, *args)
    before = _native()
    got = outcome(native, *args)
    assert_same_outcome(expected, got)
    return _native() - before


@fuzz_settings(share=0.5)
@given(case())
def test_remove_values_like_core(generated):
    from ansible.module_utils.common import parameters

    CASES["no_log"] += 1
    value, values = generated
    _compare(parameters.remove_values, no_log.remove_values, value, values)


@fuzz_settings(share=0.3)
@given(case(), st.frozensets(st.one_of(short, st.integers(0, 3)), max_size=3))
def test_sanitize_keys_like_core(generated, ignore):
    from ansible.module_utils.common import parameters

    CASES["no_log"] += 1
    value, values = generated
    _compare(parameters.sanitize_keys, no_log.sanitize_keys, value, values, ignore)


urlish = st.lists(st.sampled_from(["http", "://", "user", ":", "pass", "@", "host", "/", " ", "a", "é", "\ud83d", "@@", "::", "\n"]), max_size=25).map("".join)


@fuzz_settings(share=0.2)
@given(st.one_of(urlish, texts), st.one_of(st.none(), st.just(set()), st.sets(short, max_size=3)))
def test_heuristic_log_sanitize_like_core(data, values):
    from ansible.module_utils import basic

    CASES["no_log"] += 1
    _compare(basic.heuristic_log_sanitize, no_log.heuristic_log_sanitize, data, values)
