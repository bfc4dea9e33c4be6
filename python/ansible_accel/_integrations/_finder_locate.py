"""Where module_utils live, for the ``finder`` path: ansible-core's locators, plus what each
answer depended on on disk (stat stamps), so it can be remembered.

Locating is most of a warm walk: every ``from ansible.module_utils.x import name`` makes a
LegacyModuleUtilLocator probe the search path for ``x.name``, look up plugin routing for it,
then probe for ``x``.  Only answers with no side effects are remembered: a .py file found on
disk, with no redirect and no routing entry for a name tried before it (those emit
deprecations, so they always run ansible-core's locator).  A remembered answer is used only
while every directory searched still has the same stat stamp (an entry added, removed or
renamed changes it; stamps too close to "now" to be trusted are never remembered) and the
routing is still absent.

Every locate also reports a ``Located`` (or None when its answer must not be remembered):
the whole-closure memo (``_finder_closure``) is built from them.
"""

from __future__ import annotations

import importlib.machinery
import os
import sys
import time
import typing as t

from .. import _counters
from ._memo import BoundedMemo

PATH = "finder"
# Locations kept per process; past this many the memo starts again.
_CACHE_LIMIT = 4096
# stamps within this many ns of "now" may share a clock tick with a later change
_RACY_NS = 2_000_000_000

Stamp = t.Any  # (st_dev, st_ino, st_size, st_mtime_ns, st_ctime_ns, st_mode) or None


class Located(t.NamedTuple):
    fq_name_parts: tuple[str, ...]
    output_path: str
    is_package: bool
    path: str | None  # the file read, None for a synthesised package
    skipped_remainders: tuple[str, ...]  # ansible.builtin routing keys that must stay absent
    dir_stamps: tuple[tuple[str, Stamp], ...]  # every path the answer depended on
    collection: str | None  # whose routing was consulted, if any
    # the source as the locator read it, and (module_common's _slurp, Origin) it was read with:
    # while the stamps hold (the file's own among them) it is what reading again would give
    source: t.Any = None
    reader: tuple | None = None
    # (collection, absence_state()) of each absent collection the answer depended on
    absent: tuple[tuple[str, tuple], ...] = ()


_located: BoundedMemo[tuple, Located] = BoundedMemo(_CACHE_LIMIT)
_sources: BoundedMemo[tuple, t.Any] = BoundedMemo(_CACHE_LIMIT)


def clear() -> None:
    _located.clear()
    _sources.clear()



def stamp(path: str) -> Stamp:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_mode)


def trusted(stamps: t.Iterable[tuple[str, Stamp]]) -> bool:
    """True when no stamp is so recent that a later change could leave it the same."""
    trusted_before = time.time_ns() - _RACY_NS
    return not any(s is not None and max(s[3], s[4]) > trusted_before for _, s in stamps)


class WalkChecks:
    """Stat stamps and routing answers, looked up once per walk."""

    def __init__(self, mc: t.Any) -> None:
        self.mc = mc
        self.stamps: dict[str, Stamp] = {}
        self.routing: dict[tuple[str, str], bool] = {}
        self.metadata: dict[str, t.Any] = {}

    def stamp(self, path: str) -> Stamp:
        if path not in self.stamps:
            self.stamps[path] = stamp(path)
        return self.stamps[path]

    def collection_metadata(self, collection: str) -> t.Any:
        if collection not in self.metadata:
            self.metadata[collection] = self.mc._get_collection_metadata(collection)
        return self.metadata[collection]

    def unrouted(self, remainder: str, collection: str = 'ansible.builtin') -> bool:
        """True when ``collection`` has no module_utils routing entry for ``remainder``."""
        key = (collection, remainder)
        if key not in self.routing:
            mc = self.mc
            try:
                metadata = self.collection_metadata(collection)
                self.routing[key] = not mc._nested_dict_get(metadata, ['plugin_routing', 'module_utils', remainder])
            except Exception:  # noqa: BLE001 - ansible-core's locator will raise or decide
                self.routing[key] = False
        return self.routing[key]


