"""Hand-written cases: each goes through ansible-core's pure validate and the native one,
every field of the results compared, and whether native ran is checked."""

from __future__ import annotations

import pytest

from _compare import compare

def _boom_on_call(value):
    raise RuntimeError("type failed")


def _boom():
    raise RuntimeError("fallback failed")


BASIC = {
    "name": {"type": "str", "required": True, "aliases": ["n", "nm"]},
    "count": {"type": "int", "default": 3},
    "enabled": {"type": "bool", "default": False},
    "ratio": {"type": "float"},
    "tags": {"type": "list", "elements": "str"},
    "ports": {"type": "list", "elements": "int", "choices": [22, 80, 443]},
    "env": {"type": "dict"},
    "dest": {"type": "path"},
    "blob": {"type": "raw"},
    "state": {"choices": ["present", "absent", "yes", "no"], "default": "present"},
    "secret": {"no_log": True, "default": "hunter2"},
    "token": {"no_log": True, "type": "list"},
}

NATIVE_CASES = [
    {"name": "a"},
    {"n": "a"},
    {"name": "a", "nm": "b"},
    {"n": "a", "nm": "b", "unknown": 1, "other": None},
    {},
    {"name": 5, "count": "42", "enabled": "Yes", "ratio": "1.5"},
    {"name": True, "count": 7.0, "enabled": 1, "ratio": 2},
    {"name": None, "count": None, "enabled": None, "ratio": None},
    {"name": "a", "enabled": 2, "tags": "a,b,,c", "ports": "22,80"},
    {"name": "a", "env": "a=1, b='x y' c=\"q\\\"r\""},
    {"name": "a", "env": "a=1, b"},
    {"name": "a", "env": "plain"},
    {"name": "a", "env": 5},
    {"name": "a", "dest": "/tmp/x", "blob": {"x": [1, 2.5, None]}},
    {"name": "a", "state": "False"},
    {"name": "a", "state": "True"},
    {"name": "a", "state": "other"},
    {"name": "a", "state": 5},
    {"name": "a", "secret": "s3", "token": ["t1", "", 12, True]},
    {"name": "a", "token": "x,y"},
]


@pytest.mark.parametrize("params", NATIVE_CASES)
def test_basic_spec_native(params):
    compare(BASIC, params, expect_native=True)


# Same result whichever path answers (some values need ansible-core's own conversion).
ANY_PATH_CASES = [
    {"name": "a", "count": [1], "enabled": "maybe", "ratio": [1]},
    {"name": "a", "tags": 5, "ports": ["22", "x", 443, 8080]},
    {"name": "a", "tags": 5, "ports": ["22", 443, 8080, 80.0]},
    {"name": "a", "tags": {"k": "v"}, "ports": True},
    {"name": "a", "enabled": 1.5, "ratio": " 2 "},
    {"name": "a", "enabled": "\u00a0yes", "count": "1e3"},
    {"name": "a", "env": "{1: 2}"},
]


@pytest.mark.parametrize("params", ANY_PATH_CASES)
def test_basic_spec_any_path(params):
    compare(BASIC, params)


CHECKS = {
    "mutually_exclusive": [["a", "b"], ["c", "d"], ["a", "a"]],
    "required_together": [["c", "e"]],
    "required_one_of": [["a", "b", "e"]],
    "required_if": [["a", "x", ["c", "d"]], ["a", 1, ("d", "e"), True], ["b", True, ["e"]], ["b", None, ["c"]]],
    "required_by": {"c": "d", "e": ["a", "b"]},
}
CHECK_SPEC = {k: {"type": "raw"} for k in "abcde"}


@pytest.mark.parametrize(
    "params",
    [{}, {"a": "x"}, {"a": "x", "b": 1}, {"a": 1}, {"a": True, "d": 1}, {"b": 1}, {"b": True}, {"b": None},
     {"c": 1, "d": None}, {"e": 1, "a": None}, {"a": 1.0, "e": 2}, {"c": 1, "d": 2, "a": "x", "b": "y"}],
)
def test_cross_option_checks_native(params):
    compare(CHECK_SPEC, params, CHECKS, expect_native=True)


