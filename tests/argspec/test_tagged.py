"""Controller data: specs and parameters holding ansible-core's tagged types (origin-tagged
str, int, float, list and dict subclasses, as YAML and templating make them on 2.19+).
Generated cases go through ansible-core's pure code and the native path; every result field
is compared with each value's exact type and tags, and the native path must really run."""

from __future__ import annotations

import copy
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from _compare import ORIGINAL_VALIDATE, native_count
from ansible.module_utils.common import arg_spec
from test_generated import checks, param_sets, params_for, specs

tags_module = pytest.importorskip("ansible.module_utils._internal._datatag", reason="no tagged data before 2.19")
AnsibleTagHelper = tags_module.AnsibleTagHelper
Origin = pytest.importorskip("ansible._internal._datatag._tags").Origin


def tagged(value, draw, where="x"):
    """``value`` with some of its str/int/float/list/dict parts (keys too) tagged."""
    if isinstance(value, dict):
        out = {tagged(k, draw, where): tagged(v, draw, where) for k, v in value.items()}
    elif isinstance(value, list):
        out = [tagged(v, draw, where) for v in value]
    else:
        out = value
    if type(out) in (str, int, float, dict, list) and draw(st.integers(0, 2)):
        return AnsibleTagHelper.tag(out, [Origin(path=f"/{where}.yml", line_num=draw(st.integers(1, 3)))])
    return out


def typed(value):
    """Every type and tag spelled out."""
    tags = sorted(map(repr, AnsibleTagHelper.tags(value)))
    if isinstance(value, dict):
        return (type(value).__name__, tags, [(typed(k), typed(v)) for k, v in value.items()])
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tags, [typed(v) for v in value])
    if isinstance(value, float):
        return ("float", type(value).__name__, tags, repr(value))
    return (type(value).__name__, tags, value)


def observe(result):
    return {
        "validated": typed(result.validated_parameters),
        "errors": [(type(e).__name__, str(e)) for e in result.errors],
        "unsupported": sorted(map(typed, result.unsupported_parameters), key=repr),
        "supported": sorted((repr(k), typed(list(v[0])), typed(v[1])) for k, v in result._supported_parameters.items()),
        "no_log": sorted(map(typed, result._no_log_values), key=repr),
        "warnings": typed(result._warnings),
        "deprecations": typed(result._deprecations),
        "aliases": typed(result._aliases),
    }


def outcome(validate, params):
    try:
        return observe(validate(params))
    except Exception as ex:  # noqa: BLE001 - compared, not swallowed
        return ("raised", type(ex), str(ex))


def test_tagged_specs_and_parameters_match_pure_python():
    before = native_count()

    @settings(max_examples=int(os.environ.get("ARGSPEC_EXAMPLES", "300")), derandomize=not os.environ.get("ARGSPEC_RANDOM"),
              deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.data(), specs(), checks)
    def check(data, spec, cross_checks):
        params = data.draw(params_for(spec) if data.draw(st.integers(0, 3)) else param_sets)
        draw = data.draw
        if draw(st.booleans()):
            spec = tagged(spec, draw, "spec")
        params = tagged(params, draw, "params")
        if draw(st.integers(0, 3)) == 0:
            params = AnsibleTagHelper.tag(dict(params), [Origin(path="/top.yml")])
        accelerated = arg_spec.ArgumentSpecValidator(copy.deepcopy(spec), **copy.deepcopy(cross_checks))
        pure = arg_spec.ArgumentSpecValidator(copy.deepcopy(spec), **copy.deepcopy(cross_checks))
        got = outcome(accelerated.validate, copy.deepcopy(params))
        expected = outcome(lambda p: ORIGINAL_VALIDATE(pure, p), copy.deepcopy(params))
        assert got == expected, (spec, params, cross_checks)

    check()
    native = native_count() - before
    assert native > 60, f"native path answered only {native} tagged cases"


