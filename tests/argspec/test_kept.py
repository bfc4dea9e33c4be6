"""Lists and dicts kept aside: the fast path gives the core only the type and length of a list
or dict given for an option whose checks never look inside it (type list, dict or raw;
elements str or dict; no sub-options, no_log or choices) and puts a copy of it in the result,
made as ansible-core's deep copy makes one.  Every case must give ansible-core's result, the
native path running where it is plain data and leaving the call to ansible-core where the
usual conversion would."""

from __future__ import annotations

import copy

import pytest

from _compare import ORIGINAL_VALIDATE, compare, native_count, observe
from ansible.module_utils.common import arg_spec
from ansible_accel import _native

SPEC = {
    "tags": {"type": "dict", "aliases": ["resource_tags"]},
    "groups": {"type": "list", "elements": "str"},
    "volumes": {"type": "list", "elements": "dict"},
    "blob": {"type": "raw"},
    "items": {"type": "list"},
    "flags": {"type": "list", "choices": ["a", "b"]},
    "secrets": {"type": "list", "no_log": True},
    "state": {"default": "present"},
    "nics": {
        "type": "list",
        "elements": "dict",
        "options": {
            "name": {},
            "extra": {"type": "dict"},
            "ips": {"type": "list", "elements": "str"},
            "primary": {"type": "bool", "default": False},
        },
    },
}
CHECKS = {
    "required_if": [["state", "present", ["tags"]], ["blob", "x", ["items"]]],
    "mutually_exclusive": [["items", "volumes"]],
    "required_by": {"groups": ["tags"]},
}

PLAIN = {
    "tags": {"env": "prod", "n": 1, "f": 1.5, "b": True, "z": None, "big": 10 ** 30},
    "groups": ["g1", "g2"],
    "volumes": [{"dev": "/dev/sda1", "ebs": {"size": "20", "type": "gp3", "ids": [1, 2]}}],
    "blob": [1, {"k": [2, 3], "e": {}}, "s"],
    "nics": [{"name": "eth0", "extra": {"mtu": 9000}, "ips": ["10.0.0.1"]}],
}

# How many of each case's values are kept aside (the rest are converted the usual way).
KEPT = {
    "plain data": 6,  # tags, groups, volumes, blob; nics[0]'s extra and ips
    "empty containers": 5,
    "raw given a dict": 2,
    "required_if against a kept list": 2,
    "required_if against a str": 1,
    "both mutually exclusive": 3,
    "under an alias": 1,  # an alias is not an option name: converted
    "under both names": 1,
    "lone surrogates inside": 2,
    "str elements that are not str": 1,
    "dict elements that are not dicts": 1,
    "wrong container type": 0,
    "str for list and dict": 0,
    "choices and no_log lists": 1,
    "sub-option dict and list": 3,
}

NATIVE_CASES = {
    "plain data": PLAIN,
    "empty containers": {"tags": {}, "groups": [], "volumes": [], "items": [], "blob": {}},
    "raw given a dict": {"tags": {"a": "b"}, "blob": {"x": ["y", {"z": 1}]}},
    "required_if against a kept list": {"tags": {"a": "b"}, "blob": ["x"]},
    "required_if against a str": {"tags": {"a": "b"}, "blob": "x"},
    "both mutually exclusive": {"tags": {}, "items": [1], "volumes": [{}]},
    "under an alias": {"resource_tags": {"a": "b", "c": ["d"]}, "groups": ["g"]},
    "under both names": {"resource_tags": {"a": "b"}, "tags": {"c": "d"}},
    "lone surrogates inside": {"tags": {"k": "\udcff", "\udc80": "v"}, "groups": ["\udcfe"]},
    "str elements that are not str": {"tags": {}, "groups": ["a", 1, 2.5, True]},
    "dict elements that are not dicts": {"tags": {}, "volumes": [{"a": 1}, "k=v"]},
    "wrong container type": {"tags": ["not", "a", "dict"], "items": {"a": 1}},
    "str for list and dict": {"tags": "a=b", "groups": "x,y", "items": "p,q"},
    "choices and no_log lists": {"tags": {}, "flags": ["a", "c"], "secrets": ["pw1", "pw2"]},
    "sub-option dict and list": {"tags": {}, "nics": [{"name": "a", "extra": {"x": [1]}, "ips": []}]},
}


