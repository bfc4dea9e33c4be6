"""sanitize_keys: hand-written edge cases against the installed ansible-core."""

from __future__ import annotations

import collections
import datetime

import pytest
from ansible.module_utils.common import parameters

from ansible_accel import no_log

from .conftest import ONLY_WHERE_NATIVE, assert_same

pytestmark = ONLY_WHERE_NATIVE


class MyDict(dict):
    pass


class NeedsArgs(list):
    def __init__(self, required):
        super().__init__(required)


class MyStr(str):
    pass


CASES = [
    ("keys scrubbed", {"a pw key": 1, "pw": "pw", "x": {"pw2": "v"}}, ["pw"], frozenset()),
    ("ignore keys", {"pw": 1, "pwx": 2}, ["pw"], frozenset({"pwx"})),
    ("ignore keys as list", {"pw": 1, "pwx": 2}, ["pw"], ["pw"]),
    ("private keys", {"_ansible_pw": 1, "_ansiblepw": 2, "pw_ansible": 3}, ["pw"], frozenset()),
    ("colliding keys", {"a pw": 1, "a qq": 2, "a ********": 3}, ["pw", "qq"], frozenset()),
    ("values untouched", {"k": ["pw", b"pw", 1, 2.0, None, True, ("pw",), {"pw"}]}, ["pw"], frozenset()),
    ("int key", {1: "a"}, ["1"], frozenset()),
    ("int key ignored", {1: "a", "1x": 2}, ["1"], frozenset({1})),
    ("bytes key", {b"pw": 1}, ["pw"], frozenset()),
    ("tuple key", {("pw",): 1}, ["pw"], frozenset()),
    ("str subclass key", {MyStr("a pw"): 1}, ["pw"], frozenset()),
    ("surrogate keys", {"\ud800pw\U0001F600": 1}, ["\ud800", "\U0001F600"], frozenset()),
    ("empty value", {"ab": 1}, [""], frozenset()),
    ("subclasses keep their type", [MyDict(pw=1), collections.OrderedDict(pw=2), collections.defaultdict(list, pw=3)], ["pw"], frozenset()),
    ("constructor needs args", [NeedsArgs([1])], ["pw"], frozenset()),
    ("tuples become lists", ({"pw": (1, 2)}, frozenset({"a"})), ["pw"], frozenset()),
    ("frozenset in set", {frozenset({"a"})}, ["pw"], frozenset()),
    ("dates", {"d": datetime.date(2020, 1, 1)}, ["pw"], frozenset()),
    ("unknown type", {"pw": object.__new__(type("Unknown", (), {"__repr__": lambda self: "<U>"}))}, ["pw"], frozenset()),
    ("not a container", "a pw", ["pw"], frozenset()),
    ("number values", {"12": 12}, [12], frozenset()),
]


@pytest.mark.parametrize(("obj", "no_log_strings", "ignore_keys"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_sanitize_keys_case(obj, no_log_strings, ignore_keys):
    assert_same(parameters.sanitize_keys, no_log.sanitize_keys, obj, no_log_strings, ignore_keys)


def test_default_ignore_keys():
    assert_same(parameters.sanitize_keys, no_log.sanitize_keys, {"pw": {"_ansible_x": "pw"}}, {"pw"})


def test_deep_and_wide():
    value: dict = {"pw": 1}
    for i in range(30_000):
        value = {f"k{i} pw": value, f"pw{i}": [i]}
    assert_same(parameters.sanitize_keys, no_log.sanitize_keys, value, ["pw"])


def test_uri_style_response():
    response = {"set-cookie": "a=pw", "location": "http://x/pw", "pw_header": "v", "content": "pw"}
    ignore = frozenset(["msg", "exception", "location", "content"])
    assert_same(parameters.sanitize_keys, no_log.sanitize_keys, response, {"pw"}, ignore)
