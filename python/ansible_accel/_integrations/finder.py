"""The ``finder`` path: ansible-core's module dependency walk, scanning imports natively.

``recursive_finder`` is replaced by a drop-in for the running version's signature.  It walks
the same way: the same locator classes and plugin loaders (so redirects, deprecations,
tombstones, collection loading and error messages are ansible-core's own), the same order,
the same zip entries written through the same ``ZipFile``.  Only the per-file step changes:
instead of compile() + ``ModuleDepFinder``, the source is scanned by the native scanner, and
the answer is cached for the process keyed by the file's full content (plus its name and
package-ness), so a changed file is never served stale.

Where legacy ``module_utils`` files live is remembered too (see "where legacy module_utils
live" below): only side-effect-free answers, re-checked against the directories' stat
stamps each walk, the file content always read afresh.

A file the scanner will not answer exactly (see ``ansible_accel.finder``) goes through
ansible-core's own compile() + ``ModuleDepFinder``, counted as a fallback with its reason, so
its errors and warnings are ansible-core's.  Every name is looked up in ``module_common`` at
call time, so whatever a caller (or a test) has replaced there is honoured.
"""

from __future__ import annotations

import dataclasses
import heapq
import inspect
import os
import pathlib
import threading
import time
import typing as t

from .. import _counters, _native
import importlib.machinery

from .._activation import Patch, Unavailable, core_minor
from ..finder import EVERY_LISTED_NODE, POSITIONED_NODES

PATH = "finder"

# Parameters of recursive_finder in every supported version.
_SIGNATURE = ["name", "module_fqn", "module_data", "zf", "date_time", "extension_manager"]

# Scans kept per process; past this many distinct files the cache starts again (a run over
# many collections should not grow without bound).
_CACHE_LIMIT = 4096


class _Scan(t.NamedTuple):
    """The part of a ModuleDepFinder that recursive_finder reads."""

    submodules: frozenset[tuple[str, ...]]
    optional_imports: frozenset[tuple[str, ...]]
    embeds: frozenset


_NO_EMBEDS: frozenset = frozenset()
_active_walk: _Walk | None = None  # set by plan()
_cache: dict[tuple[str, bool, bytes | str], _Scan] = {}
_cache_lock = threading.Lock()


def _after_fork_in_child() -> None:
    # another thread of the parent may have held the lock at fork; the child starts unlocked
    global _cache_lock
    _cache_lock = threading.Lock()


os.register_at_fork(after_in_child=_after_fork_in_child)


def clear_cache() -> None:
    with _cache_lock:
        _cache.clear()


class _Walk:
    """What differs between ansible-core versions, fixed once at install time."""

    def __init__(self, mc: t.Any, minor: int) -> None:
        self.mc = mc
        self.reach = EVERY_LISTED_NODE if minor < 21 else POSITIONED_NODES
        # 2.21+ ModuleDepFinder takes the source and compiles it; 2.19/2.20 take a tree.
        self.finder_takes_source = minor >= 21
        self.has_embeds = minor >= 21


def _scan(walk: _Walk, module_fqn: str, source: bytes | str, is_pkg_init: bool, *, event: str | None = None) -> _Scan | None:
    """The native scan of one file, or None when ansible-core's own code must do it.
    ``event`` counts a scan made ahead of need under that name instead of as a native call."""
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
        return None
    submodules, optional_imports, _ = result
    if event is None:
        _counters.native(PATH)
    else:
        _counters.extra(PATH, event)
    scan = _Scan(submodules, optional_imports, _NO_EMBEDS)
    if key is not None:
        with _cache_lock:
            if len(_cache) >= _CACHE_LIMIT:
                _cache.clear()
            _cache[key] = scan
    return scan


