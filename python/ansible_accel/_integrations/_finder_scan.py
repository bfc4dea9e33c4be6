"""The ``finder`` path's step for one file, and what every walk starts from.

``scan()`` scans one file's imports natively and keeps the answer for the process, keyed by
the file's full content (plus its name and package-ness), so a changed file is never served
stale.  ``module_utils_paths()`` and ``always_required()`` are where a walk looks for
module_utils and the module_utils every payload carries.  The walk itself
(``_integrations/finder``) and the controller's pre-warm (``_finder_prewarm``) both use them.
"""

from __future__ import annotations

import os
import threading
import typing as t

from .. import _counters, _fork, _native

PATH = "finder"

# Scans kept per process; past this many distinct files the cache starts again (a run over
# many collections should not grow without bound).
CACHE_LIMIT = 4096


class Scan(t.NamedTuple):
    """The part of a ModuleDepFinder that recursive_finder reads."""

    submodules: frozenset[tuple[str, ...]]
    optional_imports: frozenset[tuple[str, ...]]
    embeds: frozenset


_NO_EMBEDS: frozenset = frozenset()
_cache: dict[tuple[str, bool, bytes | str], Scan] = {}
_cache_lock = threading.Lock()


def _after_fork_in_child() -> None:
    # another thread of the parent may have held the lock at fork; the child starts unlocked
    global _cache_lock
    _cache_lock = threading.Lock()


_fork.register(after_in_child=_after_fork_in_child)


def clear() -> None:
    """Forget every scan."""
    with _cache_lock:
        _cache.clear()


def scan(walk: t.Any, module_fqn: str, source: bytes | str, is_pkg_init: bool, *, event: str | None = None,
         embed: t.Any = None) -> Scan | None:
    """The native scan of one file, or None when ansible-core's own code must do it (or
    ``embed`` where that is for the file's import of `embed` support).  ``walk`` gives the
    running version's ``reach`` and ``has_embeds``.  ``event`` counts a scan made ahead of
    need under that name instead of as a native call."""
    key = (module_fqn, is_pkg_init, source)
    try:
        hit = _cache.get(key)
    except TypeError:  # an unhashable str/bytes subclass: scan without caching
        hit, key = None, None
    if hit is not None:
        _counters.extra(PATH, "scan_cache_hit")
        return hit
    result = _native.scan_imports(source, module_fqn, is_pkg_init, walk.reach)
    if isinstance(result, str) or (result[2] and walk.has_embeds):
        # (an embed import: ModuleDepFinder then analyses top-level EmbedManager.embed() calls)
        if event is None:
            _counters.fallback(PATH, result if isinstance(result, str) else "embed")
        return None if isinstance(result, str) else embed
    submodules, optional_imports, _ = result
    if event is None:
        _counters.native(PATH)
    else:
        _counters.extra(PATH, event)
    found = Scan(submodules, optional_imports, _NO_EMBEDS)
    if key is not None:
        with _cache_lock:
            if len(_cache) >= CACHE_LIMIT:
                _cache.clear()
            _cache[key] = found
    return found


def always_required(mc: t.Any, profile: str, extension_manager: t.Any) -> list:
    """The module_utils every payload of serialization ``profile`` carries, as ansible-core's
    ``_ModuleUtilsProcessEntry`` values."""
    entry = mc._ModuleUtilsProcessEntry
    required = [
        entry.from_module(mc._loader),
        entry.from_module(mc._basic),
        entry.from_module_name(mc._json.get_module_serialization_profile_module_name(profile, True)),
        entry.from_module_name(mc._json.get_module_serialization_profile_module_name(profile, False)),
    ]
    required.extend(entry.from_module_name(name) for name in extension_manager.module_names)
    return required


def module_utils_paths(mc: t.Any) -> list[str]:
    """The directories a walk looks for module_utils in, ansible-core's own last."""
    paths = [p for p in mc.module_utils_loader._get_paths(subdirs=False) if os.path.isdir(p)]
    paths.append(mc._MODULE_UTILS_PATH)
    return paths