@pytest.mark.parametrize(
    "spec,params,checks,reason",
    [
        ({"a": {"type": "dict", "options": {"b": {"fallback": None}}}}, {"a": {}}, {}, "value: fallback raised"),
        ({"a": {"type": "dict", "options": {"b": {"default": (1, 2)}}}}, {"a": {}}, {}, "spec: value that is not plain data"),
        ({"a": {"type": "raw", "default": (1, "x")}}, {}, {}, "spec: value that is not plain data"),
        ({"a": {"removed_in_version": (2, 30)}}, {"a": 1}, {}, "spec: value that is not plain data"),
        ({"a": {"type": "str", "options": {"b": {}}}}, {"a": "x"}, {}, "spec: options on an option that is not a dict"),
        ({"a": {"type": "dict", "options": {"b": {}}}}, {"a": "b=1"}, {}, "value: sub-option value that is not a dict"),
        ({"a": {"type": "list", "elements": "dict", "options": {"b": {}}}}, {"a": [{"b": 1}, 5]}, {}, "value: sub-option value that is not a dict"),
        ({"a": {"type": lambda v: (v,)}}, {"a": 1}, {}, "value: checker result not plain data"),
        ({"a": {"type": _boom_on_call}}, {"a": 1}, {}, "value: checker raised another exception"),
        ({"a": {"fallback": (lambda: (1, 2),)}}, {}, {}, "value: not plain builtin data"),
        ({"a": {"fallback": None}}, {}, {}, "value: fallback raised"),
        ({"a": {"fallback": (_boom,)}}, {}, {}, "value: fallback raised"),
        ({"a": {"removed_at_date": __import__("datetime").date(2030, 1, 1)}}, {"a": 1}, {}, "spec: value that is not plain data"),
        ({"a": {"deprecated_aliases": [{"version": "2.30"}]}}, {"a": 1}, {}, "spec: deprecated_aliases not a list of dicts with a str name"),
        ({"a": {"required": True, "default": 1}}, {}, {}, "spec: required with default"),
        ({"a": {"aliases": "b"}}, {}, {}, "spec: aliases not a list of str"),
        ({"a": {"choices": 5}}, {"a": 1}, {}, "spec: choices not a list"),
        ({"a": {"type": "int"}}, {"a": 2**70}, {}, "value: int beyond 64 bits"),
        ({"a": {"type": "int"}}, {"a": "1" * 30}, {}, "value: checker result not plain data"),
        ({"a": {"type": "float"}}, {"a": 1.5}, {"required_if": [["a", 1.5, ["b"]]]}, "spec: required_if entry not [str, value, [str...], bool?]"),
        ({"a": {"type": "raw"}}, {"a": (1, 2)}, {}, "value: not plain builtin data"),
        ({"a": {}}, {1: "x"}, {}, "value: dict key that is not a str"),
        ({"a": {}}, {"a": "x"}, {"mutually_exclusive": ["a", "b"]}, "spec: check terms not a list of lists of str"),
    ],
)
def test_unhandled_falls_back_counted(spec, params, checks, reason):
    from ansible_accel import _counters

    before = _counters.snapshot()["argspec"]["fallback"].get(reason, 0)
    assert compare(spec, params, checks) is False
    assert _counters.snapshot()["argspec"]["fallback"].get(reason, 0) == before + 1


def test_compiled_once_per_validator():
    from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

    from ansible_accel import argspec

    validator = ArgumentSpecValidator({"a": {"type": "int"}})
    first = argspec._compile_spec(validator)
    assert argspec._compile_spec(validator) is first
    validator.argument_spec = {"a": {"type": "str"}}
    assert argspec._compile_spec(validator) is not first
    assert validator.validate({"a": 1}).validated_parameters == {"a": "1"}


def _fallback_spec():
    from ansible.module_utils.basic import env_fallback

    return {
        "user": {"fallback": (env_fallback, ["ACCEL_TEST_USER", "ACCEL_TEST_USER2"]), "required": True},
        "password": {"no_log": True, "fallback": (env_fallback, ["ACCEL_TEST_PW"])},
        "port": {"type": "int", "fallback": (lambda *a, **kw: "8080", [], {"unused": 1})},
        "region": {"fallback": (env_fallback,)},
    }