class _LazyTree:
    """Stands for the module's AST where only _get_module_metadata may need it (it reads the
    tree only when the experimental _MODULE_METADATA setting is on): compiled on first use."""

    def __init__(self, compile_tree: t.Callable[[], t.Any]) -> None:
        self._compile_tree = compile_tree
        self._tree = None

    def __getattr__(self, name: str) -> t.Any:
        if self._tree is None:
            self._tree = self._compile_tree()
        return getattr(self._tree, name)


def _scan_main_module(walk: _Walk, name: str, module_fqn: str, module_data: bytes | str) -> tuple[t.Any, t.Any]:
    """(finder-like, metadata) for the module itself, raising where ansible-core raises."""
    mc = walk.mc
    scan = _scan(walk, module_fqn, module_data, False)
    if walk.finder_takes_source:
        if scan is None:
            finder = mc.ModuleDepFinder(module_fqn, module_data)
            return finder, mc._get_module_metadata(finder.tree)
        return scan, mc._get_module_metadata(_LazyTree(lambda: mc._compile_module_ast(module_fqn, module_data)))
    # 2.19/2.20 compile under the module's short name, then read metadata, then walk.
    if scan is None:
        tree = mc._compile_module_ast(name, module_data)
        metadata = mc._get_module_metadata(tree)
        return mc.ModuleDepFinder(module_fqn, tree), metadata
    return scan, mc._get_module_metadata(_LazyTree(lambda: mc._compile_module_ast(name, module_data)))


def _scan_module_util(walk: _Walk, fqn: str, source: bytes, is_package: bool) -> t.Any:
    scan = _scan(walk, fqn, source, is_package)
    if scan is not None:
        return scan
    mc = walk.mc
    if walk.finder_takes_source:
        return mc.ModuleDepFinder(fqn, source, is_pkg_init=is_package)
    return mc.ModuleDepFinder(fqn, mc._compile_module_ast(fqn, source), is_package)


def _package_stubs(mc: t.Any) -> dict[tuple[str, ...], tuple[bytes, str]]:
    """The namespace-package inits ansible-core writes instead of its real ones."""
    extend_path = b'from pkgutil import extend_path\n__path__=extend_path(__path__,__name__)\n'
    return {
        ('ansible',): (
            extend_path + b'__version__="' + mc.to_bytes(mc.__version__) + b'"\n__author__="' + mc.to_bytes(mc.__author__) + b'"\n',
            'ansible/__init__.py',
        ),
        ('ansible', 'module_utils'): (extend_path, 'ansible/module_utils/__init__.py'),
    }


def _always_required(mc: t.Any, profile: str, extension_manager: t.Any) -> list:
    entry = mc._ModuleUtilsProcessEntry
    required = [
        entry.from_module(mc._loader),
        entry.from_module(mc._basic),
        entry.from_module_name(mc._json.get_module_serialization_profile_module_name(profile, True)),
        entry.from_module_name(mc._json.get_module_serialization_profile_module_name(profile, False)),
    ]
    required.extend(entry.from_module_name(name) for name in extension_manager.module_names)
    return required


# --- where legacy module_utils live, remembered ---------------------------------------------
#
# Locating is most of a warm walk: every `from ansible.module_utils.x import name` makes a
# LegacyModuleUtilLocator probe the search path for `x.name`, look up plugin routing for it,
# then probe for `x`.  Only answers with no side effects are remembered: a .py file found on
# disk, with no redirect and no routing entry for a name tried before it (those emit
# deprecations, so they always run ansible-core's locator).  A remembered answer is used only
# while every directory searched still has the same stat stamp (an entry added, removed or
# renamed changes it; stamps too close to "now" to be trusted are never remembered) and the
# routing is still absent; the file itself is read afresh each walk, so its content is never
# remembered here.

# stamps within this many ns of "now" may share a clock tick with a later change
_RACY_NS = 2_000_000_000


class _Located(t.NamedTuple):
    fq_name_parts: tuple[str, ...]
    output_path: str
    is_package: bool
    path: str
    skipped_remainders: tuple[str, ...]  # routing keys that must stay absent
    dir_stamps: tuple[tuple[str, t.Any], ...]


