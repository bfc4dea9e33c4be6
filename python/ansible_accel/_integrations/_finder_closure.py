"""The whole located closure of a module, remembered for the process (the ``finder`` path).

A warm walk is, for every file of the closure, a location (stat calls and import machinery)
and a scan-cache lookup, all to arrive at the same list of files as last time.  So a walk
with no side effects (every location plain: no redirect, no routing entry, no missing
optional import, no fallback scan, no embed, no warning) is remembered as its result: the
ordered files it found (name, zip name, content) and the stat stamp of every file and
directory any of its answers depended on.  The next walk for the same module (same content,
same search paths, same serialisation profile and extensions, same collection loader) only
checks that every stamp is unchanged and writes the remembered files.

Stamps are (device, inode, size, mtime_ns, ctime_ns, mode) and never younger than a couple of
seconds when remembered (see ``_finder_locate.trusted``): a rewrite of a file changes its
ctime even when size and mtime are put back, an entry added to or removed from a searched
directory changes the directory's.  Anything not plain is walked the full way every time.
The stamps of a closure kept in memory are checked natively (``_native.FinderStamps``: one
call, the stat calls without the GIL and without a Python object per path), which was most
of a warm walk's own time.
"""

from __future__ import annotations

import os
import typing as t

from .. import _counters, _native
from ..payload import _load_kept as load_kept
from ._memo import BoundedMemo
from . import _finder_disk
from ._finder_locate import Located, Stamp, absence_paths, absence_state, trusted

PATH = "finder"
# Closures kept per process; past this many the memo starts again.
_CACHE_LIMIT = 1024

# module_common names a walk uses: a memo hit requires each to be what it was when the
# closure was recorded (a caller or a test may replace any of them).
_GUARDED = (
    "LegacyModuleUtilLocator", "CollectionModuleUtilLocator", "ModuleDepFinder", "_slurp", "Origin",
    "_get_collection_metadata", "_nested_dict_get", "_compile_module_ast", "_MODULE_UTILS_PATH",
)  # fmt: skip


class Closure(t.NamedTuple):
    guards: tuple
    # (fq_name_parts, zip name, source as the walk found it), in the order found
    files: tuple[tuple[tuple[str, ...], str, t.Any], ...]
    stamps: tuple[tuple[str, Stamp], ...]  # (none kept for a closure read from disk: its check reads the record)
    # (collection, its routing metadata object): still the one in use
    metadata: tuple[tuple[str, t.Any], ...]
    # the native check of ``stamps`` (None: checked in Python)
    check: t.Any = None
    # the payload entries last written from it, by compression (see _finder_write.write_found)
    written: dict | None = None
    # (collection, _finder_locate.absence_state()) of each absent collection an optional
    # import was looked for in: still the state (the stamps hold the paths it could appear at)
    absent: tuple[tuple[str, tuple], ...] = ()
    # the module's embeds (see _finder_embeds), for a walk of a module with embeds, or None
    embeds: t.Any = None
    # zip name -> origin path of the files whose source is held untagged (a closure read
    # from disk: their Origin tag is only ever read for the debugger's source mapping)
    origins: dict | None = None
    # (record name, token) of its record on disk: names the payload entries kept on disk
    # for it (see _finder_disk.block_path)
    block_key: tuple[str, str] | None = None
    # True when the files' sources are not read (None in ``files``): a closure read from
    # disk whose payload entries are kept on disk too; see read_sources()
    unread: bool = False
    # the kept entries found on disk for it (with ``unread``, as just loaded; never in memory)
    kept_file: t.Any = None
    # True for the closure a walk was given from a record on disk (never in memory): the walk
    # counts as a native call once its answer is used (see finder.py)
    from_disk: bool = False


_closures: BoundedMemo[tuple, Closure] = BoundedMemo(_CACHE_LIMIT)
clear = _closures.clear


def guards(mc: t.Any) -> tuple:
    return tuple(getattr(mc, name, None) for name in _GUARDED)


def collection_loader() -> t.Any:
    from ansible.utils.collection_loader import AnsibleCollectionConfig

    return AnsibleCollectionConfig.collection_finder


