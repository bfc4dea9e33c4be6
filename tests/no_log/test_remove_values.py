"""remove_values: hand-written edge cases against the installed ansible-core."""

from __future__ import annotations

import collections
import datetime
import sys

import pytest
from ansible.module_utils.common import parameters

from ansible_accel import no_log

from .conftest import ONLY_WHERE_NATIVE, assert_identical, assert_same

pytestmark = ONLY_WHERE_NATIVE


class MyList(list):
    pass


class MyDict(dict):
    pass


class MyStr(str):
    pass


class MyInt(int):
    def __str__(self):
        return "custom-" + int.__str__(self)


class Unknown:
    def __repr__(self):
        return "<Unknown>"


CASES = [
    ("plain", "a secret here", ["secret"]),
    ("exact", "secret", ["secret"]),
    ("exact empty", "", [""]),
    ("empty value", "ab", [""]),
    ("empty twice", "ab", ["", ""]),
    ("empty and others", "x pw y", ["pw", "", "y"]),
    ("longer first", "abcd", ["ab", "bcd"]),
    ("contained", "secretive secret", ["secret", "secretive", "cret"]),
    ("overlapping", "aaaaaaa", ["aa", "aaa"]),
    ("stars", "a*b**c", ["*", "**", "b*"]),
    ("stars made by masks", "pw*pw", ["pw", "***"]),
    ("same length keeps given order", "abc", ["ab", "bc"]),
    ("same length other order", "abc", ["bc", "ab"]),
    ("surrogates", "x\ud83d\ude00y\U0001F600", ["\ud83d", "\U0001F600"]),
    ("astral and wide", "中文\U0001F600é", ["文\U0001F600", "é"]),
    ("number values", ["1234", 1234, 12.5, "x12.5x"], [1234, 12.5]),
    ("number contains value", [12345, 3.14159, -7], ["234", "415", "-"]),
    ("bool and None values", ["True", "None", True, None, False], [True, None]),
    ("bytes", [b"a secret", b"secret", b"\xff\xfesecret\xff"], ["secret"]),
    ("bytes with surrogateescape", [b"\xffpw\xfe"], ["\udcffpw"]),
    ("bytes no_log value", "a secret", [b"secret"]),
    ("nested", {"a": [{"b": ("secret", {"secret": 1})}], "c": {"x", "secret"}}, ["secret"]),
    ("tuple and frozenset", (1, frozenset({"a", "pw"}), "pw"), ["pw"]),
    ("keys untouched", {"pw": "pw", 1: 2, (1, 2): "x"}, ["pw", "1"]),
    ("subclasses", [MyList(["pw"]), MyDict(pw="pw"), collections.OrderedDict(a="pw")], ["pw"]),
    ("str subclass", [MyStr("a pw"), MyStr("pw"), MyStr("nothing")], ["pw"]),
    ("int subclass", [MyInt(5), MyInt(6)], ["custom-5"]),
    ("dates", [datetime.date(2020, 1, 1), datetime.datetime(2020, 1, 1, 1, 1), datetime.time(1, 2)], ["2020"]),
    ("nothing to do", {"a": ["b", 1, None]}, []),
    ("no_log as a string", "abc", "ab"),
    ("no_log as a generator", "a pw", (x for x in ["pw"])),
    ("float specials", [float("inf"), float("nan"), -0.0], ["inf", "nan"]),
    ("floats and other values", [1.5, 1e100, -0.0, 2.5e-07, float("inf")], ["secret", "1x", "e-0x"]),
    ("floats and float-like values", [1.5, 1e100, -0.0, 2.5e-07, float("inf")], ["e+1", "e-07", "-0", "nf"]),
    ("float subclass", [type("F", (float,), {"__str__": lambda self: "pw"})(1.0)], ["pw"]),
    ("unknown type", [1, Unknown()], ["x"]),
    ("unknown inside set", {"a", 1, Unknown()}, ["x"]),
    ("tuple in set", {("a", "b")}, ["x"]),
    ("frozenset in set", {frozenset({"a"})}, ["x"]),
    ("dict values view", {"a": {}.values()}, ["x"]),
    ("range", range(3), ["1"]),
    ("huge int", 10**5000, ["1"]),
    ("no_log None", "x", None),
]


@pytest.mark.parametrize(("value", "no_log_strings"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_remove_values_case(value, no_log_strings):
    if hasattr(no_log_strings, "__next__"):
        values = list(no_log_strings)  # a fresh one-shot iterator for each path
        assert_same(
            lambda v: parameters.remove_values(v, iter(values)), lambda v: no_log.remove_values(v, iter(values)), value
        )
        return
    runs_native = no_log_strings is not None
    assert_same(parameters.remove_values, no_log.remove_values, value, no_log_strings, runs_native=runs_native)


def test_unchanged_string_is_the_same_object():
    text = "nothing to hide"
    assert no_log.remove_values(text, ["pw"]) is text


def test_tagged_values_keep_their_tags():
    from ansible.module_utils._internal._datatag import AnsibleTagHelper
    from ansible.module_utils._internal._datatag._tags import Deprecated

    tag = Deprecated(msg="old")
    value = AnsibleTagHelper.tag({"k": AnsibleTagHelper.tag("a pw", tag), "l": AnsibleTagHelper.tag(["pw"], tag)}, tag)
    got = assert_same(parameters.remove_values, no_log.remove_values, value, ["pw"])[1]
    assert AnsibleTagHelper.tags(got) == {tag}
    assert AnsibleTagHelper.tags(got["k"]) == {tag}
    assert AnsibleTagHelper.tags(got["l"]) == {tag}


def test_deep_structure_needs_no_recursion():
    depth = max(sys.getrecursionlimit() * 20, 50_000)
    value: list = ["pw"]
    for _ in range(depth):
        value = [value, "a pw"]
    assert_same(parameters.remove_values, no_log.remove_values, value, ["pw"])


def test_wide_structure():
    value = {f"k{i}": [f"v{i} pw", i, {"n": f"pw{i}"}] for i in range(20_000)}
    assert_same(parameters.remove_values, no_log.remove_values, value, ["pw", "1"])


def test_cycle_that_reaches_a_bad_value_raises_the_same_error():
    loop: dict = {"x": [Unknown()]}
    loop["self"] = loop
    loop["later"] = [loop]
    assert_same(parameters.remove_values, no_log.remove_values, loop, ["pw"])


def test_custom_mapping_and_sequence_go_through_their_own_methods():
    class Pairs(collections.abc.Mapping):
        def __init__(self, data):
            self.data = data

        def __getitem__(self, key):
            return self.data[key]

        def __iter__(self):
            return iter(self.data)

        def __len__(self):
            return len(self.data)

    class Seq(collections.abc.Sequence):
        def __getitem__(self, i):
            return ["a pw", 1, ("pw",)][i]

        def __len__(self):
            return 3

    value = [Pairs({"a": "pw", "b": Seq()}), Seq()]
    assert_same(parameters.remove_values, no_log.remove_values, value, ["pw"])


def test_result_of_a_module_run():
    result = {
        "changed": True,
        "stdout": "line with hunter2\n" * 100,
        "stdout_lines": ["line with hunter2"] * 100,
        "invocation": {"module_args": {"password": "hunter2", "user": "bob", "port": 2222}},
    }
    assert_same(parameters.remove_values, no_log.remove_values, result, {"hunter2", "222"})


def test_identical_helper_notices_type_differences():
    with pytest.raises(AssertionError):
        assert_identical(["a"], ("a",))
    with pytest.raises(AssertionError):
        assert_identical({"a": 1}, {"a": True})