_located: dict[tuple, _Located] = {}


def _stamp(path: str) -> t.Any:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_ctime_ns)


class _WalkChecks:
    """Stat stamps and routing answers, looked up once per walk."""

    def __init__(self, mc: t.Any) -> None:
        self.mc = mc
        self.stamps: dict[str, t.Any] = {}
        self.routing: dict[str, bool] = {}
        self._metadata: t.Any = None

    def stamp(self, path: str) -> t.Any:
        if path not in self.stamps:
            self.stamps[path] = _stamp(path)
        return self.stamps[path]

    def unrouted(self, remainder: str) -> bool:
        """True when ansible.builtin has no module_utils routing entry for ``remainder``."""
        if remainder not in self.routing:
            mc = self.mc
            try:
                if self._metadata is None:
                    self._metadata = mc._get_collection_metadata('ansible.builtin')
                self.routing[remainder] = not mc._nested_dict_get(self._metadata, ['plugin_routing', 'module_utils', remainder])
            except Exception:  # noqa: BLE001 - ansible-core's locator will raise or decide
                self.routing[remainder] = False
        return self.routing[remainder]


class _RememberedLocation:
    """What recursive_finder reads from a locator, for a remembered location."""

    found = True
    redirected = False

    def __init__(self, mc: t.Any, located: _Located) -> None:
        self._mc = mc
        self._path = located.path
        self._source = None
        self.fq_name_parts = located.fq_name_parts
        self.output_path = located.output_path
        self.is_package = located.is_package

    @property
    def source_code(self) -> t.Any:
        if self._source is None:  # read as the locator reads, and only if the walk needs it
            self._source = self._mc.Origin(path=self._path).tag(self._mc._slurp(self._path))
        return self._source


def _searched_dirs(candidate: tuple[str, ...], module_utils_paths: list[str]) -> list[str]:
    relative = candidate[2:]
    if len(relative) == 1:
        return list(module_utils_paths)
    return [os.path.join(p, *relative[:-1]) for p in module_utils_paths]


def _legacy_locator(mc: t.Any, entry: t.Any, module_utils_paths: list[str], checks: _WalkChecks) -> t.Any:
    locator_type = mc.LegacyModuleUtilLocator
    key = (locator_type, entry.name_parts, entry.is_ambiguous, entry.child_is_redirected, tuple(module_utils_paths))
    located = _located.get(key)
    if located is not None:
        if all(checks.stamp(d) == s for d, s in located.dir_stamps) and all(
                checks.unrouted(r) for r in located.skipped_remainders):
            _counters.extra(PATH, "location_memo_hit")
            return _RememberedLocation(mc, located)
        with _cache_lock:
            _located.pop(key, None)
    # Stamp what the locator may search *before* it searches: a change after this point then
    # shows as a different stamp next time, never as a stale answer.
    parts = entry.name_parts
    possible = [parts, parts[:-1], ('ansible', 'module_utils', 'six')]
    for candidate in possible:
        if len(candidate) > 2:
            for directory in _searched_dirs(candidate, module_utils_paths):
                checks.stamp(directory)
    info = locator_type(parts, is_ambiguous=entry.is_ambiguous, mu_paths=module_utils_paths,
                        child_is_redirected=entry.child_is_redirected)
    if type(info) is locator_type:
        _remember(key, info, module_utils_paths, checks)
    return info


