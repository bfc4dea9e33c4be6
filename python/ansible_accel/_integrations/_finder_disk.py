"""Remembered closures on disk, for the ``finder`` path: what a walk found, shared by the
forked workers of a run and by later runs (each worker is a fresh process whose memory
memo dies with it).

A record holds no file content: the list of files found (Python name, zip name, the file
read) and the stat stamp of every file and directory the walk's answers depended on, plus
what a fresh process must also re-check: ansible.builtin's routing file, and for every
collection used, each place the collection loader could find it.  It is used only while all
of those stamps are unchanged (see ``_finder_closure``), and the files are then read afresh.
Its name is a SHA-256 of everything else the walk depended on (ansible-core and accelerator
versions, the module's own content, the module_utils search path, collection paths,
serialisation profile, extensions).

The directory sits beside ansible-core's per-run local temporary directories (under the
configured ``DEFAULT_LOCAL_TMP`` root), only if that root is private to the user (mode 0700,
owned by us), and is made 0700 itself.  Records are written to a temporary file and renamed
into place, so concurrent workers only ever read whole records; an unreadable record is a
miss.

The directory is bounded: a record read is touched (its mtime is its last use), and after
each store, past ``MAX_RECORDS`` records or ``MAX_BYTES`` bytes the least recently used go
until a quarter of the room is free again; temporary files a dead worker left behind go
after an hour.
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import json
import os
import stat
import sys
import time
import typing as t

from .. import __version__, _native
from .._private_dir import is_private_dir
from ._finder_locate import Stamp, stamp, trusted
from ._memo import BoundedMemo

# (3: a record holds the ``block`` token naming its closure's kept payload entries, and
# its stamps encoded for the native check)
FORMAT = 3
# Bounds of the records' directory (a record is 30-40 KiB for most modules, up to ~0.5 MiB
# for a module with hundreds of module_utils).
MAX_RECORDS = 2000
MAX_BYTES = 128 << 20
# A record larger than this is not left (so a directory of few records is within the bounds
# without looking at their sizes: see prune()).
LARGEST_RECORD = 1 << 20
_STALE_TEMP_NS = 3600 * 1_000_000_000
# (named for format 2, the first whose directory it was: the record names carry the format)
_DIR_NAME = "ansible_accel_finder_v2"
_dir_for: dict[str, str | None] = {}

# The payload entries last written from a record's closure (see _finder_write): beside the
# records, in a directory of their own, bounded the same way.  A block is named by its record,
# the record's ``block`` token (a digest of the stamps the record holds: a record written
# again for changed files has another) and the compression.
_BLOCK_DIR_NAME = "ansible_accel_finder_blocks_v1"
MAX_BLOCKS = 1000
MAX_BLOCK_BYTES = 128 << 20
LARGEST_BLOCK = 8 << 20  # (larger ones are not left)
_block_dir_for: dict[str, str | None] = {}
# blocks found on disk but not readable (damaged): written again, not taken as present
bad_blocks: BoundedMemo[str, bool] = BoundedMemo(64)


def directory() -> str | None:
    """The records' directory for this run's local tmp root, made on first use; None when
    there is no private place for it."""
    return _private_subdir(_DIR_NAME, _dir_for)


def block_directory() -> str | None:
    """The kept entries' directory for this run's local tmp root, made on first use."""
    return _private_subdir(_BLOCK_DIR_NAME, _block_dir_for)


def _private_subdir(name: str, known: dict[str, str | None]) -> str | None:
    try:
        from ansible import constants as C

        local_tmp = C.DEFAULT_LOCAL_TMP
    except Exception:  # noqa: BLE001 - no local tmp: no records
        return None
    if not isinstance(local_tmp, str):
        return None
    if local_tmp in known:
        return known[local_tmp]
    root = os.path.dirname(local_tmp)
    result = None
    if is_private_dir(root):
        path = os.path.join(root, name)
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            pass
        except OSError:
            path = None
        if path is not None and is_private_dir(path):
            result = path
    known[local_tmp] = result
    return result


def _collection_paths() -> list[str]:
    from ansible.utils.collection_loader import AnsibleCollectionConfig

    finder = AnsibleCollectionConfig.collection_finder
    return [] if finder is None else list(AnsibleCollectionConfig.collection_paths)


_last_digest: tuple[bytes, str] | None = None


def _digest(data: bytes) -> str:
    """SHA-256 of ``data``, remembered for the last one (a walk may name two records of it)."""
    global _last_digest
    last = _last_digest
    if last is not None and last[0] is data:
        return last[1]
    digest = hashlib.sha256(data).hexdigest()
    _last_digest = (data, digest)
    return digest


@functools.lru_cache(maxsize=8)
def _realpath(path: str) -> str:
    """Where ansible-core's module_common really is (one lstat per component: asked once)."""
    return os.path.realpath(path)