@pytest.mark.parametrize(
    "env,params",
    [
        ({}, {}),
        ({"ACCEL_TEST_USER2": "bob"}, {}),
        ({"ACCEL_TEST_USER": "al", "ACCEL_TEST_PW": "s3cret"}, {"port": 1}),
        ({"ACCEL_TEST_PW": "s3cret"}, {"user": "u", "password": "given"}),
    ],
)
def test_fallbacks_native(monkeypatch, env, params):
    for name in ("ACCEL_TEST_USER", "ACCEL_TEST_USER2", "ACCEL_TEST_PW"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    compare(_fallback_spec(), params, expect_native=True)


DEPRECATING = {
    "old": {"removed_in_version": "3.0", "removed_from_collection": "ns.col"},
    "older": {"removed_at_date": "2030-01-01", "removed_in_version": "9.9"},
    "path": {"aliases": ["dest", "src", "flamethrower"],
             "deprecated_aliases": [{"name": "flamethrower", "date": "2020-03-04"}, {"name": "src", "version": "2.30", "collection_name": "x.y"}]},
    "gone": {"deprecated_aliases": [{"name": "elsewhere"}]},
}


@pytest.mark.parametrize(
    "params",
    [{}, {"old": 1, "older": 2}, {"flamethrower": "/t", "src": "/s"}, {"path": "/p", "flamethrower": "/t"}, {"elsewhere": 1, "old": None}],
)
def test_deprecations_native(params):
    compare(DEPRECATING, params, expect_native=True)


@pytest.mark.parametrize(
    "kind,value",
    [
        ("int", " 5"), ("int", "1e3"), ("int", "1_000"), ("int", "1.5"), ("int", "NaN"), ("int", 2.5), ("int", [1]), ("int", {}),
        ("float", " 2 "), ("float", "inf"), ("float", "nan"), ("float", "1_0.5"), ("float", "x"), ("float", [1]),
        ("str", 1.5), ("str", [1, "a"]), ("str", {"k": [None]}), ("str", 1e16),
        ("bool", "\u00a0yes"), ("bool", 0.5), ("bool", "maybe\u00e9"), ("bool", 1.0),
        ("dict", '{"x": 1, "y": [true, null]}'), ("dict", "{'x': 1}"), ("dict", "{bad"),
        ("path", "~/x"), ("path", "$HOME/x"), ("path", "${NOPE_NOT_SET}/y"), ("path", 7),
        ("list", 1.5),
        ("bytes", "1K"), ("bytes", "1.5 MB"), ("bytes", "lots"), ("bytes", 12), ("bits", "1Mb"), ("bits", "x"),
        ("jsonarg", " x "), ("json", {"a": [1, 2]}), ("jsonarg", ["a"]), ("json", 5),
    ],
)
def test_delegated_conversions_native(kind, value):
    """Conversions the core leaves to ansible-core's own check_type_* still answer natively."""
    compare({"a": {"type": kind}, "b": {"type": "list", "elements": kind}}, {"a": value, "b": [value, value]}, expect_native=True)


class _NamelessChecker:
    def __call__(self, value):
        if value == "bad":
            raise ValueError(f"nope: {value}")
        return [value]


def _to_upper(value):
    if not isinstance(value, str):
        raise TypeError(f"{value!r} is not text")
    return value.upper()


@pytest.mark.parametrize("value", ["x", 5, None, "bad", [1], {"k": "v"}])
def test_callable_types_native(value):
    spec = {
        "a": {"type": str},
        "b": {"type": int},
        "c": {"type": _to_upper},
        "d": {"type": _NamelessChecker()},
        "e": {"type": "list", "elements": _to_upper},
        "f": {"type": float, "required": True},
    }
    compare(spec, {k: value for k in "abcde"} | {"f": 1, "e": [value, "y"]}, expect_native=True)


def test_keyboard_interrupt_in_a_checker_propagates():
    from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

    calls = []

    def interrupted(value):
        calls.append(value)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        ArgumentSpecValidator({"a": {"type": interrupted}}).validate({"a": 1})
    assert calls == [1], "raised from the native call, not from a pure-Python rerun"


def test_no_log_fallback_number_in_sub_options(core_minor):
    """2.19 and 2.21 record the number itself as a no_log value (left to ansible-core), 2.22 its text."""
    spec = {"a": {"type": "dict", "options": {"b": {"no_log": True, "fallback": (lambda: 5,)}}}}
    assert compare(spec, {"a": {}}) is (core_minor >= (2, 22))


def test_keys_ansible_core_never_reads_stay_native():
    spec = {"a": {"type": "int", "context": {"x": 1}, "description": ["text"], "version_added": lambda: 0}}
    compare(spec, {"a": "7"}, expect_native=True)