@pytest.mark.parametrize("checker_name", ["_check_type_list_strict", "wrap_in_dict"])
def test_callable_type_result_holds_the_tagged_value(checker_name):
    """A callable type that wraps its (deep-copied, tagged) argument: ansible-core's result
    holds the callable's own object, whose item keeps the tags (assert's one-string ``that:``
    is TrustedAsTemplate-tagged and must stay so)."""
    from ansible.module_utils.common import validation

    checker = getattr(validation, checker_name, None) or (lambda value: {"wrapped": value})
    if checker_name == "_check_type_list_strict" and not hasattr(validation, checker_name):
        pytest.skip("no _check_type_list_strict in this ansible-core")
    spec = {"that": {"type": checker, "required": True}, "msg": {"type": "raw"}}
    value = AnsibleTagHelper.tag("1 == 1", [Origin(path="/play.yml", line_num=3)])
    before = native_count()
    got = outcome(arg_spec.ArgumentSpecValidator(spec).validate, {"that": value})
    assert native_count() == before + 1
    expected = outcome(lambda p: ORIGINAL_VALIDATE(arg_spec.ArgumentSpecValidator(spec), p), {"that": value})
    assert got == expected
    assert "Origin" in repr(got["validated"])


def _fallbacks(reason):
    from ansible_accel import _counters

    return _counters.snapshot()["argspec"]["fallback"].get(reason, 0)


AMBIGUOUS = "value: equal strings of different tags in a tagged result"


def _origin(value, line):
    return AnsibleTagHelper.tag(value, [Origin(path="/roles/x/meta/argument_specs.yml", line_num=line)])


@pytest.mark.parametrize("versions", [
    (_origin("2.99", 1), "2.99"),
    ("2.99", _origin("2.99", 2)),
    (_origin("2.99", 1), _origin("2.99", 2)),
], ids=["first tagged", "second tagged", "different origins"])
def test_equal_strings_of_different_tags_are_told_apart(versions):
    """Two options deprecated in the same version, the version strings told apart only by their
    tags: ansible-core's deprecations hold each option's own object, which the native result's
    strings (found again by their text) cannot tell: the call is left to ansible-core, counted."""
    spec = {"a": {"removed_in_version": versions[0]}, "b": {"removed_in_version": versions[1]}}
    params = {_origin("a", 5): None, "b": None}
    before = _fallbacks(AMBIGUOUS)
    got = outcome(arg_spec.ArgumentSpecValidator(spec).validate, dict(params))
    expected = outcome(lambda p: ORIGINAL_VALIDATE(arg_spec.ArgumentSpecValidator(spec), p), dict(params))
    assert got == expected
    assert _fallbacks(AMBIGUOUS) == before + 1


def test_equal_strings_of_the_same_tags_stay_native():
    """The same text with the same tags in both places: either object is the one ansible-core
    holds (equal, with equal tags), and the native path answers."""
    spec = {"a": {"removed_in_version": _origin("2.99", 1)}, "b": {"removed_in_version": _origin("2.99", 1)}}
    params = {_origin("a", 5): None, "b": None}
    before, native_before = _fallbacks(AMBIGUOUS), native_count()
    got = outcome(arg_spec.ArgumentSpecValidator(spec).validate, dict(params))
    expected = outcome(lambda p: ORIGINAL_VALIDATE(arg_spec.ArgumentSpecValidator(spec), p), dict(params))
    assert got == expected
    assert _fallbacks(AMBIGUOUS) == before and native_count() == native_before + 1


def test_spec_strings_kept_per_compiled_spec_follow_spec_changes():
    """The spec's strings are walked once per compiled spec and reused; a spec changed in place
    (a tagged string replaced by one of other tags, then by a plain one) is compiled again, and
    every result holds the objects ansible-core's does."""
    from ansible_accel import argspec as accel_argspec

    spec = {"a": {"default": _origin("web", 1)}, "b": {"removed_in_version": _origin("2.99", 2)}}
    validator = arg_spec.ArgumentSpecValidator(spec)
    params = {_origin("b", 5): None}
    seen = []
    for replacement in [None, _origin("web", 7), "web"]:
        if replacement is not None:
            spec["a"]["default"] = replacement
        compiled = accel_argspec.compile_spec(validator)
        strings = accel_argspec.spec_strings(compiled, validator.argument_spec)
        assert accel_argspec.spec_strings(accel_argspec.compile_spec(validator), validator.argument_spec) is strings
        assert strings["web"] is spec["a"]["default"]
        seen.append(strings)
        native_before = native_count()
        for _ in range(2):
            got = outcome(validator.validate, dict(params))
            expected = outcome(lambda p: ORIGINAL_VALIDATE(arg_spec.ArgumentSpecValidator(spec), p), dict(params))
            assert got == expected
        assert native_count() == native_before + 2
    assert len({id(s) for s in seen}) == 3
