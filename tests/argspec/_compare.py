"""Running one validation through ansible-core's pure code and the native path, and
comparing every observable field of the results."""

from __future__ import annotations

import copy
import warnings

import ansible_accel
from ansible.module_utils.common import arg_spec
from ansible_accel import _counters

_current = arg_spec.ArgumentSpecValidator.validate
ORIGINAL_VALIDATE = getattr(_current, "__ansible_accel_original__", _current)


def typed(value):
    """A value with every type spelled out, so 1 == True == 1.0 do not compare equal."""
    if isinstance(value, dict):
        return ("dict", [(typed(k), typed(v)) for k, v in value.items()])
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, [typed(v) for v in value])
    if isinstance(value, float):
        return ("float", repr(value))  # nan == nan here
    return (type(value).__name__, value)


def observe(result) -> dict:
    return {
        "validated": typed(result.validated_parameters),
        "errors": [(type(e).__name__, str(e)) for e in result.errors],
        "error_messages": list(result.error_messages),
        "unsupported": sorted(result.unsupported_parameters),
        "supported": {k: (sorted(v[0]), dict(v[1])) for k, v in result._supported_parameters.items()},
        "no_log": sorted(result._no_log_values),
        "warnings": result._warnings,
        "deprecations": result._deprecations,
        "aliases": list(result._aliases.items()),
    }


def outcome(validate, params):
    """Everything observable about one call, an exception included."""
    try:
        return observe(validate(params))
    except Exception as ex:  # noqa: BLE001 - compared, not swallowed
        return ("raised", type(ex), str(ex))


def native_count() -> int:
    return _counters.snapshot()["argspec"]["native"]


def compare(spec, params, checks=None, *, expect_native: bool | None = None):
    """Pure vs accelerated on the same input; returns whether the native path ran."""
    checks = checks or {}
    validator = arg_spec.ArgumentSpecValidator(copy.deepcopy(spec), **copy.deepcopy(checks))
    given = copy.deepcopy(params)
    before = native_count()
    got = outcome(validator.validate, given)
    went_native = native_count() == before + 1
    assert given == params, "validate() must not change its input"
    pure = arg_spec.ArgumentSpecValidator(copy.deepcopy(spec), **copy.deepcopy(checks))
    expected = outcome(lambda p: ORIGINAL_VALIDATE(pure, p), copy.deepcopy(params))
    assert got == expected, (spec, params, checks)
    if expect_native is not None:
        assert went_native == expect_native, (spec, params, checks, _counters.snapshot()["argspec"])
    return went_native
