"""The ``argspec`` path's controller data: ansible-core's tagged types.

On the controller (2.19+) specs and parameters come from YAML and templating as tagged
subclasses of str, int, float, list and dict that carry origin tags.  The core reads them as
the builtin values they are; the result is then rebuilt the way ansible-core's validate()
builds it: the deep copy of the parameters, changed only where a check replaced a value, so
every value a check returns unchanged is the (copied) tagged object, and defaults, aliases
and fallbacks share the objects ansible-core would put there.

Used by ``argspec`` (its native ``validate``), whose own names these are.
"""

from __future__ import annotations

import copy
import functools
import typing as t

from . import _native

_MISSING = object()
# Types whose checker always makes a new object, even for an equal value.
_ALWAYS_NEW = frozenset({"jsonarg", "json", "bytes", "bits"})


_CONTAINERS: set = {dict, list}
_IMMUTABLE: set = {str, int, float, bool, type(None)}


def _register_tagged_types() -> None:
    """Tells the native module which classes are ansible-core's tagged builtins (2.19+)."""
    try:
        from ansible.module_utils._internal import _datatag as tags
    except ImportError:
        return
    _native.argspec_tagged_types([
        tags._AnsibleTaggedStr, tags._AnsibleTaggedInt, tags._AnsibleTaggedFloat,
        tags._AnsibleTaggedList, tags._AnsibleTaggedDict,
    ])
    _CONTAINERS.update((tags._AnsibleTaggedList, tags._AnsibleTaggedDict))
    _IMMUTABLE.update((tags._AnsibleTaggedStr, tags._AnsibleTaggedInt, tags._AnsibleTaggedFloat))


def _copy_params(obj: t.Any, memo: dict) -> t.Any:
    """What ``deepcopy`` gives for parameters, faster: containers copied with their tags
    (and sharing kept), immutable values (tagged or not) shared rather than rebuilt with the
    same value and tags."""
    kind = type(obj)
    if kind in _IMMUTABLE:
        return obj
    if kind not in _CONTAINERS:
        return copy.deepcopy(obj, memo)
    found = memo.get(id(obj))
    if found is not None:
        return found
    new = copy.copy(obj)
    memo[id(obj)] = new
    memo.setdefault(id(memo), []).append(obj)  # keep obj alive, as deepcopy's memo does
    if isinstance(new, dict):
        for key, value in new.items():
            if type(value) not in _IMMUTABLE:
                new[key] = _copy_params(value, memo)
    else:
        for index, value in enumerate(new):
            if type(value) not in _IMMUTABLE:
                new[index] = _copy_params(value, memo)
    return new


def _kept(old: t.Any, new: t.Any, kind: t.Any) -> t.Any:
    """``old`` where ansible-core's checker returns its argument as it is, else ``new``
    (callables as type too: the glue gave them a copy of ``old``, and a callable returning
    an equal value of the same builtin type is taken to return its argument)."""
    if old is new:
        return old
    if isinstance(kind, str) and kind in _ALWAYS_NEW:
        return new
    if new is None or type(new) is bool:
        return new
    base = type(new)
    if isinstance(old, base) and not isinstance(old, bool):
        if old == new or (base is float and old != old and new != new):
            return old
    return new


def _pick(old: t.Any, new: t.Any, option: t.Any) -> t.Any:
    """The object ansible-core leaves for an option whose checked value is ``new`` and whose
    value before the checks was ``old`` (``_MISSING``: none)."""
    if old is _MISSING or not isinstance(option, dict):
        return new
    kind = option.get("type", "str")
    sub = option.get("options")
    elements = option.get("elements")
    if kind == "list" and isinstance(old, str) and old == "" and new == [""]:
        old = [old]  # check_type_list splits a str, and str.split gives an empty one as it is
    if isinstance(sub, dict):
        if kind == "list" and elements == "dict" and isinstance(new, list):
            # _validate_elements makes a new list of the (checked in place) element dicts.
            olds = old if isinstance(old, list) and len(old) == len(new) else [None] * len(new)
            return [_merge_into(o if isinstance(o, dict) else {}, n, sub) if isinstance(n, dict) else n
                    for o, n in zip(olds, new)]
        if isinstance(new, dict):
            return _merge_into(old if isinstance(old, dict) else {}, new, sub)
        return new
    if kind == "list" and elements and isinstance(new, list):
        if isinstance(old, list) and len(old) == len(new):
            return [_kept(o, n, elements) for o, n in zip(old, new)]
        return new
    return _kept(old, new, kind)


def _merge_into(target: dict, checked: dict, spec: dict, fallbacks: t.Any = None, returned: dict | None = None) -> dict:
    """Makes ``target`` (ansible-core's copy of one parameter dict) hold ``checked`` (the core's
    result for it), keeping the objects ansible-core keeps."""
    names = {name: name for name in spec}
    for key, value in checked.items():
        option = spec.get(key)
        present = key in target
        if present and option is None:
            continue  # not an option: ansible-core leaves it alone
        source: t.Any = target[key] if present else _MISSING
        if isinstance(option, dict):
            # _handle_aliases copies an alias's value over the option's, given or not.
            for alias in option.get("aliases") or ():
                if alias in target:
                    source = target[alias]
        if not present and isinstance(option, dict):
            if source is _MISSING and fallbacks is not None and key in fallbacks:
                source = fallbacks[key]
            if source is _MISSING and option.get("default") is not None:
                source = option["default"]
            if source is _MISSING and isinstance(value, dict) and option.get("apply_defaults"):
                source = {}  # the dict _validate_sub_spec adds, then fills
        new = _pick(source, value, option)
        if returned and key in returned and type(returned[key]) is not bool and returned[key] == value:
            new = returned[key]  # the callable's own object, its items' tags kept
        if not present:
            target[names.get(key, key)] = new
        elif new is not target[key]:
            target[key] = new
    return target


