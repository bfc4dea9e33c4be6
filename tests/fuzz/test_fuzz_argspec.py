"""``ArgumentSpecValidator.validate`` with the accelerator installed against ansible-core's own
on generated specs and parameters (the argspec tests' generators), and on specs whose fields
have the wrong types: every observable field of the result, or the same exception."""

from __future__ import annotations

import copy
import pathlib
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from .conftest import CASES, FALLBACKS, fuzz_settings

sys.path.insert(0, str(pathlib.Path(__file__).parents[1] / "argspec"))
from _compare import compare  # noqa: E402  (the argspec tests' comparison, every result field)
from test_generated import checks, param_sets, params_for, specs, values  # noqa: E402


@pytest.fixture(autouse=True)
def _accel_on(accel):
    yield accel


@pytest.fixture(autouse=True)
def _own_secret_masker():
    """2.22's validate registers no_log values process-wide for good: keep them out of it."""
    try:
        from ansible.module_utils import secrets
        from ansible.module_utils._internal import _secrets
    except ImportError:
        yield
        return
    with pytest.MonkeyPatch.context() as patch:
        fresh = _secrets.SecretMasker()
        patch.setattr(_secrets, "_secret_masker", fresh)
        patch.setattr(secrets, "_secret_masker", fresh)
        yield


def _compare(spec, params, cross_checks) -> None:
    from ansible.module_utils.common import arg_spec

    CASES["argspec"] += 1
    try:
        arg_spec.ArgumentSpecValidator(copy.deepcopy(spec), **copy.deepcopy(cross_checks))
    except Exception:  # noqa: BLE001 - the constructor (never accelerated) refuses the spec
        FALLBACKS["argspec"]["constructor raised"] += 1
        return
    if not compare(spec, params, cross_checks):
        FALLBACKS["argspec"]["left to ansible-core"] += 1


@fuzz_settings(share=0.7)
@given(st.data(), specs(), checks)
def test_generated_specs_like_core(data, spec, cross_checks):
    params = data.draw(params_for(spec) if data.draw(st.integers(0, 3)) else param_sets)
    _compare(spec, params, cross_checks)


WRONG = st.one_of(
    st.none(), st.booleans(), st.integers(-2, 2), st.floats(allow_nan=False), st.text(max_size=4),
    st.sampled_from(["str", "list", "dict", "int", "nope", "bits", "a,b"]),
    st.lists(st.one_of(st.text(max_size=3), st.integers(0, 2), st.none()), max_size=3),
    st.dictionaries(st.sampled_from(["a", "name", "version", "type"]), st.one_of(st.text(max_size=3), st.integers(0, 2)), max_size=2),
    st.tuples(st.integers(0, 2)), st.sets(st.integers(0, 2), max_size=2), st.binary(max_size=3),
)
FIELDS = ["type", "elements", "required", "default", "choices", "aliases", "no_log", "options", "apply_defaults",
          "deprecated_aliases", "removed_in_version", "removed_at_date", "removed_from_collection", "fallback", "mutually_exclusive"]


@st.composite
def wrong_specs(draw):
    """A generated spec with some fields (or whole options) replaced by values of wrong types."""
    spec = draw(specs())
    for name in list(spec):
        if draw(st.integers(0, 5)) == 0:
            spec[name] = draw(WRONG)
            continue
        for _ in range(draw(st.integers(0, 2))):
            spec[name][draw(st.sampled_from(FIELDS))] = draw(WRONG)
    if draw(st.integers(0, 9)) == 0:
        spec[draw(st.sampled_from([1, None, ("t",), b"b"]))] = {}
    return spec


wrong_checks = st.fixed_dictionaries({}, optional={k: WRONG for k in ["mutually_exclusive", "required_together", "required_one_of", "required_if", "required_by"]})


@fuzz_settings(share=0.3)
@given(st.data(), wrong_specs(), st.one_of(checks, wrong_checks))
def test_wrongly_typed_specs_like_core(data, spec, cross_checks):
    params = data.draw(st.one_of(param_sets, st.dictionaries(st.sampled_from(["a", "b", "x", 1, None]), values, max_size=4)))
    _compare(spec, params, cross_checks)
