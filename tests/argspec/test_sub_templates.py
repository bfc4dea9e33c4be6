"""Sub-parameter dicts of a reused validator: once a spec is used again, a sub-dict of a shape
met before is made from a kept template (a copy with the values put in place).  Call after
call, with the shapes changing, values changing within one shape, and keys that are or are not
the spec's own name objects, every result must equal ansible-core's, holding the same value
objects (given values, the spec's defaults) where ansible-core's does.  Keys are compared by
type and text, not by object: the native result may hold the spec's own name where
ansible-core's deep copy keeps the caller's equal str (the top-level dict does the same)."""

from __future__ import annotations

import copy
import itertools

from _compare import ORIGINAL_VALIDATE, native_count, observe
from ansible.module_utils.common import arg_spec

BIG = int("9" * 15)  # not a cached small int

SPEC = {
    "name": {"type": "str"},
    "labels": {"type": "dict"},
    "volumes": {"type": "list", "elements": "dict"},
    "nics": {
        "type": "list",
        "elements": "dict",
        "options": {
            "public": {"type": "bool"},
            "address": {},
            "groups": {"type": "list", "elements": "str"},
            "delete": {"type": "bool", "default": True},
            "index": {"type": "int", "default": 0},
            "size": {"type": "int", "default": BIG},
            "ratio": {"type": "float", "default": 0.5},
            "mode": {"choices": ["a", "b"], "default": "a"},
            "inner": {
                "type": "list",
                "elements": "dict",
                "options": {"ip": {"required": True}, "primary": {"type": "bool"}},
            },
        },
    },
    "meta": {
        "type": "dict",
        "apply_defaults": True,
        "options": {
            "tokens": {"choices": ["optional", "required"], "default": "optional"},
            "hops": {"type": "int", "default": 1},
            "tags": {"choices": ["on", "off"], "default": "off"},
        },
    },
}


def fresh(text):
    """An str equal to ``text`` but not the same object (as keys parsed from JSON are)."""
    return "".join([text[:1], text[1:]])


NIC_VALUES = [
    {"public": True, "groups": ["g1"], "delete": "yes"},
    {"public": False, "groups": ["g2", "g3"], "delete": False},
    {"public": None, "groups": None, "delete": None},
    {"public": "no", "groups": "a,b", "delete": True},
    {"public": True, "groups": [], "delete": "0"},
    {"public": True, "groups": ["g4"], "delete": True, "size": int("8" * 16), "ratio": 2.5},
]
NIC_SHAPES = [
    ("public", "groups", "delete"),
    ("public", "size", "ratio"),
    ("delete", "public", "groups"),
    ("public",),
    (),
    ("public", "groups", "delete", "index", "mode"),
    ("address", "inner"),
]


def nic(shape, values, fresh_keys):
    out = {}
    for key in shape:
        value = {
            "index": "3",
            "mode": "b",
            "address": fresh("10.0.0.1"),
            "inner": [{"ip": "1.1.1.1"}, {"ip": "2.2.2.2", "primary": "yes"}],
        }.get(key, values.get(key))
        out[fresh(key) if fresh_keys else key] = copy.deepcopy(value)
    return out


def relations(value, given, spec_options):
    """Which objects a result holds: per key, its type and whether it was given, and for the
    value whether it is the given object or the spec's default object (recursively for
    sub-dicts)."""
    if isinstance(value, list):
        given_list = given if isinstance(given, list) else []
        return [relations(v, given_list[i] if i < len(given_list) else None, spec_options)
                for i, v in enumerate(value)]
    if not isinstance(value, dict):
        return None
    spec_options = spec_options or {}
    given = given if isinstance(given, dict) else {}
    out = []
    for key, item in value.items():
        option = spec_options.get(key, {})
        out.append((
            key,
            type(key).__name__,
            key in given,
            type(item).__name__,
            item is given.get(key),
            item is option.get("default"),
            relations(item, given.get(key), option.get("options")),
        ))
    return out


def check(validator, pure_validator, params):
    before = native_count()
    native = validator.validate(params)
    assert native_count() == before + 1, params
    pure = ORIGINAL_VALIDATE(pure_validator, params)
    assert observe(native) == observe(pure), params
    assert relations(native.validated_parameters, params, SPEC) == \
        relations(pure.validated_parameters, params, SPEC), params


