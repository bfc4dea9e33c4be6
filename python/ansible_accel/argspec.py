"""Validating parameters against an argument spec, natively, with ansible-core's results.

Public: :func:`validate`, which returns what
``ArgumentSpecValidator(argument_spec, ...).validate(parameters)`` of the installed ansible-core
returns: the same ``ValidationResult`` (validated parameters, errors, warnings, deprecations,
no_log values...).  Every other name here is the accelerator's own wiring.

Specs and parameters the Rust core handles exactly are validated there; a spec is compiled
once per validator object (and again only if its ``argument_spec`` or check attributes are
replaced).  Anything the core does not handle (see the reasons under ``argspec`` in
``ansible_accel.status()``) runs ansible-core's own ``validate`` instead.  Results for
ansible-core's tagged controller data are rebuilt by ``_argspec_tagged``.
"""

from __future__ import annotations

import collections.abc as _abc
import functools
import threading
import typing as t

from . import _counters, _native
from ._argspec_tagged import _Ambiguous, _register_tagged_types, _retag_result, _spec_strings

_PATH = "argspec"

_booleans_text_cached: str | None = None


def _booleans_text() -> str:
    """The valid-boolean list of ansible-core's bool error, in this interpreter's set order."""
    global _booleans_text_cached
    if _booleans_text_cached is None:
        from ansible.module_utils.parsing.convert_bool import BOOLEANS

        _booleans_text_cached = ", ".join(repr(i) for i in BOOLEANS)
    return _booleans_text_cached


_no_log_default_strings_cached: bool | None = None


def _no_log_default_strings() -> bool:
    """Whether this ansible-core records the strings of a no_log default (2.22) rather than
    the default itself (2.19, 2.21), asked of its own ``_set_defaults``."""
    global _no_log_default_strings_cached
    if _no_log_default_strings_cached is None:
        from ansible.module_utils.common import parameters

        try:
            found = parameters._set_defaults({"probe": {"no_log": True, "default": ["text"]}}, {})
        except TypeError:  # the list itself went into a set
            found = None
        _no_log_default_strings_cached = found == {"text"}
    return _no_log_default_strings_cached


_fast: t.Any = None


def _fast_path() -> t.Any:
    """The native ``validate`` for this process's ansible-core (made on first use)."""
    global _fast
    if _fast is None:
        from ansible.module_utils import errors as errors_module
        from ansible.module_utils.common import arg_spec as arg_spec_module
        from ansible.module_utils.common import parameters as parameters_module

        _register_tagged_types()
        result_class = arg_spec_module.ValidationResult
        _fast = _native.ArgspecFastPath(
            result_class, errors_module.AnsibleValidationErrorMultiple, errors_module, parameters_module,
            dict(parameters_module.DEFAULT_TYPE_VALIDATORS),
            getattr(arg_spec_module, "_secrets", None),  # 2.22+: validate registers no_log values
            _booleans_text(), _no_log_default_strings(), _direct_results(result_class, errors_module),
            _fallback_no_log_strings(parameters_module),
        )
        _counters.pending(_PATH, _native.argspec_take_native_count)
    return _fast


def _fallback_no_log_strings(parameters_module: t.Any) -> bool:
    """Whether this ansible-core's ``set_fallbacks`` records the strings of a no_log value
    (2.22) rather than the value itself (2.19, 2.21), asked of the function itself."""
    try:
        found = parameters_module.set_fallbacks({"probe": {"no_log": True, "fallback": (lambda: ["text"],)}}, {})
    except TypeError:  # the list itself went into a set
        found = None
    return found == {"text"}


def _is_ansible_set_fallbacks(function: t.Any) -> bool:
    """Whether ``function`` is ansible-core's own ``set_fallbacks`` (not a replacement)."""
    from ansible.module_utils.common import parameters

    code = getattr(function, "__code__", None)
    return function is parameters.set_fallbacks and code is not None and code.co_filename == parameters.__file__


def _compile_spec(validator: t.Any) -> t.Any:
    """The compiled spec for ``validator`` (the same object while its spec and checks are the
    same, unchanged objects), or the reason (str) it is not handled."""
    try:
        return _fast_path().compiled(validator)
    except Exception:  # noqa: BLE001 - an internal error: ansible-core's own code answers
        return "spec: native compile error"


_RESULT_FIELDS = (
    "_no_log_values", "_unsupported_parameters", "_supported_parameters", "_validated_parameters",
    "_deprecations", "_warnings", "_aliases", "errors",
)


def _direct_results(result_class: type, errors_module: t.Any) -> bool:
    """Whether ``ValidationResult.__init__`` gives exactly the attributes the native path sets
    (in the same order), so that results can be made without it and its deepcopy."""
    probe = result_class({})
    return tuple(vars(probe)) == _RESULT_FIELDS and type(probe.errors) is errors_module.AnsibleValidationErrorMultiple


