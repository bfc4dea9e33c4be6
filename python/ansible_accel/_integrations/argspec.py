"""The ``argspec`` path: ``ArgumentSpecValidator.validate`` (and so ``ModuleArgumentSpecValidator``,
whose ``validate`` calls it and then warns/deprecates itself) answered natively."""

from __future__ import annotations

from .._activation import Patch, Unavailable


def plan() -> list[Patch]:
    try:
        from ansible.module_utils import errors
        from ansible.module_utils.common import arg_spec
    except ImportError as ex:
        raise Unavailable(f"ansible-core's arg_spec cannot be imported: {ex}") from None
    from .. import _native, argspec

    if not hasattr(_native, "ArgspecFastPath"):  # what argspec._fast_path() makes
        raise Unavailable("this build of the native module has no argspec engine")
    original = arg_spec.ArgumentSpecValidator.__dict__["validate"]
    set_fallbacks = argspec._make_set_fallbacks(arg_spec.set_fallbacks)
    if argspec._is_ansible_set_fallbacks(arg_spec.set_fallbacks):
        # The native path may do the work of ansible-core's own set_fallbacks (while this
        # wrapper of it is the one installed).
        argspec._fast_path().trust_set_fallbacks(set_fallbacks)
    return [
        Patch(arg_spec.ArgumentSpecValidator, "validate", argspec._make_validate(original, arg_spec, errors)),
        # validate() looks set_fallbacks up in arg_spec's namespace: the native attempt's
        # fallback results are replayed there when a call is given back to ansible-core.
        Patch(arg_spec, "set_fallbacks", set_fallbacks),
    ]