class RememberedLocation:
    """What recursive_finder reads from a locator, for a remembered location."""

    found = True
    redirected = False

    def __init__(self, mc: t.Any, located: Located) -> None:
        self._mc = mc
        self._path = located.path
        self._source = located.source if located.reader == (mc._slurp, mc.Origin) else None
        self.fq_name_parts = located.fq_name_parts
        self.output_path = located.output_path
        self.is_package = located.is_package

    @property
    def source_code(self) -> t.Any:
        if self._source is None:  # read as the locator reads (unless kept from locating), only if needed
            self._source = self._mc.Origin(path=self._path).tag(self._mc._slurp(self._path))
        return self._source


def _searched_dirs(candidate: tuple[str, ...], module_utils_paths: list[str]) -> list[str]:
    relative = candidate[2:]
    if len(relative) == 1:
        return list(module_utils_paths)
    return [os.path.join(p, *relative[:-1]) for p in module_utils_paths]


def _legacy_locator(mc: t.Any, entry: t.Any, module_utils_paths: list[str], checks: WalkChecks) -> tuple[t.Any, Located | None]:
    locator_type = mc.LegacyModuleUtilLocator
    key = (locator_type, entry.name_parts, entry.is_ambiguous, entry.child_is_redirected, tuple(module_utils_paths))
    located = _located.get(key)
    if located is not None:
        if all(checks.stamp(d) == s for d, s in located.dir_stamps) and all(
                checks.unrouted(r) for r in located.skipped_remainders):
            _counters.extra(PATH, "location_memo_hit")
            return RememberedLocation(mc, located), located
        _located.drop(key)
    # Stamp what the locator may search *before* it searches: a change after this point then
    # shows as a different stamp next time, never as a stale answer.
    parts = entry.name_parts
    possible = [parts, parts[:-1], ('ansible', 'module_utils', 'six')]
    for candidate in possible:
        if len(candidate) > 2:
            for directory in _searched_dirs(candidate, module_utils_paths):
                checks.stamp(directory)
    reader = (mc._slurp, mc.Origin)
    info = locator_type(parts, is_ambiguous=entry.is_ambiguous, mu_paths=module_utils_paths,
                        child_is_redirected=entry.child_is_redirected)
    located = None
    if type(info) is locator_type:
        located = _remember(key, info, module_utils_paths, checks, reader)
    return info, located


def _remember(key: tuple, info: t.Any, module_utils_paths: list[str], checks: WalkChecks, reader: tuple) -> Located | None:
    spec = getattr(info, '_info', None)
    if not info.found or info.redirected or spec is None or spec.origin is None:
        return None
    if os.path.splitext(spec.origin)[1] not in importlib.machinery.SOURCE_SUFFIXES:
        return None
    candidates = list(info.candidate_names)
    if info.fq_name_parts not in candidates[:2]:
        return None
    tried = candidates[:candidates.index(info.fq_name_parts) + 1]
    skipped = tuple('.'.join(c[2:]) for c in tried[:-1])
    if not all(checks.unrouted(r) for r in skipped):
        return None
    dirs = [d for c in tried for d in _searched_dirs(c, module_utils_paths)]
    if not all(d in checks.stamps for d in dirs):
        return None
    # the file's own stamp too: a permission change must reach ansible-core's locator
    stamps = tuple((d, checks.stamps[d]) for d in dirs) + ((spec.origin, checks.stamp(spec.origin)),)
    if not trusted(stamps):
        return None
    # one copy of each file's source for all the names located in it (the same stamp: the same content)
    source = _sources.get((spec.origin, stamps[-1][1], reader))
    if source is None:
        source = info.source_code
        _sources.put((spec.origin, stamps[-1][1], reader), source)
    located = Located(tuple(info.fq_name_parts), info.output_path, info.is_package, spec.origin, skipped, stamps,
                      'ansible.builtin', source, reader)
    _located.put(key, located)
    return located