def _result_factory(result_class: type, errors_module: t.Any) -> t.Callable[..., t.Any]:
    """Makes ``ValidationResult`` objects with the attributes ``__init__`` would give, in the
    same order, without its deepcopy; uses ``__init__`` if the class has other attributes."""
    multiple = errors_module.AnsibleValidationErrorMultiple
    if not _direct_results(result_class, errors_module):
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


def _build_result(make: t.Callable[..., t.Any], errors_module: t.Any, compiled: t.Any, outcome: tuple) -> t.Any:
    """A ``ValidationResult`` holding what the core found (the long way: tagged data)."""
    validated, errors, groups, no_log, alias_warnings, deprecations = outcome[:6]
    no_log_values = [text for text, _ in no_log]
    unsupported: set = set()
    supported: dict = {}
    for paths, names, alias_pairs in groups:
        # Each dict's unsupported keys join the result as a set, as in ansible-core, so
        # that the result set iterates in the same order.
        unsupported.update(set(paths))
        for path in paths:
            supported[path] = (list(names), dict(alias_pairs))
    warnings = [{"option": option, "alias": alias} for option, alias in alias_warnings] if alias_warnings else []
    result = make(validated, no_log_values, unsupported, supported, warnings, dict(compiled.aliases()), deprecations)
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


# What the native attempt's own set_fallbacks call found, for ansible-core's validate() to
# reuse when the call is given back to it: fallbacks are user code (env lookups, any
# callable), which must not run twice for one validation.
_replay = threading.local()


def _make_set_fallbacks(real: t.Callable) -> t.Callable:
    """``set_fallbacks`` as arg_spec's validate() calls it: the native attempt's results
    replayed once when they are pending for this spec, else ansible-core's own."""

    @functools.wraps(real)
    def set_fallbacks(argument_spec, parameters):
        pending = getattr(_replay, "pending", None)
        if pending is not None and pending[0] is argument_spec:
            _replay.pending = None
            if isinstance(pending[1], BaseException):
                raise pending[1]
            for key, value in pending[1].items():
                parameters[key] = value
            return set(pending[2])
        return real(argument_spec, parameters)

    set_fallbacks.__ansible_accel_original__ = real  # type: ignore[attr-defined]
    return set_fallbacks


def _make_validate(original: t.Callable, arg_spec_module: t.Any, errors_module: t.Any) -> t.Callable:
    """A replacement for ``ArgumentSpecValidator.validate`` that falls back to ``original``."""
    long_way = _LongWay(original, arg_spec_module, errors_module)
    the_long_way, given_back, raised_again = long_way.run, long_way.given_back, long_way.raised_again
    parameters_module = long_way.parameters_module
    _fast_path()

    @functools.wraps(original)
    def validate(self, parameters, *args, **kwargs):
        try:
            # What the native call reads, read here: Python reads its own attributes for less.
            spec = self.argument_spec
            exclusive, together, one_of = self._mutually_exclusive, self._required_together, self._required_one_of
            required_if, required_by = self._required_if, self._required_by
        except Exception:  # noqa: BLE001 - not the usual validator: the long way says why
            return the_long_way(self, parameters, args, kwargs)
        try:
            done = _fast.validate(
                parameters, spec, exclusive, together, one_of, required_if, required_by,
                parameters_module.DEFAULT_TYPE_VALIDATORS, arg_spec_module.set_fallbacks,
            )
        except Exception:  # noqa: BLE001 - an internal error: counted, and the long way answers
            _counters.fallback(_PATH, "internal: native validate error")
            done = None
        if done is None:
            return the_long_way(self, parameters, args, kwargs)
        if type(done) is list:
            # A new result (made as ValidationResult.__new__ makes it) and its attributes, set
            # as its __init__ sets them, in its order.
            (result, result._no_log_values, result._unsupported_parameters, result._supported_parameters,
             result._validated_parameters, result._deprecations, result._warnings, result._aliases,
             result.errors) = done
            return result
        reason, given, found = done  # given up after ansible-core's fallbacks ran
        if given is None:  # set_fallbacks raised `found`
            return _counters.call_original(_PATH, reason, raised_again, self, parameters, found, args, kwargs)
        return _counters.call_original(_PATH, reason, given_back, self, parameters, given, found, args, kwargs)

    validate.__ansible_accel_original__ = original  # type: ignore[attr-defined]
    return validate


