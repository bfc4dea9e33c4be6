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
        compiled = accel_argspec._compile_spec(validator)
        strings = accel_argspec._spec_strings(compiled, validator.argument_spec)
        assert accel_argspec._spec_strings(accel_argspec._compile_spec(validator), validator.argument_spec) is strings
        assert strings["web"] is spec["a"]["default"]
        seen.append(strings)
        native_before = native_count()
        for _ in range(2):
            got = outcome(validator.validate, dict(params))
            expected = outcome(lambda p: ORIGINAL_VALIDATE(arg_spec.ArgumentSpecValidator(spec), p), dict(params))
            assert got == expected
        assert native_count() == native_before + 2
    assert len({id(s) for s in seen}) == 3


_GIVEN_TWICE_TYPES = ["int", "str", "bool", "list", int, str, bool, list]
_GIVEN_TWICE_EXTRAS = {
    "plain": {},
    "no_log": {"no_log": True},
    "choices": {"choices": [0, 1, "1", "x", True]},
    "deprecated alias": {"deprecated_aliases": [{"name": "z", "version": "3.0"}]},
    "all": {"no_log": True, "choices": [], "deprecated_aliases": [{"name": "z", "version": "3.0"}],
            "removed_in_version": "2.99"},
}
_UNSET = object()


def _all_fallbacks():
    from ansible_accel import _counters

    return sum(_counters.snapshot()["argspec"]["fallback"].values())


def _given_twice_values():
    return [None, False, 1, "1", "x", ["1"], _origin("1", 1), _origin(["x"], 2), _origin(0, 3), _origin(5, 4)]


@pytest.mark.parametrize("kind", _GIVEN_TWICE_TYPES, ids=repr)
@pytest.mark.parametrize("extra", _GIVEN_TWICE_EXTRAS, ids=str)
def test_option_given_by_name_and_by_alias(kind, extra):
    """An option given under its name and its alias (or under its alias alone), each first,
    in a plain and a tagged parameter dict: ansible-core converts the alias's value (copied
    over the option's), which a callable type gets as the caller's object."""
    spec = {"a": {"choices": [], "no_log": True},
            "b": {"type": kind, "aliases": ["z"], **copy.deepcopy(_GIVEN_TWICE_EXTRAS[extra])}}
    validator = arg_spec.ArgumentSpecValidator(copy.deepcopy(spec))
    pure = arg_spec.ArgumentSpecValidator(copy.deepcopy(spec))
    before, fell_back, cases = native_count(), _all_fallbacks(), 0
    for by_name in [_UNSET, *_given_twice_values()]:
        for by_alias in _given_twice_values():
            for alias_first in (False, True):
                entries = [("b", by_name), ("z", by_alias), ("a", None)]
                if alias_first:
                    entries[:2] = entries[1::-1]
                plain = {key: value for key, value in entries if value is not _UNSET}
                for params in (plain, AnsibleTagHelper.tag(dict(plain), [Origin(path="/top.yml")])):
                    got = outcome(validator.validate, copy.deepcopy(params))
                    expected = outcome(lambda p: ORIGINAL_VALIDATE(pure, p), copy.deepcopy(params))
                    assert got == expected, (spec, params)
                    cases += 1
    # Each call answered natively, or left to ansible-core and counted (a type error naming
    # the class of a value given tagged).
    native = native_count() - before
    assert native + _all_fallbacks() - fell_back == cases
    assert native * 4 >= cases * 3, f"native path answered only {native} of {cases} cases"