def _remember(key: tuple, info: t.Any, module_utils_paths: list[str], checks: _WalkChecks) -> None:
    spec = getattr(info, '_info', None)
    if not info.found or info.redirected or spec is None or spec.origin is None:
        return
    if os.path.splitext(spec.origin)[1] not in importlib.machinery.SOURCE_SUFFIXES:
        return
    candidates = list(info.candidate_names)
    if info.fq_name_parts not in candidates[:2]:
        return
    tried = candidates[:candidates.index(info.fq_name_parts) + 1]
    skipped = tuple('.'.join(c[2:]) for c in tried[:-1])
    if not all(checks.unrouted(r) for r in skipped):
        return
    dirs = [d for c in tried for d in _searched_dirs(c, module_utils_paths)]
    if not all(d in checks.stamps for d in dirs):
        return
    # the file's own stamp too: a permission change must reach ansible-core's locator
    stamps = tuple((d, checks.stamps[d]) for d in dirs) + ((spec.origin, checks.stamp(spec.origin)),)
    trusted_before = time.time_ns() - _RACY_NS
    if any(s is not None and max(s[2], s[3]) > trusted_before for _, s in stamps):
        return
    located = _Located(tuple(info.fq_name_parts), info.output_path, info.is_package, spec.origin, skipped, stamps)
    with _cache_lock:
        if len(_located) >= _CACHE_LIMIT:
            _located.clear()
        _located[key] = located


def _locate(mc: t.Any, entry: t.Any, module_utils_paths: list[str], checks: _WalkChecks) -> t.Any:
    """The locator for ``entry``, or None (after ansible-core's warning) for other names."""
    parts = entry.name_parts
    if parts[0:2] == ('ansible', 'module_utils'):
        return _legacy_locator(mc, entry, module_utils_paths, checks)
    if parts[0] == 'ansible_collections':
        return mc.CollectionModuleUtilLocator(parts, is_ambiguous=entry.is_ambiguous,
                                              child_is_redirected=entry.child_is_redirected, is_optional=entry.is_optional)
    mc.display.warning('ModuleDepFinder improperly found a non-module_utils import %s' % [parts])
    return None


def _module_utils_paths(mc: t.Any) -> list[str]:
    paths = [p for p in mc.module_utils_loader._get_paths(subdirs=False) if os.path.isdir(p)]
    paths.append(mc._MODULE_UTILS_PATH)
    return paths


class _Entry(t.NamedTuple):
    """ansible-core's _ModuleUtilsProcessEntry as a tuple of its fields, in its field order
    (the dataclass orders by exactly this tuple; plan() checks the fields)."""

    name_parts: tuple[str, ...]
    is_ambiguous: bool
    child_is_redirected: bool
    is_optional: bool


_ENTRY_FIELDS = list(_Entry._fields)


def _entry_fields(entry: t.Any) -> tuple:
    return entry.name_parts, entry.is_ambiguous, entry.child_is_redirected, entry.is_optional


def _walk_module_utils(walk: _Walk, module_fqn: str, pending: list, found: dict, embeds: set | None,
                       module_utils_paths: list[str]) -> None:
    """Locate and scan every module_util reachable from ``pending``, into ``found``."""
    mc = walk.mc
    checks = _WalkChecks(mc)
    # ansible-core sorts its list and takes the first entry each round; a heap of the same
    # field tuples pops the very same entry (equal tuples are identical entries), cheaper.
    pending = [_Entry(*_entry_fields(e)) for e in pending]
    heapq.heapify(pending)
    while pending:
        entry = heapq.heappop(pending)
        if entry.name_parts in found:
            continue
        info = _locate(mc, entry, module_utils_paths, checks)
        if info is None:
            continue
        if not info.found:
            if entry.is_optional:
                continue
            raise mc.AnsibleError('Could not find imported module support code for {0}. Looked for ({1})'.format(
                module_fqn, info.candidate_names_joined))
        if info.fq_name_parts in found:
            continue
        scan = _scan_module_util(walk, '.'.join(info.fq_name_parts), info.source_code, info.is_package)
        if embeds is not None:
            embeds.update(scan.embeds)
        for m in scan.submodules:
            if m not in found:
                heapq.heappush(pending, _Entry(m, True, False, m in scan.optional_imports))
        found[info.fq_name_parts] = (info.source_code, info.output_path)
        # every enclosing package's __init__ goes in too
        for depth in range(1, len(info.fq_name_parts)):
            package = info.fq_name_parts[:depth]
            if package not in found:
                heapq.heappush(pending, _Entry(package, False, info.redirected, entry.is_optional))