class _Strings(dict):
    """Every str object met (dict keys too) by its text, the first of equal ones kept, and the
    texts met as objects that differ in more than identity (type or tags): for those, which one
    ansible-core's result holds depends on where it took it from, which a lookup by text cannot
    tell (`pick` raises `_Ambiguous`)."""

    def __init__(self) -> None:
        super().__init__()
        self.ambiguous: set = set()

    def add(self, obj: str) -> None:
        kept = self.setdefault(obj, obj)
        if kept is obj or type(kept) is str is type(obj) or kept in self.ambiguous:
            return  # (two exact strs carry no tags)
        if _flavor(kept) != _flavor(obj):
            self.ambiguous.add(kept)

    def pick(self, text: str, default: t.Any) -> t.Any:
        if text in self.ambiguous:
            raise _Ambiguous(text)
        return self.get(text, default)


class _Ambiguous(Exception):
    """A result string whose object cannot be told by its text (see `_Strings`)."""


def _flavor(obj: str) -> tuple:
    """What tells equal strings apart but their identity: type and tags."""
    return type(obj), _tags_of()(obj)


@functools.cache
def _tags_of() -> t.Callable[[t.Any], t.Any]:
    from ansible.module_utils._internal._datatag import AnsibleTagHelper

    return AnsibleTagHelper.tags


_SPEC_STRINGS: dict[int, tuple[t.Any, t.Any, _Strings]] = {}


def _spec_strings(compiled: t.Any, spec: dict) -> _Strings:
    """The str objects of ``spec`` (`_strings`), walked once per compiled spec: a compiled spec
    is the same object only while its spec is the same, unchanged objects
    (`argspec._compile_spec`), and the strings found are only read."""
    kept = _SPEC_STRINGS.get(id(compiled))
    if kept is not None and kept[0] is compiled and kept[1] is spec:
        return kept[2]
    found = _strings(spec, _Strings())
    if len(_SPEC_STRINGS) >= 64:
        _SPEC_STRINGS.clear()
    _SPEC_STRINGS[id(compiled)] = (compiled, spec, found)
    return found


def _strings(obj: t.Any, found: _Strings, keys: bool = True, depth: int = 0) -> _Strings:
    """Every str object in ``obj`` (dict keys too) added to ``found``."""
    if depth > 64:
        return found
    if isinstance(obj, str):
        found.add(obj)
    elif isinstance(obj, dict):
        for key, value in obj.items():
            if keys and isinstance(key, str):
                found.add(key)
            _strings(value, found, keys, depth + 1)
    elif isinstance(obj, (list, tuple)):
        for item in obj:
            _strings(item, found, keys, depth + 1)
    return found


def _retag_result(result: t.Any, spec: dict, parameters: t.Any, given: t.Any, returned: dict | None = None,
                 in_spec: _Strings | None = None, no_log: t.Iterable[tuple[t.Any, str]] = ()) -> None:
    """Puts the tagged objects ansible-core's validate() would hold into a native ``result``
    (whose strings and containers are builtins); ``returned``: what callable types returned
    for options given tagged values, which ansible-core's result holds as they are;
    ``in_spec``: the spec's strings, if found before (`_spec_strings`); ``no_log``: the no_log
    values of the fallbacks and of the core, each with where its object is ("fallback": the
    value itself; "given", "default" or "plain", from the core).
    Raises `_Ambiguous` (before changing ``result``) where a string's object cannot be told by
    its text: the caller then leaves the call to ansible-core."""
    base = _copy_params(parameters, {})
    fallbacks = given if given is not parameters else None
    in_params = _strings(base, _Strings())
    validated = _merge_into(base, result._validated_parameters, spec, fallbacks, returned)
    if in_spec is None:
        in_spec = _strings(spec, _Strings())
    if fallbacks is not None:
        _strings(fallbacks, in_params)
    _strings(validated, in_params, keys=False)
    param = in_params.pick
    named = in_spec.pick
    secrets = _Strings()
    for text, source in no_log:
        if not isinstance(text, str):
            continue
        if source == "given":
            secrets.add(param(text, text))
        elif source == "default":
            secrets.add(named(text, text))
        else:
            secrets.add(text)  # a fallback's own object, or a new, plain str (str() of an int)
    # The set holds the first of equal strings added: one object, unless their tags differ.
    no_log_values = {secrets.pick(v, v) if isinstance(v, str) else v for v in result._no_log_values}

    def path_object(item: t.Any) -> t.Any:
        # A sub-option's path: the spec's option names (ansible-core's options_context), then
        # the key of the parameters.
        if isinstance(item, tuple):
            return (*(named(p, p) for p in item[:-1]), param(item[-1], item[-1]))
        return param(item, item)

    unsupported = {path_object(item) for item in result._unsupported_parameters}
    supported = {
        path_object(path): ([named(n, n) for n in names], {named(a, a): named(o, o) for a, o in aliases.items()})
        for path, (names, aliases) in result._supported_parameters.items()
    }
    aliases = {named(a, a): named(o, o) for a, o in result._aliases.items()}
    warnings = [{k: named(v, v) for k, v in w.items()} for w in result._warnings]
    deprecations = [{k: (v if k == "msg" else named(v, v) if isinstance(v, str) else v) for k, v in d.items()}
                    for d in result._deprecations]
    result._validated_parameters = validated
    result._no_log_values = no_log_values
    result._unsupported_parameters = unsupported
    result._supported_parameters = supported
    result._aliases = aliases
    result._warnings = warnings
    result._deprecations = deprecations
