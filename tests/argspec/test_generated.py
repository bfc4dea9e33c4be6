"""Hypothesis-generated specs and parameters, each validated by ansible-core's pure code and
the native path with every result field compared; the native path must really run."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from _compare import compare
from ansible_accel import _counters

NAMES = ["a", "b", "c", "d", "e"]
ALIASES = ["x", "y", "z"]
TYPES = [None, "str", "int", "bool", "float", "list", "dict", "path", "raw"]

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from([0.0, 1.0, 2.5]),
    st.integers(), st.floats(), st.text(max_size=6),
    st.sampled_from(["~", "$HOME", " 1_0 ", "1e2", "{\"k\": 1}", "{'k': 2}", "1K", "2 MB", "\u00a0on", "inf"]),
    st.sampled_from(["", "a", "1", "0", "yes", "No", "off", "a,b", "k=v", "k=v, j='w x'", "True", "False", " 7 "]),
)
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["k", "j"]), inner, max_size=2), max_leaves=5)


def _fallback_with(value):
    from ansible.module_utils.common.parameters import AnsibleFallbackNotFound

    if value == "NOT_FOUND":
        raise AnsibleFallbackNotFound
    return value


@st.composite
def specs(draw, depth=0):
    names = draw(st.lists(st.sampled_from(NAMES), min_size=1, max_size=5, unique=True))
    free_aliases = list(ALIASES)
    spec = {}
    for name in names:
        option = {}
        kind = draw(st.sampled_from(TYPES + ["jsonarg", "bytes", "bits", int, str]))
        if kind is not None:
            option["type"] = kind
        if kind == "list" and draw(st.booleans()):
            option["elements"] = draw(st.sampled_from(["str", "int", "bool", "raw", "float", "dict", "path", "bits", float]))
        if draw(st.booleans()):
            option["required"] = draw(st.booleans())
        if not option.get("required") and draw(st.booleans()):
            option["default"] = draw(scalars | st.tuples(st.integers(0, 2)) | values)
        if draw(st.integers(0, 3)) == 0:
            option["choices"] = draw(st.lists(st.sampled_from(["a", "1", "yes", "no", 1, 0, True, None]), max_size=3))
        if free_aliases and draw(st.integers(0, 2)) == 0:
            option["aliases"] = [free_aliases.pop()]
            if draw(st.integers(0, 3)) == 0:
                option["deprecated_aliases"] = [{"name": option["aliases"][0], "version": "3.0"}]
        if draw(st.integers(0, 5)) == 0:
            option[draw(st.sampled_from(["removed_in_version", "removed_at_date"]))] = "2.99"
        if draw(st.integers(0, 3)) == 0:
            option["no_log"] = True
        if draw(st.integers(0, 5)) == 0:
            option["fallback"] = (_fallback_with, [draw(st.sampled_from(["fb", "1", "", "NOT_FOUND"]))])
        if depth < 2 and draw(st.integers(0, 3)) == 0:
            option.pop("default", None)
            option.pop("choices", None)
            option.pop("elements", None)
            if draw(st.booleans()):
                option["type"] = "dict"
            else:
                option.update(type="list", elements="dict")
            option["options"] = draw(specs(depth + 1))
            if draw(st.booleans()):
                option["apply_defaults"] = True
            option.update(draw(checks))
        spec[name] = option
    return spec


@st.composite
def params_for(draw, spec):
    """Parameters shaped by the spec (sub-dicts for sub-options), with unknown keys and noise."""
    keys = list(spec) + ALIASES + ["unknown"]
    params = {}
    for key in draw(st.lists(st.sampled_from(keys), max_size=6, unique=True)):
        option = spec.get(key) or next((o for o in spec.values() if key in o.get("aliases", ())), None)
        if option and "options" in option and draw(st.integers(0, 4)):
            one = params_for(option["options"])
            params[key] = draw(one) if option["type"] == "dict" and draw(st.integers(0, 3)) else draw(st.lists(one, max_size=3))
        else:
            params[key] = draw(values)
    return params


def groups(draw_names):
    return st.lists(st.lists(st.sampled_from(NAMES), min_size=1, max_size=3), max_size=2)


checks = st.fixed_dictionaries(
    {},
    optional={
        "mutually_exclusive": groups(NAMES),
        "required_together": groups(NAMES),
        "required_one_of": groups(NAMES),
        "required_if": st.lists(
            st.tuples(st.sampled_from(NAMES), scalars.filter(lambda v: not isinstance(v, float)),
                      st.lists(st.sampled_from(NAMES), max_size=2), st.booleans()).map(list),
            max_size=2),
        "required_by": st.dictionaries(st.sampled_from(NAMES), st.lists(st.sampled_from(NAMES), max_size=2), max_size=2),
    },
)
param_sets = st.dictionaries(st.sampled_from(NAMES + ALIASES + ["unknown"]), values, max_size=6)


def test_generated_specs_match_pure_python():
    before = _counters.snapshot()["argspec"]["native"]

    @settings(max_examples=int(os.environ.get("ARGSPEC_EXAMPLES", "400")), derandomize=not os.environ.get("ARGSPEC_RANDOM"), deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.data(), specs(), checks)
    def check(data, spec, cross_checks):
        params = data.draw(params_for(spec) if data.draw(st.integers(0, 3)) else param_sets)
        compare(spec, params, cross_checks)

    check()
    native = _counters.snapshot()["argspec"]["native"] - before
    assert native > 100, f"native path answered only {native} generated cases"
