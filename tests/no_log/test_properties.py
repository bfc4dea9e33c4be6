"""Property tests: generated strings, values and structures through both paths."""

from __future__ import annotations

import collections

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ansible.module_utils import basic
from ansible.module_utils.common import parameters

from ansible_accel import _native, no_log

from .conftest import ONLY_WHERE_NATIVE, assert_same

pytestmark = ONLY_WHERE_NATIVE

# Few distinct characters, so values overlap, contain one another and recur in the texts.
CHARS = ["a", "b", "*", "@", ":", "/", " ", "é", "中", "\U0001F600", "\ud83d", "\ude00", "\udc80", "1"]
texts = st.lists(st.sampled_from(CHARS), max_size=24).map("".join)
short_texts = st.lists(st.sampled_from(CHARS), max_size=4).map("".join)
SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


class MyList(list):
    pass


class MyDict(dict):
    pass


def _no_log_values(draw, text: str) -> list:
    values = []
    for _ in range(draw(st.integers(0, 6))):
        if text and draw(st.booleans()):
            start = draw(st.integers(0, len(text) - 1))
            values.append(text[start : start + draw(st.integers(0, 5))])
        else:
            values.append(draw(short_texts))
    if draw(st.integers(0, 9)) == 0:
        values.append(draw(st.sampled_from([12, 1.5, True, None, b"ab", b"\xff"])))
    # Both paths replace each value in turn, and each empty one makes a text about nine times
    # longer: past two, one case can take minutes and gigabytes in either path.
    empty = [i for i, v in enumerate(values) if v == ""]
    return [v for i, v in enumerate(values) if i not in empty[2:]]


@st.composite
def text_and_values(draw):
    text = draw(texts)
    return text, _no_log_values(draw, text)


@SETTINGS
@given(text_and_values())
def test_strings(case):
    text, values = case
    assert_same(parameters.remove_values, no_log.remove_values, text, values)


@SETTINGS
@given(text_and_values())
def test_engine_reproduces_the_replace_chain(case):
    text, values = case
    ordered = sorted((v for v in values if isinstance(v, str)), key=len, reverse=True)
    expected = text
    for value in ordered:
        expected = expected.replace(value, "********")
    assert _native.no_log_matcher(ordered).replace_all(text) == expected


scalars = st.one_of(
    texts,
    texts.map(lambda s: s.encode("utf-8", "surrogateescape") if "\ud83d" not in s and "\ude00" not in s else b"x"),
    st.binary(max_size=6),
    st.integers(-(10**6), 10**6),
    st.floats(allow_nan=False),
    st.booleans(),
    st.none(),
)
hashables = st.one_of(texts, st.integers(-100, 100), st.booleans(), st.none())


def _containers(children):
    return st.one_of(
        st.lists(children, max_size=4),
        st.lists(children, max_size=4).map(tuple),
        st.lists(children, max_size=3).map(MyList),
        st.dictionaries(hashables, children, max_size=4),
        st.dictionaries(texts, children, max_size=3).map(MyDict),
        st.dictionaries(texts, children, max_size=3).map(collections.OrderedDict),
        st.sets(hashables, max_size=4),
        st.frozensets(hashables, max_size=4),
    )


structures = st.recursive(scalars, _containers, max_leaves=30)


@st.composite
def structure_and_values(draw):
    value = draw(structures)
    sample = draw(texts)
    return value, _no_log_values(draw, sample) + draw(st.lists(short_texts, max_size=3))


@SETTINGS
@given(structure_and_values())
def test_structures(case):
    value, values = case
    assert_same(parameters.remove_values, no_log.remove_values, value, values)


@SETTINGS
@given(structure_and_values(), st.lists(texts, max_size=3))
def test_sanitize_keys(case, ignore):
    value, values = case
    assert_same(parameters.sanitize_keys, no_log.sanitize_keys, value, values, frozenset(ignore))


@SETTINGS
@given(text_and_values(), st.booleans())
def test_heuristic(case, with_values):
    text, values = case
    assert_same(basic.heuristic_log_sanitize, no_log.heuristic_log_sanitize, text, values if with_values else None)