def _start(walk: _Walk, name: str, module_fqn: str, module_data: t.Any, extension_manager: t.Any):
    mc = walk.mc
    _counters.extra(PATH, "recursive_finder")
    found = _package_stubs(mc)
    module_utils_paths = _module_utils_paths(mc)
    finder, metadata = _scan_main_module(walk, name, module_fqn, module_data)
    embeds = None
    if walk.has_embeds:
        # copy() as ansible-core does: the same set layout, so the same iteration order
        embeds = finder.embeds.copy() if isinstance(finder.embeds, set) else set()
    if not isinstance(metadata, mc.ModuleMetadataV1):
        raise NotImplementedError()
    pending = [mc._ModuleUtilsProcessEntry(m, True, False, is_optional=m in finder.optional_imports) for m in finder.submodules]
    pending.extend(_always_required(mc, metadata.serialization_profile, extension_manager))
    _walk_module_utils(walk, module_fqn, pending, found, embeds, module_utils_paths)
    return found, metadata, embeds


def _note_source_mapping(mc: t.Any, extension_manager: t.Any, source_code: t.Any, file_name: str) -> None:
    if extension_manager.debugger_enabled and (origin := mc.Origin.get_tag(source_code)) and origin.path:
        extension_manager.source_mapping[origin.path] = file_name


def _recursive_finder_2_19(walk: _Walk):
    def recursive_finder(name, module_fqn, module_data, zf, date_time, extension_manager):
        mc = walk.mc
        found, metadata, _ = _start(walk, name, module_fqn, module_data, extension_manager)
        for source_code, file_name in found.values():
            zf.writestr(mc._make_zinfo(file_name, date_time, zf=zf), source_code)
            _note_source_mapping(mc, extension_manager, source_code, file_name)
            mc.display.vvvvv("Including module_utils file %s" % mc.to_text(file_name, errors='surrogate_or_strict'))
        return metadata

    return recursive_finder


def _recursive_finder_2_21(walk: _Walk):
    def recursive_finder(name, module_fqn, module_data, zf, date_time, extension_manager):
        mc = walk.mc
        found, metadata, embeds = _start(walk, name, module_fqn, module_data, extension_manager)
        written: set[str] = set()
        for source_code, file_name in found.values():
            mc.display.vvvvv("Including module_utils file %s" % mc.to_text(file_name, errors='surrogate_or_strict'))
            zf.writestr(mc._make_zinfo(file_name, date_time, zf=zf), source_code)
            written.add(file_name)
            _note_source_mapping(mc, extension_manager, source_code, file_name)
        if embeds:
            _write_embeds(mc, embeds, zf, date_time, written)
        return metadata

    return recursive_finder


def _embed_root(mc: t.Any, package: str, roots: dict[str, pathlib.Path]) -> pathlib.Path:
    parts = package.split('.')
    if parts[0] == 'ansible':
        key, up = 'ansible', 0
    elif parts[0] == 'ansible_collections':
        key, up = '.'.join(parts[:3]), 2
    else:
        return None
    if key not in roots:
        files = mc.ir_files(key)
        roots[key] = files.parent if up == 0 else files.parents[up]
    return roots[key]


