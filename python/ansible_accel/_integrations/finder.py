"""The ``finder`` path: ansible-core's module dependency walk, scanning imports natively.

``recursive_finder`` is replaced by a drop-in for the running version's signature.  It walks
the same way: the same locator classes and plugin loaders (so redirects, deprecations,
tombstones, collection loading and error messages are ansible-core's own), the same order,
the same zip entries written through the same ``ZipFile``.  Only the per-file step changes:
instead of compile() + ``ModuleDepFinder``, the source is scanned by the native scanner, and
the answer is cached for the process keyed by the file's full content (plus its name and
package-ness), so a changed file is never served stale (``_finder_scan``).

Where ``module_utils`` files live is remembered too (``_finder_locate``): only
side-effect-free answers, re-checked against the directories' stat stamps each walk.  And a
walk with no side effects at all is remembered whole (``_finder_closure``): the next walk of
the same module only re-checks the stat stamps of everything it depended on and writes the
remembered files (into the ``payload`` path's writer in one native call).  Those closures
are also left on disk (``_finder_disk``), for the forked workers of a run and later runs,
whose memory starts empty; ``ANSIBLE_ACCEL_FINDER_DISK=0`` keeps them in memory only.
The routing files of the collections a walk imports are parsed once per content the same
way (``_finder_routing``), and the controller scans and locates ansible-core's own
module_utils before any worker forks (``_finder_prewarm``).

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
import typing as t

from .. import _counters
from .._activation import Patch, Unavailable, core_minor
from ..finder import EVERY_LISTED_NODE, POSITIONED_NODES
from . import _finder_closure as closure_memo
from . import _finder_embeds
from . import _finder_locate as locate_memo
from . import _finder_prewarm
from . import _finder_routing
from . import _finder_scan
from . import _finder_write
from ._memo import BoundedMemo
from ._finder_locate import _located  # noqa: F401 - the location memo, looked at by tests
from ._finder_scan import _cache, _cache_lock, scan as _scan  # noqa: F401 - the scan cache, looked at by tests

PATH = "finder"

# Parameters of recursive_finder in every supported version.
_SIGNATURE = ["name", "module_fqn", "module_data", "zf", "date_time", "extension_manager"]

_active_walk: _Walk | None = None  # set by plan()


def clear_cache() -> None:
    """Forget every scan, location and closure this process remembers."""
    _finder_scan.clear()
    _embed_finders.clear()
    _embed_modules.clear()
    _finder_write._kept_embeds.clear()
    locate_memo.clear()
    closure_memo.clear()


class _Walk:
    """What differs between ansible-core versions, fixed once at install time."""

    def __init__(self, mc: t.Any, minor: int) -> None:
        self.mc = mc
        self.reach = EVERY_LISTED_NODE if minor < 21 else POSITIONED_NODES
        # 2.21+ ModuleDepFinder takes the source and compiles it; 2.19/2.20 take a tree.
        self.finder_takes_source = minor >= 21
        self.has_embeds = minor >= 21
        # ansible-core's own _make_zinfo, whose ZipInfo the batch write reproduces
        self.make_zinfo = mc._make_zinfo


_EMBED = object()  # what _finder_scan.scan says, when asked to, for a module that imports `embed` support
# ModuleDepFinder's answers for modules importing `embed` support (2.21+), which the native
# scan leaves to it (see _embed_finder_key).
_embed_finders: BoundedMemo[tuple, t.Any] = BoundedMemo(64)
# The closure-memo keys (as without embeds) of modules found to import `embed` support.
_embed_modules: BoundedMemo[tuple, bool] = BoundedMemo(256)


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


def _embed_finder_key(mc: t.Any, module_fqn: str, module_data: t.Any) -> tuple | None:
    """What a ModuleDepFinder of a module importing `embed` support depends on: its code, the
    module's name, content and origin (its embeds carry the origin).  Only asked for a module
    the native scan found free of anything compile() would warn about, so a remembered
    answer never swallows a warning."""
    try:
        key = (mc.ModuleDepFinder, mc._compile_module_ast, module_fqn, type(module_data), module_data,
               mc.Origin.get_tag(module_data))
        hash(key)
    except Exception:  # noqa: BLE001 - not a key: not remembered
        return None
    return key


def _scan_main_module(walk: _Walk, name: str, module_fqn: str, module_data: bytes | str) -> tuple[t.Any, t.Any, str]:
    """(finder-like, metadata, "native" or "embed" or "fallback") for the module itself,
    raising where ansible-core raises."""
    mc = walk.mc
    if walk.finder_takes_source:
        embed_key = _embed_finder_key(mc, module_fqn, module_data)
        finder = _embed_finders.get(embed_key) if embed_key is not None else None
        if finder is not None:
            _counters.extra(PATH, "embed_finder_hit")
            return finder, mc._get_module_metadata(finder.tree), "embed"
        scan = _finder_scan.scan(walk, module_fqn, module_data, False, embed=_EMBED)
        if scan is None or scan is _EMBED:
            finder = mc.ModuleDepFinder(module_fqn, module_data)
            if scan is _EMBED and embed_key is not None:
                _embed_finders.put(embed_key, finder)
            return finder, mc._get_module_metadata(finder.tree), "fallback" if scan is None else "embed"
        return scan, mc._get_module_metadata(_LazyTree(lambda: mc._compile_module_ast(module_fqn, module_data))), "native"
    # 2.19/2.20 compile under the module's short name, then read metadata, then walk.
    scan = _finder_scan.scan(walk, module_fqn, module_data, False)
    if scan is None:
        tree = mc._compile_module_ast(name, module_data)
        metadata = mc._get_module_metadata(tree)
        return mc.ModuleDepFinder(module_fqn, tree), metadata, "fallback"
    return scan, mc._get_module_metadata(_LazyTree(lambda: mc._compile_module_ast(name, module_data))), "native"


def _scan_module_util(walk: _Walk, fqn: str, source: bytes, is_package: bool) -> t.Any:
    scan = _finder_scan.scan(walk, fqn, source, is_package)
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
                       module_utils_paths: list[str], recorder: closure_memo.Recorder | None) -> None:
    """Locate and scan every module_util reachable from ``pending``, into ``found``; what the
    walk depended on goes to ``recorder``."""
    mc = walk.mc
    checks = locate_memo.WalkChecks(mc)
    if recorder is not None:
        recorder.checks = checks
    # ansible-core sorts its list and takes the first entry each round; a heap of the same
    # field tuples pops the very same entry (equal tuples are identical entries), cheaper.
    pending = [_Entry(*_entry_fields(e)) for e in pending]
    heapq.heapify(pending)
    while pending:
        entry = heapq.heappop(pending)
        if entry.name_parts in found:
            continue
        info, located = locate_memo.locate(mc, entry, module_utils_paths, checks)
        if recorder is not None:
            recorder.located(located)
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
        if recorder is not None:
            if type(scan) is not _finder_scan.Scan:
                recorder.ok = False
            recorder.found(info.fq_name_parts, info.output_path, info.source_code)
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


class _TreeNeeded(Exception):
    """Raised by _TreeProbe: ansible-core's metadata reader wants the module's tree."""


class _TreeProbe:
    """Stands for the module's tree where the walk first asks whether the metadata needs one
    (only with the experimental _MODULE_METADATA setting on)."""

    def __getattr__(self, name: str) -> t.Any:
        raise _TreeNeeded(name)


def _may_import_embed(data: bytes) -> bool:
    """False only for a module that cannot import `embed` support: ASCII source (so no
    identifier that normalises to another) without the word."""
    return not data.isascii() or b"embed" in data


def _remembered(walk: _Walk, name: str, module_fqn: str, module_data: t.Any, module_utils_paths: list[str],
                extension_manager: t.Any, shared: bool, compression: int | None):
    """(metadata, closure) when this very walk is remembered, before scanning the module: a
    closure is only ever recorded for a module (same content, name, Python, ansible-core)
    whose own scan was native and free of embeds, so its scan would be that again."""
    mc = walk.mc
    try:
        metadata = mc._get_module_metadata(_TreeProbe())
    except _TreeNeeded:
        return None
    if not isinstance(metadata, mc.ModuleMetadataV1):
        return None
    memo_key = closure_memo.key(name, module_fqn, module_data, module_utils_paths, metadata.serialization_profile,
                                extension_manager)
    if memo_key is None:
        return None
    if not _embed_modules.get(memo_key):
        closure = closure_memo.lookup(mc, memo_key, mc._get_collection_metadata, shared, compression)
        if closure is not None:
            return metadata, closure, set() if walk.has_embeds else None
    if not walk.has_embeds or not _may_import_embed(memo_key[3]):
        return None
    # A module with embeds (known here to have them, or maybe one whose record is on disk):
    # its walk is remembered under the other key, with its embeds.
    closure = closure_memo.lookup(mc, memo_key[:-1] + (True,), mc._get_collection_metadata, shared, compression)
    embeds = None if closure is None or closure.embeds is None else _finder_embeds.rebuild(mc, module_data, closure.embeds)
    if embeds is None:
        return None
    _embed_modules.put(memo_key, True)
    _counters.extra(PATH, "remembered_embeds")
    return metadata, closure, embeds


def _start(walk: _Walk, name: str, module_fqn: str, module_data: t.Any, extension_manager: t.Any,
           compression: int | None = None):
    """(found, metadata, embeds, remembered closure or None) of a walk; ``compression``: see
    _finder_write.block_compression."""
    mc = walk.mc
    _counters.extra(PATH, "recursive_finder")
    found = _package_stubs(mc)
    module_utils_paths = _finder_scan.module_utils_paths(mc)
    shared = os.environ.get("ANSIBLE_ACCEL_FINDER_DISK", "1") != "0"
    remembered = _remembered(walk, name, module_fqn, module_data, module_utils_paths, extension_manager, shared,
                             compression)
    if remembered is not None:
        metadata, closure, embeds = remembered
        for parts, output_path, source in closure.files:
            found[parts] = (source, output_path)
        return found, metadata, embeds, closure
    finder, metadata, kind = _scan_main_module(walk, name, module_fqn, module_data)
    embeds = None
    if walk.has_embeds:
        # copy() as ansible-core does: the same set layout, so the same iteration order
        embeds = finder.embeds.copy() if isinstance(finder.embeds, set) else set()
    if not isinstance(metadata, mc.ModuleMetadataV1):
        raise NotImplementedError()
    memo_key = None
    if kind != "fallback":
        # The module_utils found do not depend on the module's embeds (only ansible-core's
        # own finder, on a module_util, adds any: such a walk is never remembered); a module
        # with embeds is remembered apart, looked up once its finder has answered.
        memo_key = closure_memo.key(name, module_fqn, module_data, module_utils_paths, metadata.serialization_profile,
                                    extension_manager, with_embeds=kind == "embed")
    if memo_key is not None and kind == "embed":
        # this very module (content, name...) has embeds: its walks need not be looked up
        # as one without (the scan of the same content finds them again)
        _embed_modules.put(memo_key[:-1] + (False,), True)
        closure = closure_memo.lookup(mc, memo_key, mc._get_collection_metadata, shared, compression)
        if closure is not None:
            for parts, output_path, source in closure.files:
                found[parts] = (source, output_path)
            return found, metadata, embeds, closure
    recorder = closure_memo.Recorder(mc) if memo_key is not None else None
    pending = [mc._ModuleUtilsProcessEntry(m, True, False, is_optional=m in finder.optional_imports) for m in finder.submodules]
    pending.extend(_finder_scan.always_required(mc, metadata.serialization_profile, extension_manager))
    _walk_module_utils(walk, module_fqn, pending, found, embeds, module_utils_paths, recorder)
    if recorder is not None:
        if kind == "embed":
            recorder.embeds = _finder_embeds.record(mc, module_data, finder.embeds)
        recorder.store(memo_key, recorder.checks.collection_metadata, shared)
    return found, metadata, embeds, None


def _count_from_disk(closure: closure_memo.Closure | None) -> None:
    """A walk answered from a record on disk (its files scanned natively by an earlier run, or
    another process) is the native path's answer in this run: one native call.  A walk
    answered from memory is not counted again: the scans that made it were counted in this
    process, or in the one it was forked from."""
    if closure is not None and closure.from_disk:
        _counters.native(PATH)


def _recursive_finder_2_19(walk: _Walk, original: t.Callable):
    def recursive_finder(name, module_fqn, module_data, zf, date_time, extension_manager):
        compression = _finder_write.block_compression(walk, zf)
        found, metadata, _, closure = _start(walk, name, module_fqn, module_data, extension_manager, compression)
        try:
            _finder_write.write_found(walk, found, zf, date_time, extension_manager, None, closure)
        except closure_memo.SourcesGone:
            args = (name, module_fqn, module_data, zf, date_time, extension_manager)
            return _counters.call_original(PATH, "sources_gone", original, *args)
        _count_from_disk(closure)
        return metadata

    return recursive_finder


def _recursive_finder_2_21(walk: _Walk, original: t.Callable):
    def recursive_finder(name, module_fqn, module_data, zf, date_time, extension_manager):
        mc = walk.mc
        compression = _finder_write.block_compression(walk, zf)
        found, metadata, embeds, closure = _start(walk, name, module_fqn, module_data, extension_manager, compression)
        written: set[str] = set()
        try:
            _finder_write.write_found(walk, found, zf, date_time, extension_manager, written, closure)
        except closure_memo.SourcesGone:
            # (a file of a closure taken from disk unread, gone before it could be read:
            # nothing is in zf yet, and ansible-core's walk gives its own answer)
            args = (name, module_fqn, module_data, zf, date_time, extension_manager)
            return _counters.call_original(PATH, "sources_gone", original, *args)
        _count_from_disk(closure)
        if embeds:
            _finder_write.write_embeds(mc, embeds, zf, date_time, written)
        return metadata

    return recursive_finder


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
    closure_memo.set_original_guards(mc)
    original = mc.recursive_finder
    drop_in = _recursive_finder_2_19(walk, original) if minor < 21 else _recursive_finder_2_21(walk, original)
    drop_in.__doc__ = mc.recursive_finder.__doc__
    drop_in.__wrapped_original__ = mc.recursive_finder
    # (the collection loader's routing parser too: see _finder_routing)
    return [Patch(mc, "recursive_finder", drop_in)] + _finder_routing.plan()


# (the controller's pre-warm before workers fork: see _finder_prewarm)
wait_for_prewarm = _finder_prewarm.wait_for_prewarm


def after_install() -> None:
    if _active_walk is not None:
        _finder_prewarm.start(_active_walk)


def before_uninstall() -> None:
    _finder_prewarm.discard_pending()
    clear_cache()
