"""Registered-secret masking as ansible-core 2.22 does it, on the native engine.

``SecretMasker`` has 2.22's methods and results (registration with its stripping rule and
JSON forms, new-secret trackers, a fork-safe lock, ``mask_string``, ``secrets_in_json``);
``SecretMatcher`` has 2.22's matcher interface (``add``, ``spans``).  The module functions
``register_secret``, ``register_secrets``, ``mask_secrets`` and ``mask_object`` work on one
shared masker: on ansible-core 2.22 that is ansible-core's own (so both see the same secrets),
elsewhere this module's own.

``mask(value, secrets)`` hides a given set of secrets in a text or an object the way the
installed ansible-core hides them: 2.22's registered-secret masking there, ``remove_values``
(the no_log scrubbing) on 2.19–2.21, which have no registered-secret masking.

Any failure inside masking raises ``AnsibleSecretMaskError("secret masking failed")`` with no
cause or context, so the exception can never carry the value it failed to mask.
"""

from __future__ import annotations

import collections.abc as _c
import sys as _sys
import threading as _threading
import typing as _t

from . import _counters, _fork
from ._native import MaskTooDeep as _MaskTooDeep
from ._native import SecretMatcher
from ._native import SecretRegistry as _SecretRegistry
from ._native import mask_object_walk as _mask_object_walk

__all__ = [
    "AnsibleSecretMaskError",
    "NewSecretTracker",
    "SecretMasker",
    "SecretMatcher",
    "mask",
    "mask_object",
    "mask_secrets",
    "register_secret",
    "register_secrets",
]

_PATH = "masking"
_STRIP_CHARS = " \t\r\n"
_EMPTY: frozenset[str] = frozenset()


def _core_secrets_module() -> _t.Any:
    """ansible-core's ``_secrets`` module when it has a masker (2.22 and later), else None."""
    try:
        from ansible.module_utils._internal import _secrets
    except Exception:  # noqa: BLE001 - before 2.22 (or without ansible-core) there is none
        return None
    return _secrets if hasattr(_secrets, "SecretMasker") else None


_core = _core_secrets_module()

if _core is not None:
    AnsibleSecretMaskError = _core.AnsibleSecretMaskError
else:

    class AnsibleSecretMaskError(Exception):  # type: ignore[no-redef]
        """Raised when secret masking fails; carries nothing of the value being masked."""


def _mask_failed() -> AnsibleSecretMaskError:
    return AnsibleSecretMaskError("secret masking failed")


class _ForkSafeLock:
    """A lock held across ``os.fork()`` so a child never inherits it locked by a thread that
    does not exist there (the same contract as ansible-core's ``ForkSafeLock``)."""

    _FORK_TIMEOUT = 10

    def __init__(self) -> None:
        self._lock = _threading.Lock()
        self._held_for_fork = False
        _fork.register(before=self._before_fork, after_in_parent=self._after_fork, after_in_child=self._after_fork)

    def _before_fork(self) -> None:
        self._held_for_fork = self._lock.acquire(timeout=self._FORK_TIMEOUT)
        if not self._held_for_fork:
            raise RuntimeError("timed out acquiring lock before fork")

    def _after_fork(self) -> None:
        if self._held_for_fork:
            self._held_for_fork = False
            self._lock.release()

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        return self._lock.acquire(blocking=blocking, timeout=timeout)

    def release(self) -> None:
        self._lock.release()

    def locked(self) -> bool:
        return self._lock.locked()

    def __enter__(self) -> _ForkSafeLock:
        self._lock.acquire()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._lock.release()


class NewSecretTracker:
    """Collects the secrets registered after it was created, until flushed or unregistered."""

    def __init__(self, masker: SecretMasker) -> None:
        self._new_secrets: set[str] = set()
        self._masker = masker

    def unregister(self) -> None:
        with self._masker._lock:
            self._masker._new_secret_trackers.discard(self)

    def flush(self) -> frozenset[str]:
        with self._masker._lock:
            if not self._new_secrets:
                return _EMPTY
            flushed = frozenset(self._new_secrets)
            self._new_secrets = set()
        return flushed