class _LongWay:
    """The calls the fast path of one replaced ``validate`` does not take: tagged controller
    data, and those given to ansible-core (each counted with its reason)."""

    __slots__ = (
        "arg_spec_module", "errors_module", "make", "original", "parameters_module", "secrets", "tagged_dict",
        "validators_seen", "validators_then",
    )

    def __init__(self, original: t.Callable, arg_spec_module: t.Any, errors_module: t.Any) -> None:
        self.original, self.arg_spec_module, self.errors_module = original, arg_spec_module, errors_module
        self.secrets = getattr(arg_spec_module, "_secrets", None)  # 2.22+: validate registers no_log values
        self.make = _result_factory(arg_spec_module.ValidationResult, errors_module)
        from ansible.module_utils.common import parameters as parameters_module

        self.parameters_module = parameters_module
        _register_tagged_types()
        try:
            from ansible.module_utils._internal._datatag import _AnsibleTaggedDict as tagged_dict
        except ImportError:
            tagged_dict = dict
        self.tagged_dict = tagged_dict
        self.validators_seen = parameters_module.DEFAULT_TYPE_VALIDATORS
        self.validators_then = dict(self.validators_seen)

    def given_back(self, validator, parameters, given, fallback_no_log, args, kwargs):
        """ansible-core's validate(), reusing the fallbacks the native attempt already ran."""
        original = self.original
        if given is parameters:
            return original(validator, parameters, *args, **kwargs)
        added = {key: value for key, value in given.items() if key not in parameters}
        _replay.pending = (validator.argument_spec, added, fallback_no_log)
        try:
            return original(validator, parameters, *args, **kwargs)
        finally:
            _replay.pending = None

    def raised_again(self, validator, parameters, raised, args, kwargs):
        """ansible-core's validate(), whose set_fallbacks raises ``raised`` (what the native
        attempt's call raised) instead of running the fallbacks a second time."""
        _replay.pending = (validator.argument_spec, raised, None)
        try:
            return self.original(validator, parameters, *args, **kwargs)
        finally:
            _replay.pending = None

    def run(self, validator, parameters, args, kwargs):
        """The spec compiled and ansible-core's fallbacks run, then `validate_natively`."""
        original = self.original
        validators = self.parameters_module.DEFAULT_TYPE_VALIDATORS
        if validators is not self.validators_seen or validators != self.validators_then:
            # The core converts the builtin types itself: a replaced checker is not its to run.
            reason = "spec: DEFAULT_TYPE_VALIDATORS changed"
            return _counters.call_original(_PATH, reason, original, validator, parameters, *args, **kwargs)
        compiled = _compile_spec(validator)
        if isinstance(compiled, str):
            return _counters.call_original(_PATH, compiled, original, validator, parameters, *args, **kwargs)
        given = parameters
        fallback_no_log: t.Any = ()
        if compiled.has_fallbacks():
            if not isinstance(parameters, dict) or (type(parameters) is not dict and type(parameters) is not self.tagged_dict):
                reason = "value: parameters not a dict"
                return _counters.call_original(_PATH, reason, original, validator, parameters, *args, **kwargs)
            # ansible-core's own set_fallbacks, first as in validate(), on a copy we own.
            try:
                given = dict(parameters)
                fallback_no_log = self.arg_spec_module.set_fallbacks(validator.argument_spec, given)
            except Exception as ex:  # noqa: BLE001 - ansible-core's validate meets it again
                reason = "value: fallback raised"
                return _counters.call_original(_PATH, reason, self.raised_again, validator, parameters, ex, args, kwargs)
        return self.validate_natively(validator, parameters, compiled, given, fallback_no_log, args, kwargs)

    def validate_natively(self, validator, parameters, compiled, given, fallback_no_log, args, kwargs):
        """The core's validation of ``given`` (``parameters`` with the fallbacks' values added),
        made into ansible-core's result, with its tagged objects where the data is tagged."""
        try:
            outcome = compiled.validate(given)
        except Exception:  # noqa: BLE001 - counted; ansible-core's own code gives the answer
            outcome = "value: native validate error"
        if isinstance(outcome, str):
            return _counters.call_original(
                _PATH, outcome, self.given_back, validator, parameters, given, fallback_no_log, args, kwargs
            )
        tagged = outcome[7] or compiled.tagged() or type(parameters) is not dict
        if tagged and any("<class '" in message for _, message in outcome[1]):
            # The message names the type of a value the core saw as a builtin, not tagged.
            reason = "value: type named in an error about a tagged value"
            return _counters.call_original(
                _PATH, reason, self.given_back, validator, parameters, given, fallback_no_log, args, kwargs
            )
        result = _build_result(self.make, self.errors_module, compiled, outcome)
        result._no_log_values.update(fallback_no_log)
        if tagged:
            try:
                spec = validator.argument_spec
                no_log = [*((value, "fallback") for value in fallback_no_log), *outcome[3]]
                _retag_result(result, spec, parameters, given, dict(outcome[8]), _spec_strings(compiled, spec), no_log)
            except _Ambiguous:
                reason = "value: equal strings of different tags in a tagged result"
                return _counters.call_original(
                    _PATH, reason, self.given_back, validator, parameters, given, fallback_no_log, args, kwargs
                )
        if outcome[6]:
            warn = self.parameters_module.warn  # what _validate_sub_spec calls, looked up as it does
            for message in outcome[6]:
                warn(message)
        if self.secrets is not None:
            self.secrets.register_secrets(result._no_log_values)
        _counters.native(_PATH)
        return result


