"""Sub-options through both paths: nested dicts and lists of dicts, apply_defaults, option-level
checks with the options context in messages, nested aliases (warn() side effects), no_log and
deprecations inside sub-options, unsupported keys at several depths."""

from __future__ import annotations

import pytest
from ansible.module_utils.common import warnings as core_warnings

import ansible_accel
from _compare import compare

NESTED = {
    "name": {"required": True},
    "settings": {
        "type": "dict",
        "apply_defaults": True,
        "mutually_exclusive": [["mode", "preset"]],
        "required_if": [["mode", "fast", ["level"]]],
        "options": {
            "mode": {"choices": ["fast", "slow"], "default": "slow"},
            "preset": {},
            "level": {"type": "int", "aliases": ["lvl"], "removed_in_version": "9.0"},
            "token": {"no_log": True, "deprecated_aliases": [{"name": "tok", "version": "3.0"}], "aliases": ["tok"]},
        },
    },
    "rules": {
        "type": "list",
        "elements": "dict",
        "required_one_of": [["port", "service"]],
        "options": {
            "port": {"type": "int"},
            "service": {"type": "str"},
            "proto": {"choices": ["tcp", "udp"], "default": "tcp"},
            "limits": {
                "type": "dict",
                "required_together": [["soft", "hard"]],
                "options": {"soft": {"type": "int"}, "hard": {"type": "int"}, "secret": {"no_log": True}},
            },
        },
    },
}


@pytest.mark.parametrize(
    "params",
    [
        {"name": "a"},
        {"name": "a", "settings": None},
        {"name": "a", "settings": {"mode": "fast"}},
        {"name": "a", "settings": {"mode": "fast", "preset": "x", "lvl": "3", "level": 4}},
        {"name": "a", "settings": {"tok": "t0k", "bogus": 1, "level": "x"}},
        {"name": "a", "rules": []},
        {"name": "a", "rules": [{"port": "22"}, {"service": "ssh", "proto": "sctp"}]},
        {"name": "a", "rules": [{}, {"port": 1, "limits": {"soft": 1}}, {"port": 2, "limits": {"soft": "x", "hard": 2, "junk": 0, "secret": "s"}}]},
        {"name": "a", "rules": {"port": 80}},
        {"name": "a", "rules": [{"port": 80, "x": 1}], "settings": {"y": 2}, "z": 3},
        {"rules": [{"port": [1]}], "settings": {"mode": "other"}},
    ],
)
def test_nested_native(params):
    compare(NESTED, params, expect_native=True)


def _warnings_of(spec, params):
    from ansible.module_utils.common.arg_spec import ModuleArgumentSpecValidator

    core_warnings._global_warnings = {}
    core_warnings._global_deprecations = {}
    result = ModuleArgumentSpecValidator(spec).validate(params)
    return (
        [str(e) for e in result.errors], result._deprecations,
        list(core_warnings.get_warning_messages()), [str(d) for d in core_warnings.get_deprecation_messages()],
    )


def test_nested_alias_warnings_emitted_alike(module_context):
    params = {"name": "a", "settings": {"level": 1, "lvl": 2, "token": "a", "tok": "b"}}
    native = _warnings_of(NESTED, params)
    ansible_accel.uninstall()
    try:
        pure = _warnings_of(NESTED, params)
    finally:
        ansible_accel.install()
    assert native == pure
    assert any("settings.level and its alias settings.lvl" in w for w in native[2]), native[2]


def _upper(value):
    if not isinstance(value, str):
        raise TypeError(f"{value!r} is not text")
    return value.upper()


CALLABLES = {
    "top": {"type": _upper},
    "outer": {
        "type": "dict",
        "options": {
            "n": {"type": int},
            "inner": {"type": "list", "elements": "dict", "options": {"s": {"type": _upper}, "f": {"type": float}}},
            "names": {"type": "list", "elements": str},
        },
    },
}


@pytest.mark.parametrize(
    "params",
    [
        {"top": "a", "outer": {"n": "5", "inner": [{"s": "x", "f": "1.5"}, {"s": 3}], "names": [1, "b"]}},
        {"top": 1, "outer": {"n": "x", "inner": [{"f": "nope"}]}},
    ],
)
def test_callables_inside_sub_options_native(params):
    compare(CALLABLES, params, expect_native=True)


def test_fallbacks_inside_sub_options_native(monkeypatch):
    from ansible.module_utils.basic import env_fallback

    monkeypatch.setenv("ACCEL_SUB_TOKEN", "t0ken")
    monkeypatch.delenv("ACCEL_SUB_MISSING", raising=False)
    spec = {
        "conn": {
            "type": "list",
            "elements": "dict",
            "options": {
                "host": {"required": True},
                "token": {"no_log": True, "fallback": (env_fallback, ["ACCEL_SUB_TOKEN"])},
                "port": {"type": "int", "fallback": (env_fallback, ["ACCEL_SUB_MISSING"])},
                "retries": {"type": "int", "fallback": (lambda: "3",)},
            },
        }
    }
    compare(spec, {"conn": [{"host": "a"}, {"host": "b", "token": "own"}, {}]}, expect_native=True)