@pytest.mark.parametrize("case", list(NATIVE_CASES))
def test_kept_containers_match_pure_python(case):
    before = _native.argspec_kept_count()
    assert compare(SPEC, NATIVE_CASES[case], CHECKS, expect_native=True)
    assert _native.argspec_kept_count() - before == KEPT[case]


def _nested(depth):
    value: list = []
    for _ in range(depth):
        value = [value]
    return value


SHARED_LIST = [1, 2]
SHARED_NIC = {"name": "eth0"}

LEFT_TO_ANSIBLE_CORE = {
    # Sub-option validation adds defaults to the dict in place: ansible-core's deep copy keeps
    # it shared, so the raw option shows them too.
    "a sub-option dict also given as raw": {"tags": {}, "nics": [SHARED_NIC], "blob": SHARED_NIC},
    "a list twice in one value": {"tags": {}, "blob": [SHARED_LIST, SHARED_LIST]},
    "nested too deeply": {"tags": {}, "blob": _nested(80)},
    "a set inside": {"tags": {"s": {1, 2}}},
    "a tuple inside": {"tags": {}, "items": [(1, 2)]},
    "an int key": {"tags": {1: "one"}},
}


@pytest.mark.parametrize("params", list(LEFT_TO_ANSIBLE_CORE.values()), ids=list(LEFT_TO_ANSIBLE_CORE))
def test_what_is_not_plain_data_is_left_to_ansible_core(params):
    assert compare(SPEC, params, CHECKS, expect_native=False) is False


def _objects(value, given):
    """Per container in the result: whether it is the given object; per scalar: whether it is
    the given object (recursively, by position)."""
    if isinstance(value, dict):
        given_items = given if isinstance(given, dict) else {}
        return ("dict", value is given, [(k, _objects(v, given_items.get(k))) for k, v in value.items()])
    if isinstance(value, list):
        given_items = given if isinstance(given, list) else []
        return ("list", value is given,
                [_objects(v, given_items[i] if i < len(given_items) else None) for i, v in enumerate(value)])
    return (type(value).__name__, value is given)


def test_kept_copies_hold_the_objects_ansible_core_holds_call_after_call():
    """New lists and dicts holding the given str, int and float objects, as ansible-core's deep
    copy makes them; one validator used again and again (kept templates in play)."""
    validator = arg_spec.ArgumentSpecValidator(copy.deepcopy(SPEC), **copy.deepcopy(CHECKS))
    pure = arg_spec.ArgumentSpecValidator(copy.deepcopy(SPEC), **copy.deepcopy(CHECKS))
    for params in [PLAIN, NATIVE_CASES["under an alias"], PLAIN, NATIVE_CASES["empty containers"], PLAIN]:
        params = copy.deepcopy(params)
        before = native_count()
        native = validator.validate(params)
        assert native_count() == before + 1
        expected = ORIGINAL_VALIDATE(pure, params)
        assert observe(native) == observe(expected)
        got_objects = {k: _objects(v, params.get(k)) for k, v in native.validated_parameters.items()}
        want_objects = {k: _objects(v, params.get(k)) for k, v in expected.validated_parameters.items()}
        assert got_objects == want_objects
        # The result's containers are its own: changing them leaves the caller's as given.
        snapshot = copy.deepcopy(params)
        for value in native.validated_parameters.values():
            if isinstance(value, dict):
                value["added"] = 1
            elif isinstance(value, list):
                value.append(1)
        assert params == snapshot