# --- the public function -----------------------------------------------------------------------

_CHECKS = ("mutually_exclusive", "required_together", "required_one_of", "required_if", "required_by")
_own_validates: dict[int, tuple[t.Callable, t.Callable]] = {}
_own_validates_lock = threading.Lock()


def validate(
    argument_spec: t.Mapping[str, t.Any],
    parameters: t.Mapping[str, t.Any],
    *,
    mutually_exclusive: t.Sequence[t.Sequence[str]] | None = None,
    required_together: t.Sequence[t.Sequence[str]] | None = None,
    required_one_of: t.Sequence[t.Sequence[str]] | None = None,
    required_if: t.Sequence[t.Sequence[t.Any]] | None = None,
    required_by: t.Mapping[str, t.Any] | None = None,
) -> t.Any:
    """Validate ``parameters`` against ``argument_spec`` as the installed ansible-core does.

    Returns the ``ansible.module_utils.common.arg_spec.ValidationResult`` that
    ``ArgumentSpecValidator(argument_spec, mutually_exclusive, required_together,
    required_one_of, required_if, required_by).validate(parameters)`` returns: its
    ``validated_parameters``, ``errors`` (an ``AnsibleValidationErrorMultiple``; validation
    failures are reported there, not raised), ``error_messages``, ``unsupported_parameters``
    and its warnings, deprecations and no_log values.  On ansible-core 2.22 the no_log values
    found are registered with ansible-core's secret masker, as its ``validate`` does.
    ``parameters`` is not changed.

    Raises ``TypeError`` when ``argument_spec``, one of its options or ``parameters`` is not a
    mapping; anything else is what ansible-core's own ``ArgumentSpecValidator`` raises for the
    same input (such as a ``ValueError`` for a ``required_if`` entry that is too short).

    Falls back to ansible-core's own ``validate`` (counted under ``argspec`` in
    ``ansible_accel.status()``, with the reason) for whatever the native engine does not handle
    exactly, for every call when ansible-core's version is not supported or the native engine
    is missing, and for specs with ``fallback`` entries while the argspec path is not switched
    on by ``ansible_accel.install()`` (their calls are then not repeated by a retry).
    """
    if not isinstance(argument_spec, _abc.Mapping):
        raise TypeError(f"argument_spec must be a mapping, not {type(argument_spec).__name__}")
    if not isinstance(parameters, _abc.Mapping):
        raise TypeError(f"parameters must be a mapping, not {type(parameters).__name__}")
    for name, option in argument_spec.items():
        if not isinstance(option, _abc.Mapping):
            raise TypeError(f"argument_spec[{name!r}] must be a mapping, not {type(option).__name__}")
    from ansible.module_utils.common import arg_spec as arg_spec_module

    validator = arg_spec_module.ArgumentSpecValidator(
        argument_spec, mutually_exclusive=mutually_exclusive, required_together=required_together,
        required_one_of=required_one_of, required_if=required_if, required_by=required_by,
    )
    installed = arg_spec_module.ArgumentSpecValidator.__dict__.get("validate")
    if getattr(installed, "__ansible_accel_original__", None) is not None:
        return validator.validate(parameters)  # the native path install() put in place
    original, native = _own_validate(arg_spec_module, installed)
    if native is None:
        return original(validator, parameters)
    compiled = _compile_spec(validator)
    if not isinstance(compiled, str) and compiled.has_fallbacks() and not hasattr(
        arg_spec_module.set_fallbacks, "__ansible_accel_original__"
    ):
        reason = "spec: fallbacks while the argspec path is not installed"
        return _counters.call_original(_PATH, reason, original, validator, parameters)
    return native(validator, parameters)


def _own_validate(arg_spec_module: t.Any, current: t.Any) -> tuple[t.Callable, t.Callable | None]:
    """ansible-core's own ``validate`` and a native one made on it for :func:`validate` (None,
    with the reason counted, where this ansible-core or build has no native path)."""
    key = id(current)
    kept = _own_validates.get(key)
    if kept is not None and kept[0] is current:
        return kept
    from . import _activation

    reason = _activation.version_support(_activation.core_version())
    if reason is None and not hasattr(_native, "ArgspecFastPath"):
        reason = "this build of the native module has no argspec engine"
    if reason is not None:
        _counters.fallback(_PATH, reason)
        return current, None
    from ansible.module_utils import errors as errors_module

    with _own_validates_lock:
        kept = (current, _make_validate(current, arg_spec_module, errors_module))
        _own_validates[key] = kept
    return kept