def _write_embeds(mc: t.Any, embeds: set, zf: t.Any, date_time: t.Any, written: set[str]) -> None:
    """Resources requested through EmbedManager.embed() (2.21+), with their package inits."""
    roots: dict[str, pathlib.Path] = {}
    for embed in embeds:
        try:
            path_context = embed.path_context_manager
        except ModuleNotFoundError as ex:
            raise mc.AnsibleError('Embed package not found while packaging module.', obj=embed.package) from ex
        with path_context as path:
            if not path.is_file():
                raise mc.AnsibleError(f'Embed resource {embed.resource!r} not found while packaging module.', obj=embed.resource)
            root = _embed_root(mc, embed.package, roots)
            if root is None:
                raise mc.AnsibleError('Embed must be an ansible/ansible_collections resource.', obj=embed.resource)
            relative = path.relative_to(root)
            mc.display.vvvvv(f"Including embed file {relative}")
            zf.writestr(mc._make_zinfo(file_name := str(relative), date_time, zf=zf), path.read_bytes())
            written.add(file_name)
            for parent in relative.parents:
                if not parent.name:
                    continue
                init = str(parent / '__init__.py')
                if init not in written:
                    mc.display.vvvvv(f"Including parent init file {init}")
                    zf.writestr(mc._make_zinfo(init, date_time, zf=zf), b'')
                    written.add(init)


def plan() -> list[Patch]:
    major, minor = core_minor()
    if (major, minor) not in ((2, 19), (2, 20), (2, 21), (2, 22)):
        raise Unavailable(f"no recursive_finder drop-in for ansible-core {major}.{minor}")
    from ansible.executor import module_common as mc

    parameters = list(inspect.signature(mc.recursive_finder).parameters)
    if parameters != _SIGNATURE:
        raise Unavailable(f"recursive_finder has an unexpected signature {parameters}")
    entry_type = mc._ModuleUtilsProcessEntry
    fields = [f.name for f in dataclasses.fields(entry_type)]
    if fields != _ENTRY_FIELDS or not entry_type.__dataclass_params__.order:
        raise Unavailable(f"_ModuleUtilsProcessEntry has unexpected fields {fields}")
    global _active_walk
    walk = _active_walk = _Walk(mc, minor)
    drop_in = _recursive_finder_2_19(walk) if minor < 21 else _recursive_finder_2_21(walk)
    drop_in.__doc__ = mc.recursive_finder.__doc__
    drop_in.__wrapped_original__ = mc.recursive_finder
    return [Patch(mc, "recursive_finder", drop_in)]


# --- scanning ansible-core's own module_utils before workers fork ---------------------------
#
# ansible-playbook builds each module's payload in a forked worker, whose caches die with it.
# Every module needs ansible-core's module_utils, so the controller scans them once, right
# after install, on a thread (the GIL is released while parsing, so this overlaps start-up);
# each worker then inherits the answers.  A fork waits for the thread to finish first, so no
# worker is forked from a process with a scan in flight.

_prewarm_thread: threading.Thread | None = None


def _prewarm(walk: _Walk) -> None:
    root = pathlib.Path(walk.mc._MODULE_UTILS_PATH).resolve()
    for path in sorted(root.rglob("*.py")):
        parts = ("ansible", "module_utils") + path.relative_to(root).with_suffix("").parts
        is_pkg_init = parts[-1] == "__init__"
        try:
            source = path.read_bytes()
        except OSError:
            continue
        _scan(walk, ".".join(parts[:-1] if is_pkg_init else parts), source, is_pkg_init, event="prewarm_scan")


def wait_for_prewarm() -> None:
    thread = _prewarm_thread
    if thread is not None and thread is not threading.current_thread():
        thread.join()


os.register_at_fork(before=wait_for_prewarm)


def after_install() -> None:
    global _prewarm_thread
    if _active_walk is None or os.environ.get("ANSIBLE_ACCEL_FINDER_PREWARM", "1") == "0":
        return
    _prewarm_thread = threading.Thread(target=_prewarm, args=(_active_walk,), name="ansible-accel-finder-prewarm",
                                       daemon=True)
    _prewarm_thread.start()


def before_uninstall() -> None:
    wait_for_prewarm()
    clear_cache()
    with _cache_lock:
        _located.clear()