def key(name: str, module_fqn: str, module_data: t.Any, module_utils_paths: list[str], profile: t.Any,
        extension_manager: t.Any, with_embeds: bool = False) -> tuple | None:
    """The memo key of a walk (``with_embeds``: of a module with embeds, whose own imports
    ansible-core's finder read), or None when one part cannot be a key."""
    try:
        data = module_data.encode('utf-8', 'surrogatepass') if isinstance(module_data, str) else bytes(module_data)
        result = (name, module_fqn, isinstance(module_data, str), data, tuple(module_utils_paths), profile,
                  tuple(extension_manager.module_names), id(collection_loader()), with_embeds)
        hash(result)
    except Exception:  # noqa: BLE001 - an unusual argument: walk the full way
        return None
    return result


_original_guards: tuple | None = None


def set_original_guards(mc: t.Any) -> None:
    """module_common's names as installed: only walks made with them are shared on disk."""
    global _original_guards
    _original_guards = guards(mc)


def native_check(stamps: tuple[tuple[str, Stamp], ...]) -> t.Any:
    """The native check of ``stamps``, or None where one does not fit (a stamp's field out
    of range: then ``_unchanged`` checks them)."""
    try:
        return _native.FinderStamps(stamps)
    except Exception:  # noqa: BLE001 - checked in Python instead
        return None


def unchanged(closure: Closure) -> bool:
    """True while every stamp the closure depended on is the same."""
    check = closure.check
    return check.unchanged() if check is not None else _unchanged(closure.stamps)


def _unchanged(stamps: t.Iterable[tuple[str, Stamp]]) -> bool:
    stat = os.stat
    for path, expected in stamps:
        try:
            st = stat(path)
        except OSError:
            if expected is None:
                continue
            return False
        if (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_mode) != expected:
            return False
    return True


def lookup(mc: t.Any, memo_key: tuple, metadata_of: t.Callable[[str], t.Any], shared: bool,
           compression: int | None = None) -> Closure | None:
    """The remembered closure for ``memo_key`` if nothing it depended on changed: from this
    process's memory, else (``shared``) from a record on disk.  ``compression``: the payload
    will be written natively with it into an empty archive, so a closure from disk whose
    entries for it are kept on disk is returned ``unread`` (the files are not read)."""
    closure = _closures.get(memo_key)
    if closure is not None:
        if (closure.guards == guards(mc) and all(metadata_of(c) is m for c, m in closure.metadata)
                and all(absence_state(c) == s for c, s in closure.absent) and unchanged(closure)):
            _counters.extra(PATH, "closure_memo_hit")
            return closure
        _closures.drop(memo_key)
    if not shared or _original_guards is None or guards(mc) != _original_guards:
        return None
    return _from_disk(mc, memo_key, metadata_of, compression)


def _from_disk(mc: t.Any, memo_key: tuple, metadata_of: t.Callable[[str], t.Any], compression: int | None) -> Closure | None:
    try:
        closure = _read_record(mc, memo_key, metadata_of, compression)
    except Exception:  # noqa: BLE001 - any doubt is a miss: ansible-core's own walk then runs
        return None
    if closure is not None:
        # (the closure as kept in memory, so what this walk keeps in its ``written`` is
        # there for the next; with the entries just found on disk, which memory does not hold)
        closure = _keep(memo_key, closure)._replace(kept_file=closure.kept_file, from_disk=True)
        _counters.extra(PATH, "closure_disk_hit")
    return closure


def _read_record(mc: t.Any, memo_key: tuple, metadata_of: t.Callable[[str], t.Any], compression: int | None) -> Closure | None:
    record = _finder_disk.load(mc, memo_key)
    if record is None:
        return None
    files, check, collections, absent_collections, embeds, block_key = record
    # checked natively, straight from the record's encoded stamps (the check is then kept
    # with the closure for its next use)
    if not check.unchanged():
        return None
    # an absent collection stays absent while none of the paths it could appear at (in this
    # process's state) changed: each of them must be among the stamps just checked
    absent = []
    if absent_collections:
        stamped = {os.fsdecode(path) for path in check.paths()}
        for collection in absent_collections:
            state = absence_state(collection)
            if state is None or not stamped.issuperset(absence_paths(collection, state)):
                return None
            absent.append((collection, state))
    # the payload entries written from these very files, kept on disk: then no file is read
    path = _finder_disk.block_path(block_key, compression) if compression is not None else None
    kept = load_kept(path) if path is not None else None
    if kept is None and path is not None and os.path.exists(path):
        _finder_disk.bad_blocks.put(path, True)  # (damaged: written again once this walk wrote its entries)
    if kept is not None:
        _counters.extra(PATH, "kept_block_found")
        found = tuple((parts, output_path, None if origin is not None else b'') for parts, output_path, origin in files)
    else:
        found = _read(files)
        if found is None:
            return None
    origins = {output_path: origin for _, output_path, origin in files if origin is not None}
    metadata = tuple((c, metadata_of(c)) for c in collections)
    # (the stamps themselves stay encoded: only ``check`` reads them)
    return Closure(guards(mc), found, (), metadata, check=check, absent=tuple(absent),
                   embeds=embeds, origins=origins, block_key=block_key, unread=kept is not None, kept_file=kept)