def record_name(mc: t.Any, memo_key: tuple) -> str | None:
    name, module_fqn, is_text, data, module_utils_paths, profile, extensions, _, with_embeds = memo_key
    try:
        identity = json.dumps([
            FORMAT, __version__, mc.__version__, _realpath(mc.__file__), list(sys.version_info[:2]),
            name, module_fqn, is_text, _digest(data), list(module_utils_paths), str(profile),
            list(extensions), _collection_paths(), with_embeds,
        ])  # fmt: skip
    except Exception:  # noqa: BLE001 - not describable: not shared
        return None
    return hashlib.sha256(identity.encode("utf-8", "surrogatepass")).hexdigest()


def builtin_routing_file(mc: t.Any) -> str:
    return os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(mc.__file__))), 'config', 'ansible_builtin_runtime.yml')


def _cross_process_stamps(mc: t.Any, collections: t.Iterable[str]) -> list[tuple[str, Stamp]]:
    """What a fresh process's answers depend on beyond the walk's own stamps: the routing of
    ansible.builtin, and where the collection loader finds each collection."""
    paths = [builtin_routing_file(mc)]
    roots = _collection_paths()
    for collection in collections:
        if collection == 'ansible.builtin':
            continue
        namespace, name = collection.split('.', 1)
        for root in roots:
            paths += [os.path.join(root, 'ansible_collections'), os.path.join(root, 'ansible_collections', namespace),
                      os.path.join(root, 'ansible_collections', namespace, name)]
    return [(p, stamp(p)) for p in paths]


def store(mc: t.Any, memo_key: tuple, files: list[tuple[tuple[str, ...], str, str | None]],
          stamps: dict[str, Stamp], collections: t.Iterable[str], absent: t.Iterable[str] = (),
          embeds: t.Any = None) -> tuple[str, str] | None:
    """Leave the record; returns its (name, block token) once it is in place."""
    where, name = directory(), record_name(mc, memo_key)
    if where is None or name is None:
        return None
    collections = list(collections)
    extra = _cross_process_stamps(mc, collections)
    if not trusted(extra):
        return None
    target = os.path.join(where, name + ".json")
    temp = f"{target}.{os.getpid()}.part"
    try:
        # (checked by a reader straight from these bytes: see _finder_closure._read_record)
        encoded = _native.finder_stamps_encode(list(stamps.items()) + extra)
        # the kept entries of this closure are named by the stamps it holds (see block_path)
        token = hashlib.sha256(encoded).hexdigest()[:32]
        record = {"files": [[list(parts), output, origin] for parts, output, origin in files],
                  "stamps": base64.b64encode(encoded).decode("ascii"), "collections": collections,
                  "absent": list(absent), "embeds": embeds, "block": token}
        text = json.dumps(record)  # (one shot: json.dump to a file would not use the C encoder)
        if len(text) > LARGEST_RECORD:
            return None
        with open(temp, "w", encoding="utf-8", errors="surrogatepass") as f:
            f.write(text)
        os.replace(temp, target)
    except (OSError, ValueError, TypeError, OverflowError):
        try:
            os.unlink(temp)
        except OSError:
            pass
        return None
    prune(where)
    return name, token