class SecretMasker:
    """A registry of secrets and the masking of every occurrence of them, on the native engine.

    Each instance registers fork handlers for its lock, so like 2.22's it is meant to be
    long-lived (use the shared one through the module functions where possible).
    """

    def __init__(self) -> None:
        self._new_secret_trackers: set[NewSecretTracker] = set()
        self._lock = _ForkSafeLock()
        self._registry = _SecretRegistry()

    def track_new_secrets(self) -> NewSecretTracker:
        with self._lock:
            self._new_secret_trackers.add(tracker := NewSecretTracker(self))
        return tracker

    def register_secret_text(self, secret: str, /) -> str:
        """Register a secret for masking, returning the value unchanged."""
        self.register_secret_texts((secret,))
        return secret

    def register_secret_texts(self, secrets: _c.Iterable[str], /) -> None:
        """Register every secret in ``secrets`` for masking."""
        with self._lock:
            texts: list[str] = []
            try:
                for secret in secrets:
                    if isinstance(secret, str):
                        texts.append(secret)
                    else:
                        _reject_non_text(secret)
            finally:
                # As in 2.22, what came before a bad item stays registered; only a complete
                # batch reaches the trackers.
                new = self._registry.register(texts)
            for tracker in self._new_secret_trackers:
                tracker._new_secrets.update(new)

    def mask_string(self, value: str, /, *, mask_placeholder: str = "$REDACTED$", acquire_lock: bool = True) -> str:
        """``value`` with every registered secret replaced by ``mask_placeholder``."""
        if not value:
            return value
        registry = self._registry
        result = _fail_closed(
            self,
            acquire_lock,
            lambda: value if registry.is_empty() else _mask_text(registry, value, mask_placeholder),
        )
        _counters.native(_PATH)
        return result

    def secrets_in_json(self, value: str) -> frozenset[str]:
        """The registered secrets present in a JSON document, as their literal values."""
        if not value:
            return _EMPTY
        with self._lock:
            found = self._registry.secrets_in_json(value)
        _counters.native(_PATH)
        return frozenset(found) if found else _EMPTY


def _fail_closed(masker: _t.Any, acquire_lock: bool, compute: _c.Callable[[], _t.Any]) -> _t.Any:
    """``compute()``, holding ``masker._lock`` if ``acquire_lock``; any failure (reaching the
    lock included, as in 2.22) raises ``AnsibleSecretMaskError`` with no cause or context
    that could carry the value."""
    failed = False
    try:
        if acquire_lock:
            with masker._lock:
                result = compute()
        else:
            result = compute()
    except Exception:  # noqa: BLE001 - any failure is reported without the value
        failed = True
    if failed:
        raise _mask_failed() from None
    return result


def _reject_non_text(secret: object) -> None:
    """Fail on a non-``str`` secret the way 2.22's registration does (it strips, then encodes)."""
    trimmed = secret.strip(_STRIP_CHARS)  # type: ignore[attr-defined]
    if trimmed:
        raise TypeError(f"first argument must be a string, not {type(trimmed).__name__}")


def _mask_text(engine: _t.Any, value: _t.Any, placeholder: _t.Any) -> _t.Any:
    """``engine.mask`` (engine non-empty) for what 2.22's masker accepts: a non-``str`` value or
    placeholder only works while nothing has to be replaced (``bytes`` never match a secret)."""
    if isinstance(value, str):
        if isinstance(placeholder, str):
            return engine.mask(value, placeholder)
        if not engine.spans(value):
            return value
        raise TypeError("placeholder is not a str")
    if isinstance(value, bytes):
        return value
    raise TypeError("value is not a str")


# --- the shared masker and the module functions ----------------------------------------------

_own_masker: SecretMasker | None = None
_own_masker_lock = _threading.Lock()


def _shared_masker() -> _t.Any:
    """ansible-core's shared masker on 2.22, this module's own elsewhere."""
    global _own_masker
    if _core is not None:
        return _core._secret_masker
    if _own_masker is None:
        with _own_masker_lock:
            if _own_masker is None:
                _own_masker = SecretMasker()
    return _own_masker


def register_secret(value: str, /) -> str:
    """Register a single secret so it will be redacted from masked output, returning the value unchanged."""
    return _shared_masker().register_secret_text(value)