def _collection_located(mc: t.Any, entry: t.Any, info: t.Any, checks: WalkChecks) -> Located | None:
    """What a collection locator's plain answer depended on, or None when it had (or may
    have had) side effects: a redirect, a routing entry, a synthesised child package."""
    if type(info) is not mc.CollectionModuleUtilLocator or not info.found or info.redirected or entry.child_is_redirected:
        return None
    parts = tuple(info.fq_name_parts)
    candidates = [tuple(c) for c in info.candidate_names]
    if parts not in candidates:
        return None
    if all(len(c) < 6 for c in candidates):
        # a package above module_utils: synthesised empty, nothing read, no routing
        return Located(parts, info.output_path, info.is_package, None, (), (), None)
    collection = '.'.join(parts[1:3])
    package = sys.modules.get('.'.join(parts[:3]))
    package_file = getattr(package, '__file__', None)
    if not isinstance(package_file, str):
        return None
    package_dir = os.path.dirname(package_file)
    stamps: list[tuple[str, Stamp]] = [(os.path.join(package_dir, 'meta', 'runtime.yml'), None)]
    routed_by = None  # whose routing was consulted: none for packages above module_utils
    for candidate in candidates[:candidates.index(parts) + 1]:
        if len(candidate) < 6:
            continue  # a package above module_utils: synthesised, nothing read, no routing
        routed_by = collection
        if not checks.unrouted('.'.join(candidate[5:]), collection):
            return None
        base = os.path.join(package_dir, *candidate[3:])
        stamps += [(os.path.dirname(base), None), (base, None), (base + '.py', None), (os.path.join(base, '__init__.py'), None)]
    stamps = [(p, checks.stamp(p)) for p, _ in stamps]
    if not trusted(stamps):
        return None
    path = None
    if len(parts) >= 6:
        path = os.path.join(package_dir, info.output_path.split('/', 3)[3]) if info.output_path.count('/') >= 3 else None
        if path is None:
            return None
    return Located(parts, info.output_path, info.is_package, path, (), tuple(stamps), routed_by)


def absence_state(collection: str) -> tuple | None:
    """What decides, beyond the disk, that the collection loader cannot find ``collection``:
    the loader, its collection paths, the packages above the collection as imported (with
    their search paths).  None when the collection is imported (or anything is unusual)."""
    package = 'ansible_collections.' + collection
    if package in sys.modules:
        return None
    try:
        from ansible.utils.collection_loader import AnsibleCollectionConfig

        loader = AnsibleCollectionConfig.collection_finder
        if loader is None:
            return None
        root = sys.modules.get('ansible_collections')
        namespace = sys.modules.get(package.rsplit('.', 1)[0])
        return (loader, tuple(AnsibleCollectionConfig.collection_paths), root, tuple(getattr(root, '__path__', None) or ()),
                namespace, tuple(getattr(namespace, '__path__', None) or ()))
    except Exception:  # noqa: BLE001 - not rememberable
        return None


def absence_paths(collection: str, state: tuple) -> list[str]:
    """Every path whose appearance could let the collection loader find ``collection`` in
    ``state``: the collection's directory (and its namespace's, and the roots above) under
    each collection path and each search path of the packages above it."""
    namespace, name = collection.split('.', 1)
    _, roots, _, root_path, _, namespace_path = state
    paths: list[str] = []
    for top in [os.path.join(r, 'ansible_collections') for r in roots] + list(root_path):
        paths += [top, os.path.join(top, namespace), os.path.join(top, namespace, name)]
    for directory in namespace_path:
        paths += [directory, os.path.join(directory, name)]
    return list(dict.fromkeys(paths))


