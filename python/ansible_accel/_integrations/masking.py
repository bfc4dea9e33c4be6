"""The ``masking`` path: ansible-core 2.22's registered-secret masking on the native engine.

ansible-core keeps its own shared ``SecretMasker`` (its registry, trackers and fork-safe lock
stay exactly as they are); what changes is the matching.  While installed:

* the shared masker's matcher is a native ``SecretMatcher`` holding every form registered so
  far (swapped under the masker's lock, so no registration or mask can fall between);
* ``SecretMasker.mask_string`` searches, merges and replaces in one native call when the
  masker it is called on has the native matcher (any other masker runs ansible-core's code);
* ``mask_object`` (task results handed to callbacks) walks the result with native masking,
  wherever ansible-core's modules hold it.

On uninstall ansible-core's own matcher comes back with every form registered meanwhile added
to it, so no secret registered while the accelerator was on becomes visible.

Inside the modules a warm runner runs (``_runner_modside``), ``plan(preloaded=True)`` uses the
payload's module_utils the runner has already imported and imports none: ``mask_object`` is
patched only where ``_secrets_object`` is among them (ansible-core's module_utils do not import
it; the modules' masking is ``mask_string``, through ``ansible.module_utils.secrets``).
"""

from __future__ import annotations

import sys
import types
import typing as t

from .. import _counters
from .._activation import Patch, Unavailable, core_minor

_PATH = "masking"


class _Swap:
    """The matcher swap made at install, to be undone at uninstall."""

    masker: t.Any = None
    original: t.Any = None
    native: t.Any = None
    forms_at_install: frozenset[str] = frozenset()


_swap = _Swap()


_SECRETS = "ansible.module_utils._internal._secrets"
_SECRETS_OBJECT = "ansible.module_utils._internal._secrets_object"


def _core_modules(preloaded: bool = False) -> tuple[t.Any, t.Any]:
    """ansible-core's ``_secrets`` and ``_secrets_object`` modules; with ``preloaded``, only
    modules already imported (``_secrets_object`` may then be None)."""
    if core_minor() != (2, 22):
        raise Unavailable(
            f"registered-secret masking is ansible-core 2.22's (this is {'.'.join(map(str, core_minor()))}); "
            "earlier versions scrub no_log values, which is the no_log path"
        )
    if preloaded:
        _secrets, _secrets_object = sys.modules.get(_SECRETS), sys.modules.get(_SECRETS_OBJECT)
        if _secrets is None:
            raise Unavailable(f"{_SECRETS} is not preloaded")
    else:
        try:
            from ansible.module_utils._internal import _secrets, _secrets_object
        except ImportError as ex:
            raise Unavailable(f"ansible-core's masking modules are not importable: {ex}") from None
    missing = [name for name in ("SecretMasker", "_secret_masker", "AnsibleSecretMaskError") if not hasattr(_secrets, name)]
    if missing or (_secrets_object is not None and not hasattr(_secrets_object, "mask_object")):
        raise Unavailable(f"ansible-core's masking modules lack {', '.join(missing) or 'mask_object'}")
    masker = _secrets._secret_masker
    if not all(hasattr(masker, attr) for attr in ("_lock", "_matcher", "_forms")):
        raise Unavailable("ansible-core's shared masker does not have the expected _lock/_matcher/_forms")
    return _secrets, _secrets_object


def plan(*, preloaded: bool = False) -> list[Patch]:
    """The patches; ``preloaded``: inside a warm runner, on the modules it has imported only."""
    _secrets, _secrets_object = _core_modules(preloaded)
    from .. import masking as _accel

    original_mask_string = _secrets.SecretMasker.__dict__["mask_string"]
    patches = [Patch(_secrets.SecretMasker, "mask_string", _native_mask_string(original_mask_string, _accel))]
    if _secrets_object is None:
        return patches
    original_mask_object = _secrets_object.mask_object
    native_mask_object = _native_mask_object(original_mask_object, _secrets_object, _accel)
    # Every module that imported mask_object by name holds its own reference to it.
    for module in list(sys.modules.values()):
        if isinstance(module, types.ModuleType) and module.__name__.startswith("ansible"):
            if vars(module).get("mask_object") is original_mask_object:
                patches.append(Patch(module, "mask_object", native_mask_object))
    return patches


def after_install() -> None:
    from ansible.module_utils._internal import _secrets

    from ..masking import SecretMatcher

    masker = _secrets._secret_masker
    with masker._lock:
        native = SecretMatcher()
        for form in masker._forms:
            native.add(form)
        _swap.masker, _swap.original, _swap.native = masker, masker._matcher, native
        _swap.forms_at_install = frozenset(masker._forms)
        masker._matcher = native


def before_uninstall() -> None:
    masker = _swap.masker
    if masker is None:
        return
    with masker._lock:
        if masker._matcher is _swap.native:
            for form in masker._forms:
                if form not in _swap.forms_at_install:
                    _swap.original.add(form)
            masker._matcher = _swap.original
    _swap.masker = _swap.original = _swap.native = None
    _swap.forms_at_install = frozenset()


def _native_mask_string(original: t.Callable[..., str], accel: t.Any) -> t.Callable[..., str]:
    native_type = accel.SecretMatcher
    mask_text = accel._mask_text
    fail_closed = accel._fail_closed

    def masked_natively(self: t.Any, value: str, placeholder: str) -> tuple[bool, t.Any]:
        # The matcher is read with the lock held: install and uninstall swap it under that lock.
        matcher = self._matcher
        if type(matcher) is not native_type:
            return False, None
        return True, (mask_text(matcher, value, placeholder) if self._forms else value)

    def mask_string(self: t.Any, value: str, /, *, mask_placeholder: str = "$REDACTED$", acquire_lock: bool = True) -> str:
        """Masks any registered secret in the provided string with the provided placeholder. Returns the masked string."""
        if not value:
            return value
        native, result = fail_closed(
            self,
            acquire_lock,
            lambda: masked_natively(self, value, mask_placeholder),
        )
        if not native:
            return _counters.call_original(
                _PATH, "masker without the native matcher", original, self, value,
                mask_placeholder=mask_placeholder, acquire_lock=acquire_lock,
            )
        _counters.native(_PATH)
        return result

    mask_string.__wrapped__ = original  # type: ignore[attr-defined]
    accel._plain_mask_strings.add(mask_string)
    return mask_string


def _native_mask_object(original: t.Callable[..., t.Any], secrets_object: t.Any, accel: t.Any) -> t.Callable[..., t.Any]:
    def mask_object(value: t.Any, /, *, mask_placeholder: str = "$REDACTED$", lines_keys: dict[str, str] | None = None) -> t.Any:
        """Recursively mask registered secrets in the dict or list ``value``."""
        # Read at call time, as ansible-core's own function does.
        masker = secrets_object._secret_masker
        return accel._mask_object_with(masker, value, mask_placeholder, lines_keys)

    mask_object.__wrapped__ = original  # type: ignore[attr-defined]
    return mask_object