def register_secrets(values: _c.Iterable[str], /) -> None:
    """Register multiple secrets so they will be redacted from masked output."""
    _shared_masker().register_secret_texts(values)


def mask_secrets(value: str, /, *, mask_placeholder: str = "$REDACTED$") -> str:
    """Return a copy of the string with every registered secret it contains replaced by the placeholder."""
    return _shared_masker().mask_string(value, mask_placeholder=mask_placeholder)


def mask_object(
    value: _t.Any,
    /,
    *,
    mask_placeholder: str = "$REDACTED$",
    lines_keys: dict[str, str] | None = None,
) -> _t.Any:
    """Recursively mask registered secrets in the dict or list ``value``.

    ``lines_keys`` maps the key of a text to the key of that text split into lines (such as
    ``{'stdout': 'stdout_lines'}``), under every dict: lines that still equal the text's
    ``splitlines()`` are rebuilt from the masked text rather than masked line by line.
    """
    return _mask_object_with(_shared_masker(), value, mask_placeholder, lines_keys)


def _mask_object_with(masker: _t.Any, value: _t.Any, placeholder: _t.Any, lines_keys: dict[str, str] | None) -> _t.Any:
    """``mask_object`` on ``masker``: one of ours, or ansible-core's (native matcher or not)."""
    failed = False
    with masker._lock:
        # Chosen with the lock held: the accelerator swaps ansible-core's matcher under it.
        if isinstance(masker, SecretMasker):
            engine: _t.Any = masker._registry
            empty = engine.is_empty()
        else:
            engine = masker._matcher
            empty = not masker._forms
        if empty:
            return value
        # 2.22's walk masks each string through ``masker.mask_string``: one overridden (on the
        # instance or in a subclass) must be called, so only the known ones are bypassed.
        native = (
            type(engine) in (_SecretRegistry, SecretMatcher)
            and "mask_string" not in vars(masker)
            and getattr(type(masker), "mask_string", None) in _plain_mask_strings
        )
        try:
            if native and isinstance(placeholder, str):
                result = _native_walk(engine, value, placeholder, lines_keys or {})
            else:
                mask_text = _native_text_masker(engine, placeholder) if native else _python_text_masker(masker, placeholder)
                result = _ObjectMasker(mask_text, lines_keys or {}).mask(value)
        except Exception:  # noqa: BLE001 - any failure is reported without the value
            failed = True
    if failed:
        raise _mask_failed() from None
    if native:
        _counters.native(_PATH)
    else:
        _counters.fallback(_PATH, "mask_object on a masker with its own matcher or mask_string")
    return result


#: How deep the native walk goes before it checks how deep 2.22's recursive walk could go.
_SHALLOW_DEPTH = 32
#: The native walk never goes deeper than this (its recursion is on the C stack).
_NATIVE_MAX_DEPTH = 256
#: Frames 2.22's walk takes per level of the structure, and besides them (its leaves' calls).
_FRAMES_PER_LEVEL = 3
_FRAMES_SPARE = 50


