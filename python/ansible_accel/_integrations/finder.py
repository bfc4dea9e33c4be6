"""The ``finder`` path: ansible-core's module dependency walk, scanning imports natively.

``recursive_finder`` is replaced by a drop-in for the running version's signature.  It walks
the same way: the same locator classes and plugin loaders (so redirects, deprecations,
tombstones, collection loading and error messages are ansible-core's own), the same order,
the same zip entries written through the same ``ZipFile``.  Only the per-file step changes:
instead of compile() + ``ModuleDepFinder``, the source is scanned by the native scanner, and
the answer is cached for the process keyed by the file's full content (plus its name and
package-ness), so a changed file is never served stale.

A file the scanner will not answer exactly (see ``ansible_accel.finder``) goes through
ansible-core's own compile() + ``ModuleDepFinder``, counted as a fallback with its reason, so
its errors and warnings are ansible-core's.  Every name is looked up in ``module_common`` at
call time, so whatever a caller (or a test) has replaced there is honoured.
"""

from __future__ import annotations

import inspect
import os
import pathlib
import threading
import typing as t

from .. import _counters, _native
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
_cache: dict[tuple[str, bool, bytes | str], _Scan] = {}
_cache_lock = threading.Lock()


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


def _scan(walk: _Walk, module_fqn: str, source: bytes | str, is_pkg_init: bool) -> _Scan | None:
    """The native scan of one file, or None when ansible-core's own code must do it."""
    key = (module_fqn, is_pkg_init, source)
    try:
        hit = _cache.get(key)
    except TypeError:  # an unhashable str/bytes subclass: scan without caching
        hit, key = None, None
    if hit is not None:
        _counters.extra(PATH, "scan_cache_hit")
        return hit
    result = _native.scan_imports(source, module_fqn, is_pkg_init, walk.reach)
    if isinstance(result, str):
        _counters.fallback(PATH, result)
        return None
    submodules, optional_imports, embed_import = result
    if embed_import and walk.has_embeds:
        # ModuleDepFinder then analyses top-level assignments for EmbedManager.embed() calls.
        _counters.fallback(PATH, "embed")
        return None
    _counters.native(PATH)
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


def _locate(mc: t.Any, entry: t.Any, module_utils_paths: list[str]) -> t.Any:
    """The locator for ``entry``, or None (after ansible-core's warning) for other names."""
    parts = entry.name_parts
    if parts[0:2] == ('ansible', 'module_utils'):
        return mc.LegacyModuleUtilLocator(parts, is_ambiguous=entry.is_ambiguous, mu_paths=module_utils_paths,
                                          child_is_redirected=entry.child_is_redirected)
    if parts[0] == 'ansible_collections':
        return mc.CollectionModuleUtilLocator(parts, is_ambiguous=entry.is_ambiguous,
                                              child_is_redirected=entry.child_is_redirected, is_optional=entry.is_optional)
    mc.display.warning('ModuleDepFinder improperly found a non-module_utils import %s' % [parts])
    return None


def _module_utils_paths(mc: t.Any) -> list[str]:
    paths = [p for p in mc.module_utils_loader._get_paths(subdirs=False) if os.path.isdir(p)]
    paths.append(mc._MODULE_UTILS_PATH)
    return paths


def _walk_module_utils(walk: _Walk, module_fqn: str, pending: list, found: dict, embeds: set | None,
                       module_utils_paths: list[str]) -> None:
    """Locate and scan every module_util reachable from ``pending``, into ``found``."""
    mc = walk.mc
    entry_type = mc._ModuleUtilsProcessEntry
    while pending:
        pending.sort()  # smallest name first, as ansible-core processes them
        entry = pending.pop(0)
        if entry.name_parts in found:
            continue
        info = _locate(mc, entry, module_utils_paths)
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
        pending.extend(entry_type(m, True, False, is_optional=m in scan.optional_imports)
                       for m in scan.submodules if m not in found)
        found[info.fq_name_parts] = (info.source_code, info.output_path)
        # every enclosing package's __init__ goes in too
        for depth in range(1, len(info.fq_name_parts)):
            package = info.fq_name_parts[:depth]
            if package not in found:
                pending.append(entry_type(package, False, info.redirected, is_optional=entry.is_optional))


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
    walk = _Walk(mc, minor)
    drop_in = _recursive_finder_2_19(walk) if minor < 21 else _recursive_finder_2_21(walk)
    drop_in.__doc__ = mc.recursive_finder.__doc__
    drop_in.__wrapped_original__ = mc.recursive_finder
    return [Patch(mc, "recursive_finder", drop_in)]


def before_uninstall() -> None:
    clear_cache()