def test_sub_dicts_of_shapes_met_again_match_pure_python():
    validator = arg_spec.ArgumentSpecValidator(SPEC)
    pure_validator = arg_spec.ArgumentSpecValidator(SPEC)
    cases = list(itertools.product(NIC_SHAPES, NIC_VALUES, [False, True]))
    for _ in range(3):
        for number, (shape, values, fresh_keys) in enumerate(cases):
            params = {"name": "web", "nics": [nic(shape, values, fresh_keys)],
                      "labels": {"env": fresh("prod"), "n": int("7" * 17), "f": 1.5, "b": True, "z": None},
                      "volumes": [{"dev": "/dev/sda", "ebs": {"size": int("6" * 17), "type": fresh("gp3")}}]}
            if number % 3 == 0:
                params["meta"] = {"tokens": "required"}
            elif number % 3 == 1:
                params["meta"] = {fresh("hops"): "7", "tags": "on"}
            check(validator, pure_validator, params)
            # The same shape again, and twice in one list (a template made, then used).
            check(validator, pure_validator, params)
            params = {"nics": [nic(shape, values, fresh_keys), nic(shape, NIC_VALUES[0], False)]}
            check(validator, pure_validator, params)


def test_many_shapes_in_turn_match_pure_python():
    """More shapes than a sub-spec keeps templates of, met in turn."""
    validator = arg_spec.ArgumentSpecValidator(SPEC)
    pure_validator = arg_spec.ArgumentSpecValidator(SPEC)
    shapes = [tuple(s) for n in range(4) for s in itertools.permutations(("public", "groups", "delete"), n)]
    for _ in range(3):
        for shape in shapes:
            for values in NIC_VALUES[:2]:
                check(validator, pure_validator, {"nics": [nic(shape, values, False)]})


def test_sub_dict_errors_and_unsupported_keys_match_pure_python():
    validator = arg_spec.ArgumentSpecValidator(SPEC)
    pure_validator = arg_spec.ArgumentSpecValidator(SPEC)
    bad = [
        {"nics": [{"public": "maybe"}]},
        {"nics": [{"public": True, "bogus": 1}]},
        {"nics": [{"inner": [{"primary": True}]}]},
        {"meta": {"tokens": "never"}},
        {"nics": [{"public": True}], "meta": {"tokens": "required", "extra": "x"}},
    ]
    for _ in range(4):
        for params in bad:
            check(validator, pure_validator, copy.deepcopy(params))
            check(validator, pure_validator, {"nics": [{"public": True}]})


def test_generated_specs_validated_again_and_again_match_pure_python():
    """Generated specs, each validator given several generated parameter sets, each twice:
    the results made from kept templates from the second call on."""
    import os

    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from _compare import outcome
    from test_generated import checks, params_for, specs

    before = native_count()

    @settings(max_examples=int(os.environ.get("ARGSPEC_EXAMPLES", "150")), derandomize=not os.environ.get("ARGSPEC_RANDOM"),
              deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.data(), specs(), checks)
    def check(data, spec, cross_checks):
        try:
            validator = arg_spec.ArgumentSpecValidator(copy.deepcopy(spec), **copy.deepcopy(cross_checks))
        except Exception:  # noqa: BLE001 - the constructor (never accelerated) refuses the spec
            return
        pure = arg_spec.ArgumentSpecValidator(copy.deepcopy(spec), **copy.deepcopy(cross_checks))
        for params in data.draw(st.lists(params_for(spec), min_size=1, max_size=4)):
            for _ in range(2):
                got = outcome(validator.validate, copy.deepcopy(params))
                expected = outcome(lambda p: ORIGINAL_VALIDATE(pure, p), copy.deepcopy(params))
                assert got == expected, (spec, params, cross_checks)

    check()
    assert native_count() - before > 100


def test_options_left_none_after_results_of_the_same_shape_holding_bools():
    """The top-level dict of the same keys in the same order, where an option was given (True or
    False, which the kept dict then holds) and then not given (None, added last): None again."""
    spec = {"a": {"type": "int"}, "b": {}, "c": {"type": "bool"}}
    validator = arg_spec.ArgumentSpecValidator(spec)
    pure_validator = arg_spec.ArgumentSpecValidator(spec)
    sequence = [{"a": False}] * 3 + [{}] + [{"a": True, "c": False}] * 3 + [{"a": True}, {"c": None}, {}]
    for params in sequence:
        check(validator, pure_validator, dict(params))
