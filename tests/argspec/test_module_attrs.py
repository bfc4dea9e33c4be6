"""Module attributes the fast path reads on every call (kept while the module's dict is
unchanged): replacing any of them, or putting it back, is seen on the very next call."""

from __future__ import annotations

import pytest
from _compare import ORIGINAL_VALIDATE, native_count, observe
from ansible.module_utils.common import arg_spec, parameters

from ansible_accel import _counters


def _pure(spec, params):
    return observe(ORIGINAL_VALIDATE(arg_spec.ArgumentSpecValidator(spec), dict(params)))


def _fallbacks(reason):
    return _counters.snapshot()["argspec"]["fallback"].get(reason, 0)


def test_type_validators_dict_replaced_then_restored(monkeypatch):
    spec = {"b": {"type": "int"}}
    validator = arg_spec.ArgumentSpecValidator(spec)
    for _ in range(3):
        before = native_count()
        assert observe(validator.validate({"b": "1"})) == _pure(spec, {"b": "1"})
        assert native_count() == before + 1
    replaced = dict(parameters.DEFAULT_TYPE_VALIDATORS, int=lambda value, **kw: 42)
    reason = "spec: DEFAULT_TYPE_VALIDATORS changed"
    for _ in range(2):
        monkeypatch.setattr(parameters, "DEFAULT_TYPE_VALIDATORS", replaced)
        before = _fallbacks(reason)
        got = observe(validator.validate({"b": "1"}))
        assert got == _pure(spec, {"b": "1"}) and ("int", 42) in [v for _, v in got["validated"][1]]
        assert _fallbacks(reason) == before + 1
        monkeypatch.undo()
        before = native_count()
        assert observe(validator.validate({"b": "1"})) == _pure(spec, {"b": "1"})
        assert native_count() == before + 1


def test_other_module_globals_changing_keep_the_answers(monkeypatch):
    """An unrelated global set in each module (its dict changes) is a new lookup, same answer."""
    spec = {"a": {"type": "str", "fallback": (lambda: "v",)}, "b": {"type": "int"}}
    validator = arg_spec.ArgumentSpecValidator(spec)
    for step in range(4):
        monkeypatch.setattr(parameters, "_accel_probe", step, raising=False)
        monkeypatch.setattr(arg_spec, "_accel_probe", step, raising=False)
        before = native_count()
        assert observe(validator.validate({"b": "2"})) == _pure(spec, {"b": "2"})
        assert native_count() == before + 1


def test_secret_registration_replaced_is_called():
    secrets = getattr(arg_spec, "_secrets", None)
    if secrets is None:
        pytest.skip("no secret registration in this ansible-core")
    spec = {"a": {"type": "str"}, "p": {"type": "str", "no_log": True}}
    validator = arg_spec.ArgumentSpecValidator(spec)
    for _ in range(3):
        validator.validate({"a": "x"})
    real = secrets.register_secrets
    seen = []

    def recording(values):
        seen.append(set(values))
        return real(values)

    secrets.register_secrets = recording
    try:
        validator.validate({"a": "x"})
        validator.validate({"a": "x", "p": "hidden-value"})
    finally:
        secrets.register_secrets = real
    assert seen == [set(), {"hidden-value"}]
    count = len(seen)
    validator.validate({"a": "x"})
    assert len(seen) == count
