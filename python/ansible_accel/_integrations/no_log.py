"""The ``no_log`` path: ``remove_values``, ``sanitize_keys`` and ``heuristic_log_sanitize``.

ansible-core 2.19–2.21 define the first two in ``module_utils.common.parameters`` and the third
in ``module_utils.basic``; ``basic`` imports the first two by name, and ``modules/uri.py``
imports ``sanitize_keys`` from ``basic`` (found with grep in each version).  Each name is
replaced where it is defined, in ``basic``, and in any already imported ``ansible`` or
``ansible_collections`` module that holds ansible-core's very function; modules imported later
get the native ones from ``basic``.  ansible-core 2.22 deprecates the three functions and no
longer calls them, so the path is not switched on there.
"""

from __future__ import annotations

import sys

from .._activation import Patch, Unavailable, core_minor

_NAMES = ("remove_values", "sanitize_keys", "heuristic_log_sanitize")


def plan() -> list[Patch]:
    if core_minor() >= (2, 22):
        raise Unavailable(
            "ansible-core 2.22 deprecates remove_values, sanitize_keys and heuristic_log_sanitize "
            "and no longer calls them; their deprecation names the caller's frame, which a "
            "replacement cannot reproduce"
        )
    try:
        from .. import no_log
    except Exception as ex:  # noqa: BLE001 - any failure means the path cannot be used here
        raise Unavailable(f"cannot load the native no_log functions: {ex!r}") from None
    originals = {
        "remove_values": no_log._original_remove_values,
        "sanitize_keys": no_log._original_sanitize_keys,
        "heuristic_log_sanitize": no_log._original_heuristic_log_sanitize,
    }
    natives = {name: getattr(no_log, name) for name in _NAMES}
    patches = []
    for module_name, module in sorted(sys.modules.items()):
        if module is None or module_name.partition(".")[0] not in ("ansible", "ansible_collections"):
            continue
        for name in _NAMES:
            if vars(module).get(name) is originals[name]:
                patches.append(Patch(module, name, natives[name]))
    return patches
