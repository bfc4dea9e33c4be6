"""What used to be known limits: a spec changed in place after it was compiled, a replaced
type checker in DEFAULT_TYPE_VALIDATORS, and user code (fallbacks, callables as type) run
once only even when the native path gives the call back to ansible-core."""

from __future__ import annotations

import copy

from _compare import ORIGINAL_VALIDATE, native_count, observe
from ansible.module_utils.common import arg_spec, parameters
from ansible_accel import _counters


def _pure(spec, params, **checks):
    return observe(ORIGINAL_VALIDATE(arg_spec.ArgumentSpecValidator(copy.deepcopy(spec), **copy.deepcopy(checks)),
                                     copy.deepcopy(params)))


def test_spec_changed_in_place_is_compiled_again():
    spec = {"a": {"type": "str"}, "b": {"type": "dict", "options": {"c": {"type": "int", "default": 1}}}}
    validator = arg_spec.ArgumentSpecValidator(spec)
    params = {"a": "5", "b": {}}
    assert observe(validator.validate(copy.deepcopy(params))) == _pure(spec, params)
    changes = [
        lambda: spec["a"].update(type="int"),
        lambda: spec["b"]["options"]["c"].update(default=True),  # 1 == True: still a change
        lambda: spec["b"]["options"].update(d={"required": True}),
        lambda: spec.update(e={"aliases": ["x"]}),
        lambda: spec["e"]["aliases"].append("y"),
    ]
    for change in changes:
        change()
        before = native_count()
        got = observe(validator.validate(copy.deepcopy(params)))
        assert native_count() == before + 1
        assert got == _pure(spec, params), spec


def test_checks_changed_in_place_are_compiled_again():
    spec = {"a": {"type": "str"}, "b": {"type": "str"}}
    exclusive = [["a", "c"]]
    validator = arg_spec.ArgumentSpecValidator(spec, mutually_exclusive=exclusive)
    params = {"a": "1", "b": "2"}
    assert observe(validator.validate(dict(params))) == _pure(spec, params, mutually_exclusive=exclusive)
    exclusive[0][1] = "b"
    got = observe(validator.validate(dict(params)))
    assert got == _pure(spec, params, mutually_exclusive=exclusive)
    assert got["errors"], "the changed check must apply"


def test_replaced_type_checker_is_respected(monkeypatch):
    def shouting(value, **kwargs):
        return str(value).upper()

    spec = {"a": {"type": "str"}, "b": {"type": "int"}}
    params = {"a": "quiet", "b": "3"}
    validator = arg_spec.ArgumentSpecValidator(spec)
    validator.validate(dict(params))  # compiled while the checker was ansible-core's
    monkeypatch.setitem(parameters.DEFAULT_TYPE_VALIDATORS, "str", shouting)
    before = _counters.snapshot()["argspec"]["fallback"].get("spec: DEFAULT_TYPE_VALIDATORS changed", 0)
    got = observe(validator.validate(dict(params)))
    assert got == _pure(spec, params)
    assert got["validated"][1][0][1] == ("str", "QUIET")
    after = _counters.snapshot()["argspec"]["fallback"].get("spec: DEFAULT_TYPE_VALIDATORS changed", 0)
    assert after == before + 1
    monkeypatch.undo()
    before = native_count()
    assert observe(validator.validate(dict(params))) == _pure(spec, params)
    assert native_count() == before + 1


def _counting_fallback(calls, value):
    def fallback(*args):
        calls.append(args)
        if value is KeyError:
            raise KeyError("from the fallback")
        return value
    return fallback


def test_fallbacks_run_once_when_the_call_is_given_back():
    calls: list = []
    spec = {
        "a": {"type": "str", "fallback": (_counting_fallback(calls, "from-env"), ["A"])},
        "b": {"type": "int"},
    }
    params = {"b": 2 ** 70}  # beyond 64 bits: the native path gives the call back
    before = _counters.snapshot()["argspec"]["fallback"].get("value: int beyond 64 bits", 0)
    got = observe(arg_spec.ArgumentSpecValidator(spec).validate(dict(params)))
    assert _counters.snapshot()["argspec"]["fallback"].get("value: int beyond 64 bits", 0) == before + 1
    assert len(calls) == 1, calls
    assert got == _pure(spec, params)
    assert (("str", "a"), ("str", "from-env")) in got["validated"][1]


def test_a_raising_fallback_runs_once_and_its_exception_propagates():
    calls: list = []
    spec = {"a": {"type": "str", "fallback": (_counting_fallback(calls, KeyError), ["A"])}}
    validator = arg_spec.ArgumentSpecValidator(spec)
    try:
        validator.validate({})
    except KeyError as ex:
        raised = ex
    else:
        raised = None
    assert len(calls) == 1, calls
    pure_calls = len(calls)
    try:
        ORIGINAL_VALIDATE(arg_spec.ArgumentSpecValidator(spec), {})
    except KeyError as ex:
        expected = ex
    assert len(calls) == pure_calls + 1
    assert type(raised) is type(expected) and str(raised) == str(expected)


def test_a_fallback_finding_nothing_runs_once_when_the_call_is_given_back():
    from ansible.module_utils.common.parameters import AnsibleFallbackNotFound

    calls: list = []

    def nothing(*args):
        calls.append(args)
        raise AnsibleFallbackNotFound

    spec = {"a": {"type": "str", "fallback": (nothing, ["A"])}, "b": {"type": "int"}}
    for params in ({"b": 2 ** 70}, {"b": 3}):  # given back (beyond 64 bits), then native
        del calls[:]
        before = native_count()
        got = observe(arg_spec.ArgumentSpecValidator(spec).validate(dict(params)))
        assert len(calls) == 1, calls
        assert native_count() == before + (params["b"] == 3)
        assert got == _pure(spec, params)


def test_set_fallbacks_and_type_checkers_replaced_after_native_calls(monkeypatch):
    # The fast path remembers that arg_spec.set_fallbacks and DEFAULT_TYPE_VALIDATORS were
    # found unchanged; replacing either afterwards must be seen on the very next call.
    spec = {"a": {"type": "str", "fallback": (lambda: "v",)}, "b": {"type": "int"}}
    validator = arg_spec.ArgumentSpecValidator(spec)
    for _ in range(3):
        before = native_count()
        assert observe(validator.validate({"b": "1"})) == _pure(spec, {"b": "1"})
        assert native_count() == before + 1
    calls = []
    real = arg_spec.set_fallbacks

    def recording(spec, parameters):
        calls.append(1)
        return real(spec, parameters)

    monkeypatch.setattr(arg_spec, "set_fallbacks", recording)
    validator.validate({"b": "1"})
    assert calls == [1]
    monkeypatch.undo()
    monkeypatch.setitem(parameters.DEFAULT_TYPE_VALIDATORS, "int", lambda value, **kw: 42)
    got = observe(validator.validate({"b": "1"}))
    assert got == _pure(spec, {"b": "1"}) and (("str", "b"), ("int", 42)) in got["validated"][1]
    monkeypatch.undo()
    before = native_count()
    assert observe(validator.validate({"b": "1"})) == _pure(spec, {"b": "1"})
    assert native_count() == before + 1
