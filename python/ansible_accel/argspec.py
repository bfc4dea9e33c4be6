"""Native ``ArgumentSpecValidator.validate``: the same ``ValidationResult``, built from the
Rust core's outcome for the specs and parameters it handles exactly.

A spec is compiled once per validator object (and again only if its ``argument_spec`` or
check attributes are replaced).  Anything the core does not handle (see the reasons under
``argspec`` in ``ansible_accel.status()``) runs ansible-core's own ``validate`` instead.
"""

from __future__ import annotations

import functools
import typing as t
import weakref

from . import _counters, _native

PATH = "argspec"
_CHECK_ATTRS = ("_mutually_exclusive", "_required_together", "_required_one_of", "_required_if", "_required_by")

# validator -> (the objects it was compiled from, compiled spec or reason)
_compiled: weakref.WeakKeyDictionary[t.Any, tuple[tuple, t.Any]] = weakref.WeakKeyDictionary()
_booleans_text: str | None = None


def booleans_text() -> str:
    """The valid-boolean list of ansible-core's bool error, in this interpreter's set order."""
    global _booleans_text
    if _booleans_text is None:
        from ansible.module_utils.parsing.convert_bool import BOOLEANS

        _booleans_text = ", ".join(repr(i) for i in BOOLEANS)
    return _booleans_text


def compile_spec(validator: t.Any) -> t.Any:
    """The compiled spec for ``validator``, or the reason (str) it is not handled."""
    sources = (validator.argument_spec, *(getattr(validator, a, None) for a in _CHECK_ATTRS))
    cached = _compiled.get(validator)
    if cached is not None and all(a is b for a, b in zip(cached[0], sources)):
        return cached[1]
    try:
        compiled = _native.argspec_compile(*sources, booleans_text())
    except Exception:  # noqa: BLE001 - the pure path will raise whatever ansible-core raises
        compiled = "spec: native compile error"
    try:
        _compiled[validator] = (sources, compiled)
    except TypeError:
        pass  # not weak-referenceable: compile per call
    return compiled


def build_result(result_class: type, errors_module: t.Any, compiled: t.Any, outcome: tuple) -> t.Any:
    """A ``ValidationResult`` holding what the core found."""
    validated, errors, unsupported, no_log_values, alias_warnings = outcome
    result = result_class({})
    result._validated_parameters = validated
    result._no_log_values.update(no_log_values)
    aliases = dict(compiled.aliases())
    result._aliases.update(aliases)
    result._warnings.extend({"option": option, "alias": alias} for option, alias in alias_warnings)
    if unsupported:
        result._unsupported_parameters.update(unsupported)
        names = compiled.option_names()
        for name in unsupported:
            result._supported_parameters[name] = (list(names), dict(aliases))
    for class_name, message in errors:
        result.errors.append(getattr(errors_module, class_name)(message))
    return result


def make_validate(original: t.Callable, arg_spec_module: t.Any, errors_module: t.Any) -> t.Callable:
    """A replacement for ``ArgumentSpecValidator.validate`` that falls back to ``original``."""
    secrets = getattr(arg_spec_module, "_secrets", None)  # 2.22+: validate registers no_log values

    @functools.wraps(original)
    def validate(self, parameters, *args, **kwargs):
        compiled = compile_spec(self)
        if isinstance(compiled, str):
            _counters.fallback(PATH, compiled)
            return original(self, parameters, *args, **kwargs)
        try:
            outcome = compiled.validate(parameters)
        except Exception:  # noqa: BLE001 - counted; ansible-core's own code gives the answer
            outcome = "value: native validate error"
        if isinstance(outcome, str):
            _counters.fallback(PATH, outcome)
            return original(self, parameters, *args, **kwargs)
        result = build_result(arg_spec_module.ValidationResult, errors_module, compiled, outcome)
        if secrets is not None:
            secrets.register_secrets(result._no_log_values)
        _counters.native(PATH)
        return result

    validate.__ansible_accel_original__ = original  # type: ignore[attr-defined]
    return validate