def test_option_given_by_two_aliases_and_its_name():
    """The last of the spec's aliases given wins, whatever the order of the parameters."""
    spec = {"b": {"type": int, "aliases": ["y", "z"]}}
    validator = arg_spec.ArgumentSpecValidator(copy.deepcopy(spec))
    pure = arg_spec.ArgumentSpecValidator(copy.deepcopy(spec))
    given = {"b": None, "y": "2", "z": _origin(False, 1)}
    before, cases = native_count(), 0
    for order in [("b", "y", "z"), ("z", "y", "b"), ("y", "z"), ("z", "y"), ("b", "y")]:
        plain = {key: given[key] for key in order}
        for params in (plain, AnsibleTagHelper.tag(dict(plain), [Origin(path="/top.yml")])):
            got = outcome(validator.validate, copy.deepcopy(params))
            expected = outcome(lambda p: ORIGINAL_VALIDATE(pure, p), copy.deepcopy(params))
            assert got == expected, params
            cases += 1
    assert native_count() - before == cases


def _compare_tagged(spec, params):
    got = outcome(arg_spec.ArgumentSpecValidator(copy.deepcopy(spec)).validate, copy.deepcopy(params))
    expected = outcome(lambda p: ORIGINAL_VALIDATE(arg_spec.ArgumentSpecValidator(copy.deepcopy(spec)), p),
                       copy.deepcopy(params))
    assert got == expected, (spec, params)


def _given(value):
    return value


def test_no_log_strings_hold_the_objects_they_come_from():
    """ansible-core lists a no_log int as a new, plain str and a no_log default as the spec's
    object, though the parameters hold a tagged str of the same text; a no_log str given is
    the object given, which its text cannot tell from a tagged one of the same text (counted,
    left to ansible-core)."""
    spec = {"a": {"type": "int", "no_log": True}, "c": {}, "d": {"type": "raw", "no_log": True},
            "e": {"type": "list", "default": "e,f", "no_log": True}}
    for params, native in [({"a": 1, "c": _origin("1", 1)}, True),
                           ({"d": [7, _origin("8", 1)], "c": _origin("7", 2)}, True),
                           ({"c": _origin("e,f", 1)}, True),
                           ({"a": "1", "c": _origin("1", 1)}, False)]:
        before, ambiguous = native_count(), _fallbacks(AMBIGUOUS)
        _compare_tagged(spec, params)
        assert (native_count(), _fallbacks(AMBIGUOUS)) == (before + native, ambiguous + (not native))


def test_sub_option_paths_hold_the_spec_names():
    """An unsupported sub-option's path holds the spec's option names, then the key given."""
    spec = {"a": {"type": "dict", "options": {"b": {}}}}
    before = native_count()
    _compare_tagged(spec, {_origin("a", 1): {_origin("k", 2): None}})
    assert native_count() == before + 1


def test_dict_added_for_apply_defaults_holds_the_spec_keys():
    """A dict that apply_defaults adds is filled under the spec's own (tagged) names."""
    spec = {"a": {"type": "dict", "apply_defaults": True, "options": {
        _origin("b", 1): {"fallback": (_given, ["fb"])}, _origin("c", 2): {"default": _origin("x", 3)}}}}
    for params in ({}, AnsibleTagHelper.tag({}, [Origin(path="/top.yml")])):
        before = native_count()
        _compare_tagged(spec, params)
        assert native_count() == before + 1


def test_tagged_fallback_value_inside_options_is_left_to_ansible_core():
    """A sub-option's fallback gives a tagged object, which the result must hold: counted and
    left to ansible-core."""
    reason = "value: tagged fallback value inside options"
    spec = {"a": {"type": "dict", "options": {"b": {"fallback": (_given, [_origin("fb", 1)])}}}}
    before = _fallbacks(reason)
    _compare_tagged(spec, AnsibleTagHelper.tag({"a": {}}, [Origin(path="/top.yml")]))
    assert _fallbacks(reason) == before + 1


@pytest.mark.parametrize("elements", [None, "str", "int", "raw"])
def test_list_from_a_tagged_str(elements):
    """check_type_list splits a str; str.split gives an empty str (tagged too) as it is."""
    spec = {"e": {"type": "list", **({"elements": elements} if elements else {})},
            "d": {"type": "list", "default": _origin("", 1)}}
    for value in ["", "a", "a,", ",b", "a,b"]:
        before = native_count()
        _compare_tagged(spec, {"e": _origin(value, 2)})
        assert native_count() == before + 1