def _read(files: t.Iterable[tuple[tuple[str, ...], str, str | None]]) -> tuple | None:
    """(parts, zip name, source) of each (parts, zip name, origin), the file read (b'' for
    none); None when a file other than a package's ``__init__.py`` is missing."""
    found = []
    for parts, output_path, origin in files:
        if origin is None:
            source = b''
        else:
            try:
                with open(origin, 'rb') as f:  # as the locators read (the stamps say it is the same file)
                    source = f.read()
            except FileNotFoundError:
                if not origin.endswith('/__init__.py'):
                    return None
                source = b''  # a collection package without one: the collection loader gives b''
            # left untagged: the bytes are the same, and the origin the locator's tag would
            # carry is kept for the one reader of it (the debugger's source mapping)
        found.append((parts, output_path, source))
    return tuple(found)


class SourcesGone(Exception):
    """A file of an ``unread`` closure went away after its stamp was checked: the walk is
    made again by ansible-core's own code (nothing was written yet)."""


def read_sources(closure: Closure) -> tuple:
    """The files of an ``unread`` closure, read now: (parts, zip name, source) each.  Raises
    SourcesGone for a file gone since its stamp was checked (this walk's answer can no
    longer be anyone's)."""
    origins = closure.origins or {}
    found = _read((parts, output_path, origins.get(output_path) if source is None else None)
                  for parts, output_path, source in closure.files)
    if found is None:
        raise SourcesGone("a module_utils file went away while the payload was built")
    return found


def _keep(memo_key: tuple, closure: Closure) -> Closure:
    check = closure.check if closure.check is not None else native_check(closure.stamps)
    kept = closure._replace(check=check, written={}, kept_file=None)
    _closures.put(memo_key, kept)
    return kept


class Recorder:
    """Collects, during a full walk, what a closure needs; ``ok`` turns False at the first
    thing that must not be remembered."""

    def __init__(self, mc: t.Any) -> None:
        self.ok = True
        self.mc = mc
        self.guards = guards(mc)
        self.files: list[tuple[tuple[str, ...], str, t.Any]] = []
        self.stamps: dict[str, Stamp] = {}
        self.collections: set[str] = set()
        self.absent: dict[str, tuple] = {}
        self.embeds: t.Any = None  # set by the walk of a module with embeds (see _finder_embeds)
        self.checks: t.Any = None  # the walk's WalkChecks, set by the walk

    def located(self, located: Located | None) -> None:
        if located is None:
            self.ok = False
            return
        self.stamps.update(located.dir_stamps)
        if located.collection is not None:
            self.collections.add(located.collection)
        for collection, state in located.absent:
            if self.absent.setdefault(collection, state) != state:
                self.ok = False

    def found(self, fq_name_parts: tuple[str, ...], output_path: str, source: t.Any) -> None:
        self.files.append((tuple(fq_name_parts), output_path, source))

    def store(self, memo_key: tuple | None, metadata_of: t.Callable[[str], t.Any], shared: bool) -> None:
        if not self.ok or memo_key is None or not trusted(self.stamps.items()):
            return
        collections = sorted(self.collections)
        try:
            metadata = tuple((c, metadata_of(c)) for c in collections)
        except Exception:  # noqa: BLE001 - not rememberable then
            return
        # still absent at the end of the walk (the stamps were taken before each look)
        if any(absence_state(c) != s for c, s in self.absent.items()):
            return
        block_key = None
        if shared and _original_guards is not None and self.guards == _original_guards:
            origins = []
            for parts, output_path, source in self.files:
                origin = self.mc.Origin.get_tag(source)
                origins.append((parts, output_path, origin.path if origin is not None else None))
            block_key = _finder_disk.store(self.mc, memo_key, origins, self.stamps, collections, sorted(self.absent),
                                           self.embeds)
        _keep(memo_key, Closure(self.guards, tuple(self.files), tuple(self.stamps.items()), metadata,
                                absent=tuple(self.absent.items()), embeds=self.embeds, block_key=block_key))
