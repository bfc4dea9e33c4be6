"""Native ``no_log`` scrubbing for ansible-core 2.19–2.21, with ansible-core's results.

``remove_values``, ``sanitize_keys`` (``ansible.module_utils.common.parameters``) and
``heuristic_log_sanitize`` (``ansible.module_utils.basic``) take the same arguments and return
the same values, types and exceptions as the installed ansible-core's.  The string work
(``str.replace`` once per no_log value, in ansible-core's order) and the structure walk run in
Rust; values the walk does not know exactly (subclasses, tagged values, dates, unknown types)
go through ansible-core's own per-value helpers, so they come out exactly as there.

On ansible-core 2.22 these functions are deprecated: each call records a deprecation that names
its caller's stack frame, which a replacement cannot reproduce, so there every call goes to
ansible-core's own function (counted as a fallback).
"""

from __future__ import annotations

import typing as t

from ansible.module_utils import basic as _basic
from ansible.module_utils.common import parameters as _parameters

from . import _counters, _native
from ._activation import core_minor as _core_minor

_PATH = "no_log"
_CORE_DEPRECATED = _core_minor() >= (2, 22)
_DEPRECATED_REASON = "deprecated in ansible-core 2.22 (its deprecation names the caller's frame)"

# ansible-core's own functions, captured before install() can replace the module attributes.
_original_remove_values = _parameters.remove_values
_original_sanitize_keys = _parameters.sanitize_keys
_original_heuristic_log_sanitize = _basic.heuristic_log_sanitize


def _unpack_pair(item: t.Any) -> tuple[t.Any, t.Any]:
    key, value = item  # the unpacking errors of ``for key, value in items()``
    return key, value


_CONTEXT = _native.NoLogContext(
    _parameters._remove_values_conditions,
    _parameters._sanitize_keys_conditions,
    _parameters.Mapping,
    _parameters.MutableSequence,
    _parameters.MutableSet,
    _unpack_pair,
)

# No lock: single dict operations are atomic, a lost insert only costs a rebuild, and a lock
# held by another thread at fork() would deadlock the child.
_MATCHER_CACHE_SIZE = 64
_matchers: dict[tuple[str, ...], _native.NoLogMatcher] = {}


def _ordered(no_log_strings: t.Iterable[t.Any]) -> list[str]:
    """The no_log values as ansible-core uses them: text, longest first, ties in given order."""
    texts = [_parameters.to_native(s, errors="surrogate_or_strict") for s in no_log_strings]
    return sorted(texts, key=len, reverse=True)


def _compares_as_str(value: str) -> bool:
    kind = type(value)
    return kind is str or (kind.__eq__ is str.__eq__ and kind.__hash__ is str.__hash__)


def _matcher(strings: list[str]) -> _native.NoLogMatcher | str:
    """The compiled values, or the reason they are left to ansible-core's own code."""
    if not all(_compares_as_str(s) for s in strings):
        return "no_log value of a str type with its own __eq__ or __hash__"
    key = tuple(strings)
    matcher = _matchers.get(key)
    if matcher is None:
        matcher = _native.no_log_matcher(strings)
        if isinstance(matcher, str):
            return matcher
        if len(_matchers) >= _MATCHER_CACHE_SIZE:
            _matchers.clear()
        _matchers[key] = matcher
    return matcher


def _count_delegated(n: int) -> None:
    if n:
        _counters.extra(_PATH, "values handed to ansible-core's helper", n)


def remove_values(value: t.Any, no_log_strings: t.Iterable[t.Any]) -> t.Any:
    """What ``ansible.module_utils.common.parameters.remove_values(value, no_log_strings)``
    returns: a copy of ``value`` (str, bytes, containers, nested) where a text equal to a
    no_log value becomes ``VALUE_SPECIFIED_IN_NO_LOG_PARAMETER`` and every occurrence inside
    a longer text becomes ``********``.  Raises what ansible-core's raises for the same input
    (``TypeError`` for a value of a type it does not know...).  Falls back to ansible-core's
    own function (counted under ``no_log``) on 2.22, where it is deprecated, and for no_log
    values of str subclasses with their own comparison."""
    if _CORE_DEPRECATED:
        return _counters.call_original(_PATH, _DEPRECATED_REASON, _original_remove_values, value, no_log_strings)
    strings = _ordered(no_log_strings)
    matcher = _matcher(strings)
    if isinstance(matcher, str):
        return _counters.call_original(_PATH, matcher, _original_remove_values, value, strings)
    try:
        answer = _native.remove_values_walk(value, matcher, strings, _CONTEXT)
    except BaseException:
        _counters.native(_PATH)  # ansible-core's own error, raised natively
        raise
    if isinstance(answer, str):
        return _counters.call_original(_PATH, answer, _original_remove_values, value, strings)
    result, delegated = answer
    _counters.native(_PATH)
    _count_delegated(delegated)
    return result


def sanitize_keys(obj: t.Any, no_log_strings: t.Iterable[t.Any], ignore_keys: t.Container[t.Any] = frozenset()) -> t.Any:
    """What ``ansible.module_utils.common.parameters.sanitize_keys`` returns: a copy of
    ``obj`` whose dict keys (except ``ignore_keys``) have the no_log values masked as
    :func:`remove_values` masks texts.  Raises and falls back as :func:`remove_values`."""
    if _CORE_DEPRECATED:
        return _counters.call_original(_PATH, _DEPRECATED_REASON, _original_sanitize_keys, obj, no_log_strings, ignore_keys)
    strings = _ordered(no_log_strings)
    matcher = _matcher(strings)
    if isinstance(matcher, str):
        return _counters.call_original(_PATH, matcher, _original_sanitize_keys, obj, strings, ignore_keys)
    try:
        answer = _native.sanitize_keys_walk(obj, matcher, strings, ignore_keys, _CONTEXT)
    except BaseException:
        _counters.native(_PATH)  # ansible-core's own error, raised natively
        raise
    if isinstance(answer, str):
        return _counters.call_original(_PATH, answer, _original_sanitize_keys, obj, strings, ignore_keys)
    result, delegated = answer
    _counters.native(_PATH)
    _count_delegated(delegated)
    return result


def _scans_as_str(data: str) -> bool:
    kind = type(data)
    return kind is str or all(
        getattr(kind, name) is getattr(str, name) for name in ("rindex", "index", "__getitem__", "__len__")
    )


def heuristic_log_sanitize(data: t.Any, no_log_values: t.Iterable[t.Any] | None = None) -> str:
    """What ``ansible.module_utils.basic.heuristic_log_sanitize`` returns: ``data`` with what
    looks like a password in a URL (``user:password@``) masked, then ``no_log_values``
    removed as :func:`remove_values` does.  Falls back as :func:`remove_values`, and for a
    text of a str subclass with its own searching or slicing."""
    if _CORE_DEPRECATED:
        return _counters.call_original(_PATH, _DEPRECATED_REASON, _original_heuristic_log_sanitize, data, no_log_values)
    data = _basic.to_native(data)
    if not (isinstance(data, str) and _scans_as_str(data)):
        reason = "text of a str type with its own search or slicing"
        return _counters.call_original(_PATH, reason, _original_heuristic_log_sanitize, data, no_log_values)
    answer = _native.heuristic_scan_text(data)
    if isinstance(answer, str):
        return _counters.call_original(_PATH, answer, _original_heuristic_log_sanitize, data, no_log_values)
    (output,) = answer
    _counters.native(_PATH)
    if output is None:
        output = data[0 : len(data)]  # ansible-core returns this slice: the same object for a str
    if no_log_values:
        output = _basic.remove_values(output, no_log_values)
    return output
