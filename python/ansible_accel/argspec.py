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


_no_log_default_strings: bool | None = None


def no_log_default_strings() -> bool:
    """Whether this ansible-core records the strings of a no_log default (2.22) rather than
    the default itself (2.19, 2.21), asked of its own ``_set_defaults``."""
    global _no_log_default_strings
    if _no_log_default_strings is None:
        from ansible.module_utils.common import parameters

        try:
            found = parameters._set_defaults({"probe": {"no_log": True, "default": ["text"]}}, {})
        except TypeError:  # the list itself went into a set
            found = None
        _no_log_default_strings = found == {"text"}
    return _no_log_default_strings


def compile_spec(validator: t.Any) -> t.Any:
    """The compiled spec for ``validator``, or the reason (str) it is not handled."""
    try:
        spec = validator.argument_spec
        exclusive, together = validator._mutually_exclusive, validator._required_together
        one_of, required_if, required_by = validator._required_one_of, validator._required_if, validator._required_by
    except AttributeError:
        return "spec: validator without its usual attributes"
    cached = _compiled.get(validator)
    if cached is not None:
        was = cached[0]
        if (was[0] is spec and was[1] is exclusive and was[2] is together and was[3] is one_of
                and was[4] is required_if and was[5] is required_by):
            return cached[1]
    sources = (spec, exclusive, together, one_of, required_if, required_by)
    try:
        from ansible.module_utils.common import parameters

        native = _native.argspec_compile(
            *sources, booleans_text(), parameters.DEFAULT_TYPE_VALIDATORS, no_log_default_strings()
        )
        compiled = native if isinstance(native, str) else Compiled(native)
    except Exception:  # noqa: BLE001 - the pure path will raise whatever ansible-core raises
        compiled = "spec: native compile error"
    try:
        _compiled[validator] = (sources, compiled)
    except TypeError:
        pass  # not weak-referenceable: compile per call
    return compiled


class Compiled:
    """A native compiled spec with the Python-side data every result of it shares."""

    __slots__ = ("native", "aliases", "names", "has_fallbacks")

    def __init__(self, native: t.Any) -> None:
        self.native = native
        self.aliases = dict(native.aliases())
        self.names = native.option_names()
        self.has_fallbacks = native.has_fallbacks()


_RESULT_FIELDS = (
    "_no_log_values", "_unsupported_parameters", "_supported_parameters", "_validated_parameters",
    "_deprecations", "_warnings", "_aliases", "errors",
)


def result_factory(result_class: type, errors_module: t.Any) -> t.Callable[..., t.Any]:
    """Makes ``ValidationResult`` objects with the attributes ``__init__`` would give, in the
    same order, without its deepcopy; uses ``__init__`` if the class has other attributes."""
    probe = result_class({})
    multiple = errors_module.AnsibleValidationErrorMultiple
    if tuple(vars(probe)) != _RESULT_FIELDS or type(probe.errors) is not multiple:
        def by_init(validated, no_log, unsupported, supported, warnings, aliases, deprecations):
            result = result_class({})
            result._validated_parameters = validated
            result._no_log_values.update(no_log)
            result._unsupported_parameters.update(unsupported)
            result._supported_parameters.update(supported)
            result._warnings.extend(warnings)
            result._aliases.update(aliases)
            result._deprecations.extend(deprecations)
            return result

        return by_init
    new = result_class.__new__

    def direct(validated, no_log, unsupported, supported, warnings, aliases, deprecations):
        result = new(result_class)
        result.__dict__.update(
            _no_log_values=set(no_log), _unsupported_parameters=unsupported,
            _supported_parameters=supported, _validated_parameters=validated, _deprecations=deprecations,
            _warnings=warnings, _aliases=aliases, errors=multiple(),
        )
        return result

    return direct


def build_result(make: t.Callable[..., t.Any], errors_module: t.Any, compiled: Compiled, outcome: tuple) -> t.Any:
    """A ``ValidationResult`` holding what the core found."""
    validated, errors, groups, no_log_values, alias_warnings, deprecations, _ = outcome
    aliases = compiled.aliases
    unsupported: set = set()
    supported: dict = {}
    for paths, names, alias_pairs in groups:
        # Each dict's unsupported keys join the result as a set, as in ansible-core, so
        # that the result set iterates in the same order.
        unsupported.update(set(paths))
        for path in paths:
            supported[path] = (list(names), dict(alias_pairs))
    warnings = [{"option": option, "alias": alias} for option, alias in alias_warnings] if alias_warnings else []
    result = make(validated, no_log_values, unsupported, supported, warnings, dict(aliases), deprecations)
    for class_name, message in errors:
        result.errors.append(getattr(errors_module, class_name)(message))
    if unsupported:
        result.errors.append(errors_module.UnsupportedError(_unsupported_message(unsupported, supported)))
    return result


def _unsupported_message(unsupported: set, supported: dict) -> str:
    """The message names the supported options of the spec of whichever unsupported item the
    set yields last (the same item ansible-core's loop leaves behind)."""
    flattened = []
    last = None
    for last in unsupported:
        flattened.append(".".join(last) if isinstance(last, tuple) else last)
    names, alias_map = supported.get(last) or ([], {})
    text = ", ".join(sorted(names))
    if alias_map:
        text += " (%s)" % ", ".join(sorted(alias_map))
    return f"{', '.join(sorted(flattened))}. Supported parameters include: {text}."


def make_validate(original: t.Callable, arg_spec_module: t.Any, errors_module: t.Any) -> t.Callable:
    """A replacement for ``ArgumentSpecValidator.validate`` that falls back to ``original``."""
    secrets = getattr(arg_spec_module, "_secrets", None)  # 2.22+: validate registers no_log values
    make = result_factory(arg_spec_module.ValidationResult, errors_module)
    from ansible.module_utils.common import parameters as parameters_module

    @functools.wraps(original)
    def validate(self, parameters, *args, **kwargs):
        compiled = compile_spec(self)
        if isinstance(compiled, str):
            _counters.fallback(PATH, compiled)
            return original(self, parameters, *args, **kwargs)
        given = parameters
        fallback_no_log: t.Any = ()
        if compiled.has_fallbacks:
            if type(parameters) is not dict:
                _counters.fallback(PATH, "value: parameters not a dict")
                return original(self, parameters, *args, **kwargs)
            # ansible-core's own set_fallbacks, first as in validate(), on a copy we own.
            try:
                given = dict(parameters)
                fallback_no_log = arg_spec_module.set_fallbacks(self.argument_spec, given)
            except Exception:  # noqa: BLE001 - ansible-core's validate raises it again itself
                _counters.fallback(PATH, "value: fallback raised")
                return original(self, parameters, *args, **kwargs)
        try:
            outcome = compiled.native.validate(given)
        except Exception:  # noqa: BLE001 - counted; ansible-core's own code gives the answer
            outcome = "value: native validate error"
        if isinstance(outcome, str):
            _counters.fallback(PATH, outcome)
            return original(self, parameters, *args, **kwargs)
        result = build_result(make, errors_module, compiled, outcome)
        result._no_log_values.update(fallback_no_log)
        if outcome[6]:
            warn = parameters_module.warn  # what _validate_sub_spec calls, looked up as it does
            for message in outcome[6]:
                warn(message)
        if secrets is not None:
            secrets.register_secrets(result._no_log_values)
        _counters.native(PATH)
        return result

    validate.__ansible_accel_original__ = original  # type: ignore[attr-defined]
    return validate