def block_path(block_key: tuple[str, str] | None, compression: int) -> str | None:
    """Where the entries written from the closure of record ``block_key`` (its name and
    token) with ``compression`` are kept, or None where there is no such place.

    Whoever writes a block had the record's closure with every stamp the record holds
    unchanged (it checked them, or took them itself) and read the files after that: so a
    block is only ever read by a process that found those very stamps again, and so the
    very same files (a rewrite of a file changes its ctime, see ``_finder_locate``)."""
    if block_key is None:
        return None
    where = block_directory()
    if where is None:
        return None
    name, token = block_key
    if not (isinstance(token, str) and len(token) == 32 and token.isalnum() and token.isascii()):
        return None
    return os.path.join(where, f"{name}-{token}-{int(compression)}.block")


def after_block_saved(path: str) -> None:
    """Bound the blocks' directory after one was left in it."""
    prune(os.path.dirname(path), MAX_BLOCKS, MAX_BLOCK_BYTES, suffix=".block", largest=LARGEST_BLOCK)


def prune(where: str, max_records: int | None = None, max_bytes: int | None = None, *, suffix: str = ".json",
          largest: int = LARGEST_RECORD) -> None:
    """Bound the records in ``where``: the least recently used go once there are too many or
    they take too much room; temporary files older than an hour go too.  Every error (a
    file another process removed first...) is ignored: pruning only ever saves room."""
    max_records = MAX_RECORDS if max_records is None else max_records
    max_bytes = MAX_BYTES if max_bytes is None else max_bytes
    try:
        with os.scandir(where) as scanned:
            entries = [e for e in scanned if e.name.endswith((suffix, ".part"))]
    except OSError:
        return
    count = sum(e.name.endswith(suffix) for e in entries)
    # Few enough records that even all of the largest size would fit: only the temporary
    # files are looked at (a stat of every record on each store grows with the directory).
    within_bounds = count <= max_records and count * largest <= max_bytes
    records: list[tuple[int, int, str]] = []
    now = time.time_ns()
    for entry in entries:
        is_record = entry.name.endswith(suffix)
        if is_record and within_bounds:
            continue
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if not stat.S_ISREG(info.st_mode):
            continue
        if is_record:
            records.append((info.st_mtime_ns, info.st_size, entry.path))
        elif now - info.st_mtime_ns > _STALE_TEMP_NS:
            _unlink(entry.path)
    if within_bounds:
        return
    total = sum(size for _, size, _ in records)
    if len(records) <= max_records and total <= max_bytes:
        return
    records.sort()  # least recently used first
    left = len(records)
    for _, size, path in records:
        if left <= max_records * 3 // 4 and total <= max_bytes * 3 // 4:
            break
        _unlink(path)
        left -= 1
        total -= size


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def load(mc: t.Any, memo_key: tuple) -> tuple[list, t.Any, list[str], list[str], t.Any, tuple | None] | None:
    """(files, stamps, collections, absent collections, embeds, block key) of this walk's
    record, or None (no record, or not readable); the stamps as a ``_native.FinderStampsFile``."""
    where, name = directory(), record_name(mc, memo_key)
    if where is None or name is None:
        return None
    path = os.path.join(where, name + ".json")
    try:
        with open(path, encoding="utf-8", errors="surrogatepass") as f:
            record = json.load(f)
        files = [(tuple(parts), output, origin) for parts, output, origin in record["files"]]
        stamps = _native.FinderStampsFile(base64.b64decode(record["stamps"], validate=True))
        collections = [str(c) for c in record["collections"]]
        absent = [str(c) for c in record["absent"]]
        embeds = record["embeds"]
        if embeds is not None:  # as _finder_embeds.record() gives them
            origin, entries = embeds
            embeds = (None if origin is None else tuple(origin), tuple(tuple(e) for e in entries))
        token = record.get("block")
        block_key = (name, token) if isinstance(token, str) else None
    except (OSError, ValueError, TypeError, KeyError, AttributeError, binascii.Error):
        return None
    try:
        os.utime(path)  # its last use, for prune()
    except OSError:
        pass
    return files, stamps, collections, absent, embeds, block_key