def _native_walk(engine: _t.Any, value: _t.Any, placeholder: str, lines_keys: dict[str, str]) -> _t.Any:
    """2.22's walk of ``value`` on the native engine.  A structure deeper than 2.22's recursive
    walk could surely go from here is walked in Python instead, to fail (or not) as 2.22 does."""
    delegate = _NativeDelegate(engine, placeholder, lines_keys)
    try:
        return delegate.walk(value, _SHALLOW_DEPTH)
    except _MaskTooDeep:
        pass
    max_depth = min(_NATIVE_MAX_DEPTH, (_sys.getrecursionlimit() - _stack_depth() - _FRAMES_SPARE) // _FRAMES_PER_LEVEL)
    if max_depth > _SHALLOW_DEPTH:
        try:
            return delegate.walk(value, max_depth)
        except _MaskTooDeep:
            pass
    return _ObjectMasker(_native_text_masker(engine, placeholder), lines_keys).mask(value)


def _stack_depth() -> int:
    frame, depth = _sys._getframe(), 0
    while frame is not None:
        frame, depth = frame.f_back, depth + 1
    return depth


#: ``mask_string`` functions that do exactly what the native engine does for a text.
_plain_mask_strings: set[_t.Any] = set()


def _native_text_masker(engine: _t.Any, placeholder: _t.Any) -> _c.Callable[[str], str]:
    if isinstance(placeholder, str):
        mask = engine.mask
        return lambda text: mask(text, placeholder)
    return lambda text: _mask_text(engine, text, placeholder)


def _python_text_masker(masker: _t.Any, placeholder: _t.Any) -> _c.Callable[[str], str]:
    mask_string = masker.mask_string
    return lambda text: mask_string(text, mask_placeholder=placeholder, acquire_lock=False)


def _tag_support() -> tuple[type, _t.Callable[[_t.Any, _t.Any], _t.Any]]:
    try:
        from ansible.module_utils._internal._datatag import AnsibleTaggedObject, AnsibleTagHelper
    except Exception:  # noqa: BLE001 - without data tagging nothing is ever tagged

        class _NeverTagged:
            pass

        return _NeverTagged, lambda src, value: value
    return AnsibleTaggedObject, AnsibleTagHelper.tag_copy


_TaggedObject, _tag_copy = _tag_support()
_plain_mask_strings.add(SecretMasker.mask_string)
if _core is not None:
    _plain_mask_strings.add(_core.SecretMasker.__dict__.get("mask_string"))


class _ObjectMasker:
    """Masks every string of an object graph, the way 2.22's result walk does, while the
    masker's lock is held.  Observable details it keeps: an unchanged container is returned as
    the very same object; a key that masks into an existing one gets " (2)", " (3)"...; a
    number whose text is masked becomes that masked text; sets always come back as new sets;
    a replaced value keeps the tags of the one it replaces."""

    def __init__(self, mask_text: _c.Callable[[str], str], lines_keys: dict[str, str]) -> None:
        self._mask_text = mask_text
        self._lines_items = tuple(lines_keys.items())
        self._tracked_keys = frozenset(lines_keys) | frozenset(lines_keys.values())

    def mask(self, value: _t.Any) -> _t.Any:
        masked = self._mask(value)
        if masked is not value and isinstance(value, _TaggedObject):
            masked = _tag_copy(value, masked)
        return masked

    def _mask(self, value: _t.Any) -> _t.Any:
        if value is None or isinstance(value, (bool, bytearray, bytes)):
            return value
        if isinstance(value, str):
            return self._mask_text(value) if value else value
        if isinstance(value, (int, float)):
            text = str(value)
            masked = self._mask_text(text) if text else text
            return value if masked is text else masked
        if isinstance(value, _c.Mapping):
            return self._mask_mapping(value)
        if isinstance(value, _c.Sequence):
            return self._mask_sequence(value)
        if isinstance(value, _c.Set):
            return {self.mask(item) for item in value}
        return value

    def _lines_derived_from_text(self, value: _c.Mapping) -> dict[_t.Any, _t.Any]:
        """lines key -> text key, for the lines that are exactly their text's splitlines()."""
        derived = {}
        for text_key, lines_key in self._lines_items:
            text = value.get(text_key)
            if isinstance(text, str) and value.get(lines_key) == text.splitlines():
                derived[lines_key] = text_key
        return derived

    def _mask_mapping(self, value: _c.Mapping) -> _t.Any:
        out: dict = {}
        changed = False
        derived = self._lines_derived_from_text(value)
        renamed = {}  # original key -> key in out, for the text and lines keys
        for key, item in value.items():
            new_key = self.mask(key)
            # derived lines are rebuilt below from the masked text, not masked line by line
            new_item = item if key in derived else self.mask(item)
            if new_key is not key or new_item is not item:
                changed = True
            if new_key in out:
                suffix = 2
                while (candidate := f"{new_key} ({suffix})") in out:
                    suffix += 1
                new_key = candidate
            out[new_key] = new_item
            if key in self._tracked_keys:
                renamed[key] = new_key
        for lines_key, text_key in derived.items():
            masked_text = out[renamed[text_key]]
            if masked_text is not value[text_key]:
                out[renamed[lines_key]] = _tag_copy(value[lines_key], masked_text.splitlines())
        return out if changed else value

    def _mask_sequence(self, value: _c.Sequence) -> _t.Any:
        out = []
        changed = False
        for item in value:
            new_item = self.mask(item)
            if new_item is not item:
                changed = True
            out.append(new_item)
        return out if changed else value


class _NativeDelegate(_ObjectMasker):
    """The native walk (``_mask_object_walk``) handles the builtin types itself and hands any
    other value here: it is masked as 2.22 does, each of its children going back to the native
    walk one level deeper (the depth counts both walks together)."""

    def __init__(self, engine: _t.Any, placeholder: str, lines_keys: dict[str, str]) -> None:
        super().__init__(_native_text_masker(engine, placeholder), lines_keys)
        self._args = (engine, placeholder, self._lines_items, self._tracked_keys, self.delegate, _tag_copy)
        self._max_depth = _SHALLOW_DEPTH
        self._depth = 0

    def walk(self, value: _t.Any, max_depth: int) -> _t.Any:
        self._max_depth = max_depth
        return _mask_object_walk(*self._args, max_depth, value, 0)

    def mask(self, value: _t.Any) -> _t.Any:
        return _mask_object_walk(*self._args, self._max_depth, value, self._depth)

    def delegate(self, value: _t.Any, depth: int) -> _t.Any:
        saved, self._depth = self._depth, depth
        try:
            return _ObjectMasker.mask(self, value)
        finally:
            self._depth = saved


# --- masking with a given set of secrets ------------------------------------------------------


class _CallMasker(SecretMasker):
    """A masker for one call of :func:`mask`: a plain lock, so that making one registers no
    fork handlers (a ``SecretMasker`` is meant to live as long as the process)."""

    def __init__(self) -> None:
        self._new_secret_trackers = set()
        self._lock = _threading.Lock()  # type: ignore[assignment]
        self._registry = _SecretRegistry()


def mask(value: _t.Any, secrets: _c.Iterable[str], /) -> _t.Any:
    """``value`` (a text, or a dict, list... holding texts) with ``secrets`` hidden the way the
    installed ansible-core hides secrets; ``value`` itself is not changed.

    On ansible-core 2.22 (where ``ansible.module_utils._internal._secrets`` has its
    ``SecretMasker``) it is 2.22's registered-secret masking with only ``secrets`` registered:
    what a new ``SecretMasker`` with them registered gives for a text (``mask_string``), and
    what 2.22's object walk (``mask_object``) gives for anything else; every occurrence becomes
    ``$REDACTED$``, a secret is registered stripped of surrounding whitespace, together with
    its JSON-escaped forms.  An unchanged container comes back as the very same object.

    On ansible-core 2.19–2.21, which have no registered-secret masking, it is what
    ``ansible.module_utils.common.parameters.remove_values(value, secrets)`` returns: a text
    equal to a secret becomes ``VALUE_SPECIFIED_IN_NO_LOG_PARAMETER``, every occurrence in a
    longer text ``********``.

    Raises ``TypeError`` when ``secrets`` is a single ``str`` or ``bytes`` (not a collection of
    them) or is not iterable; otherwise what ansible-core raises for the same input (2.22: a
    ``TypeError`` for a secret that is not a ``str``, ``AnsibleSecretMaskError`` when masking
    fails, without the value).  Natively on every supported ansible-core; the fallbacks (to
    2.22's Python for a value the native walk does not handle, to ansible-core's
    ``remove_values`` on 2.19–2.21 for the no_log path's reasons) are counted under
    ``masking`` or ``no_log`` in ``ansible_accel.status()``.
    """
    if isinstance(secrets, (str, bytes, bytearray)):
        raise TypeError(f"secrets must be a collection of str, not a single {type(secrets).__name__}")
    if not isinstance(secrets, _c.Iterable):
        raise TypeError(f"secrets must be an iterable of str, not {type(secrets).__name__}")
    secrets = list(secrets)
    if _core is None:
        from .no_log import remove_values

        return remove_values(value, secrets)
    masker = _CallMasker()
    masker.register_secret_texts(secrets)
    return _mask_object_with(masker, value, "$REDACTED$", None)