def _absent_collection(mc: t.Any, entry: t.Any, checks: WalkChecks) -> tuple[t.Any, Located | None]:
    """An optional import from a collection that is not imported: the locator, and when it
    found nothing because the collection is absent (no side effect: for an optional import
    ansible-core's locator says nothing), what that answer depended on, stamped *before* the
    locator looked."""
    parts = entry.name_parts
    collection = '.'.join(parts[1:3])
    state = absence_state(collection)
    stamps = None if state is None else tuple((p, checks.stamp(p)) for p in absence_paths(collection, state))
    info = mc.CollectionModuleUtilLocator(parts, is_ambiguous=entry.is_ambiguous,
                                          child_is_redirected=entry.child_is_redirected, is_optional=entry.is_optional)
    if info.found:
        return info, _collection_located(mc, entry, info, checks)
    if stamps is None or type(info) is not mc.CollectionModuleUtilLocator or absence_state(collection) != state or not trusted(stamps):
        return info, None
    return info, Located(tuple(parts), '', False, None, (), stamps, None, absent=((collection, state),))


def locate(mc: t.Any, entry: t.Any, module_utils_paths: list[str], checks: WalkChecks) -> tuple[t.Any, Located | None]:
    """(the locator for ``entry`` or None after ansible-core's warning for other names,
    what its answer depended on or None when it must not be remembered)."""
    parts = entry.name_parts
    if parts[0:2] == ('ansible', 'module_utils'):
        return _legacy_locator(mc, entry, module_utils_paths, checks)
    if parts[0] == 'ansible_collections':
        if (entry.is_optional and not entry.child_is_redirected and len(parts) >= 6
                and '.'.join(parts[:3]) not in sys.modules):
            return _absent_collection(mc, entry, checks)
        info = mc.CollectionModuleUtilLocator(parts, is_ambiguous=entry.is_ambiguous,
                                              child_is_redirected=entry.child_is_redirected, is_optional=entry.is_optional)
        return info, _collection_located(mc, entry, info, checks)
    mc.display.warning('ModuleDepFinder improperly found a non-module_utils import %s' % [parts])
    return None, None


def _legacy_candidates(parts: tuple[str, ...], is_ambiguous: bool) -> list[tuple[str, ...]]:
    """The names LegacyModuleUtilLocator tries, in its order."""
    if parts[2] == 'six':
        return [('ansible', 'module_utils', 'six')]
    if is_ambiguous and len(parts) > 3:
        return [parts, parts[:-1]]
    return [parts]


def prewarm(mc: t.Any, entries: t.Iterable[tuple[tuple[str, ...], bool]], module_utils_paths: list[str]) -> int:
    """Locate ``(name_parts, is_ambiguous)`` entries of ansible.module_utils ahead of need,
    and the packages enclosing what they find, as a walk would (no redirected parent),
    remembering the plain answers; returns how many locators ran.  Only entries that can have
    no side effect are located: no name the locator would try has a routing entry (the only
    source of its messages)."""
    checks = WalkChecks(mc)
    pending = list(entries)
    seen = set(pending)
    ran = 0
    while pending:
        parts, is_ambiguous = pending.pop()
        if parts[0:2] != ('ansible', 'module_utils') or len(parts) < 3:
            continue
        key = (mc.LegacyModuleUtilLocator, parts, is_ambiguous, False, tuple(module_utils_paths))
        located = _located.get(key)
        if located is None:
            if not all(checks.unrouted('.'.join(c[2:])) for c in _legacy_candidates(parts, is_ambiguous)):
                continue
            try:
                _, located = _legacy_locator(mc, _PrewarmEntry(parts, is_ambiguous, False, False), module_utils_paths, checks)
            except Exception:  # noqa: BLE001 - the walk that needs it runs the locator and raises itself
                continue
            ran += 1
        if located is not None:
            for depth in range(3, len(located.fq_name_parts)):
                package = (located.fq_name_parts[:depth], False)
                if package not in seen:
                    seen.add(package)
                    pending.append(package)
    return ran


class _PrewarmEntry(t.NamedTuple):
    name_parts: tuple[str, ...]
    is_ambiguous: bool
    child_is_redirected: bool
    is_optional: bool
