"""Zip archives byte-identical to CPython's ``zipfile``, written natively.

``build_zip(entries, date_time, compression)`` returns the bytes that
``zipfile.ZipFile(BytesIO(), mode='w', compression=compression)`` holds after
``writestr(ZipInfo(name, date_time) with compress_type=compression, data)`` for each
``(name, data)`` in order, and ``close()``: what ansible-core's AnsiBallZ payload is.

``PayloadZipFile(fp, compression)`` is the same writer behind the part of the ``ZipFile``
interface ansible-core uses (``writestr``, ``close``, ``namelist``, ``compression``...), so
code written for a ``ZipFile`` writes into it unchanged.  Anything else asked of it hands the
archive over to a real ``zipfile.ZipFile``, which replays the entries written so far and
carries on: the bytes stay the same either way.

Deflate runs through the native zlib the extension links (the system's ``libz`` where the
wheel was built with it, else a copy built in), with zipfile's parameters.  The first deflated
archive checks that the native zlib gives the interpreter's bytes; where it does not, entries are
compressed by the interpreter's ``zlib`` instead.

Each entry is a deflate stream of its own, so the process remembers the streams of its
entries (up to 64 MiB), keyed by content and reused only for byte-equal data:
the module_utils every payload carries are deflated once per process.  ``warm_cache()``
fills it ahead (in a parent before it forks), ``cache_stats()`` and ``clear_cache()`` look
at and empty it.  With a ``cache_dir`` (a directory private to the user, see
``private_cache_dir()``), streams are also left in files that other processes read back,
again only for byte-equal data.
"""

from __future__ import annotations

import functools
import io
import os
import random
import stat
import sys
import threading
import time
import typing as t
import warnings
import weakref
import zipfile
import zlib

from . import _counters, _fork, _native

__all__ = [
    "PayloadZipFile", "build_zip", "cache_stats", "clear_cache", "private_cache_dir", "warm_cache",
]  # fmt: skip

ZIP_STORED = zipfile.ZIP_STORED
ZIP_DEFLATED = zipfile.ZIP_DEFLATED
_NATIVE_METHODS = (ZIP_STORED, ZIP_DEFLATED)
_PATH = "payload"


def build_zip(
    entries: t.Iterable[tuple[str, bytes | bytearray | str]],
    date_time: t.Sequence[int],
    compression: int,
    *,
    cache_dir: str | os.PathLike[str] | None = None,
) -> bytes:
    """The zip archive of ``entries``, byte for byte what zipfile writes for them.

    ``entries``: ``(name, data)`` pairs in archive order; ``name`` a ``str`` (cut at its first
    NUL, as ``ZipInfo`` does), ``data`` bytes, bytearray or str (written as UTF-8).  A name
    given twice is written twice, with zipfile's ``UserWarning`` "Duplicate name: ...".
    ``date_time``: six ints (year, month, day, hour, minute, second), as ``ZipInfo`` takes;
    as in zipfile, a year before 1980 raises ``ValueError`` and parts that do not fit the DOS
    fields raise ``struct.error`` (once an entry uses the date).  ``compression``: ``zipfile.ZIP_STORED`` or
    ``ZIP_DEFLATED`` (native); ``ZIP_BZIP2`` and ``ZIP_LZMA`` are written by zipfile itself;
    anything else raises zipfile's ``NotImplementedError``.  ``cache_dir``: a directory private
    to this user and run where deflated entries are shared with other processes (see
    :func:`private_cache_dir`).  Other bad input raises a ``TypeError`` or ``ValueError``.

    Written natively (counted under ``payload`` in ``ansible_accel.status()``), except, each
    counted as a fallback with its reason: ``ZIP_BZIP2``/``ZIP_LZMA``, a date part beyond 64
    bits, a system zlib that does not give the interpreter's bytes (deflated entries) and an
    internal error of the native writer: zipfile writes those archives, with the same bytes.
    """
    if compression in _NATIVE_METHODS and (compression == ZIP_STORED or _native_zlib_matches()) and _native_date(date_time):
        entries = list(entries)
        archive = _native.payload_build_zip(entries, date_time, compression, cache_dir)
        if isinstance(archive, str):  # the native writer failed inside: zipfile writes the archive
            return _counters.call_original(_PATH, archive, _zipfile_archive_unwarned, entries, date_time, compression)
        _counters.native(_PATH)
        return archive
    zipfile._check_compression(compression)  # zipfile's own error for unknown methods
    if compression not in _NATIVE_METHODS:
        reason = "build_zip: a compression method zipfile writes itself"
    elif not _native_date(date_time):
        reason = "build_zip: a date part beyond 64 bits"
    else:
        reason = "build_zip: the native zlib does not give the interpreter's bytes"
    return _counters.call_original(_PATH, reason, _zipfile_archive, entries, date_time, compression)


def _zipfile_archive_unwarned(entries: list[tuple[str, t.Any]], date_time: t.Sequence[int], compression: int) -> bytes:
    """:func:`_zipfile_archive` without its warnings: the native writer gave the duplicate
    names' warnings before it failed."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _zipfile_archive(entries, date_time, compression)


def _zipfile_archive(entries: t.Iterable[tuple[str, t.Any]], date_time: t.Sequence[int], compression: int) -> bytes:
    buffer = io.BytesIO()
    archive: PayloadZipFile | zipfile.ZipFile
    archive = PayloadZipFile(buffer, compression) if compression in _NATIVE_METHODS and _native_date(date_time) else zipfile.ZipFile(buffer, "w", compression)
    for name, data in entries:
        info = zipfile.ZipInfo(filename=name, date_time=tuple(date_time))
        info.compress_type = compression
        archive.writestr(info, data)
    archive.close()
    return buffer.getvalue()


def _native_date(date_time: t.Any) -> bool:
    """False for a date with an int part beyond 64 bits, which the native writer cannot take
    and zipfile only fails on (with its own error) once an entry uses it: zipfile writes those."""
    try:
        return not any(type(p) is int and not -(1 << 63) <= p < 1 << 63 for p in date_time)
    except TypeError:
        return True  # not iterable: the native writer's own clear error


def cache_stats() -> dict[str, int]:
    """The process's deflated-entry cache (lookups answered, missed, bytes held) and the
    streams taken from a shared ``cache_dir``."""
    hits, misses, held, disk_hits = _native.payload_cache_stats()
    return {"hits": hits, "misses": misses, "bytes": held, "disk_hits": disk_hits}


def warm_cache(datas: t.Iterable[bytes], *, cache_dir: str | os.PathLike[str] | None = None) -> int:
    """Deflate ``datas`` ahead of time into the process cache (and ``cache_dir``), so the
    archives that hold them later only copy their streams.  Made for the controller before
    ansible-playbook forks its workers: they inherit the cache.  Returns how many were taken
    (none when the native zlib is not the interpreter's, whose streams would not be used)."""
    if not _native_zlib_matches():
        return 0
    return _native.payload_warm_cache(list(datas), cache_dir)


def clear_cache() -> None:
    """Forget every remembered deflate stream (and zero the counts); files in a
    ``cache_dir`` stay."""
    _native.payload_cache_clear()


def private_cache_dir(parent: str | os.PathLike[str]) -> str | None:
    """The directory under ``parent`` for deflated entries shared between processes, or None
    when ``parent`` is not a directory private to this user (mode 0700, owned by us): a
    stream read from there goes into payloads, so only the user's own processes may write it.
    Named after the zlib in use, whose streams it holds."""
    try:
        info = os.stat(parent)
    except OSError:
        return None
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        return None
    return os.path.join(parent, f"ansible_accel_deflate_zlib{zlib.ZLIB_RUNTIME_VERSION}")


def _zlib_probe() -> bytes:
    # Text with repeats at many distances and noise: enough to walk zlib's match finder,
    # lazy matching and block splitting.
    # (the noise from a seeded generator: the same bytes every time, made in C)
    text = b"".join(b"%d: the payload of module %d imports %d\n" % (i, i * 7 % 13, i * i % 101) for i in range(3000))
    noise = random.Random(2654435761).randbytes(40000)
    return text + noise + text[:5000]


@functools.cache
def _native_zlib_matches() -> bool:
    """True when the native deflate gives the interpreter's ``zlib`` bytes (checked once)."""
    probe = _zlib_probe()
    compressor = zlib.compressobj(zlib.Z_DEFAULT_COMPRESSION, zlib.DEFLATED, -15)
    expected = compressor.compress(probe) + compressor.flush()
    try:
        return _native.payload_deflate(probe) == expected
    except Exception:  # noqa: BLE001 - any failure of the native deflate means "don't use it"
        return False


def _interpreter_deflate(data: bytes, level: int | None) -> tuple[int, bytes]:
    compressor = zlib.compressobj(zlib.Z_DEFAULT_COMPRESSION if level is None else level, zlib.DEFLATED, -15)
    return zlib.crc32(data), compressor.compress(data) + compressor.flush()


# Bytes of kept entries held by the process at most (each _KeptEntries counts while it lives).
_KEPT_LIMIT = 64 << 20
_kept_bytes = 0
_kept_lock = threading.Lock()


def _hold_kept(nbytes: int) -> bool:
    global _kept_bytes
    with _kept_lock:
        if _kept_bytes + nbytes > _KEPT_LIMIT:
            return False
        _kept_bytes += nbytes
        return True


def _release_kept(nbytes: int) -> None:
    global _kept_bytes
    with _kept_lock:
        _kept_bytes -= nbytes


def _renew_kept_lock() -> None:
    global _kept_lock
    _kept_lock = threading.Lock()  # another thread may have held the parent's at the fork


_fork.register(after_in_child=_renew_kept_lock)


class _KeptEntries:
    """Entries of an archive kept by :meth:`PayloadZipFile.keep_entries`: the native block
    (headers and data as written) and each entry's ``ZipInfo`` fields besides its date and
    what writing sets."""

    __slots__ = ("block", "fields", "names", "__weakref__")

    def __init__(self, block: t.Any, fields: tuple) -> None:
        self.block, self.fields = block, fields
        self.names = frozenset(f[0] for f in fields)


def _retain_kept(kept: _KeptEntries) -> bool:
    """Count entries from :func:`_load_kept` against the room kept entries may take in
    memory, as :meth:`PayloadZipFile.keep_entries` counts its own, for as long as ``kept``
    lives; False (nothing counted) when there is no room for them: then do not keep them."""
    nbytes = kept.block.nbytes
    if not _hold_kept(nbytes):
        return False
    weakref.finalize(kept, _release_kept, nbytes)
    return True


def _load_kept(path: str | os.PathLike[str]) -> _KeptEntries | None:
    """The entries a :meth:`PayloadZipFile.save_entries` left in the file ``path`` (for
    :meth:`PayloadZipFile.writestr_kept`), or None: no such file, or a damaged one."""
    block = _native.payload_block_load(path)
    if block is None:
        return None
    return _KeptEntries(block, tuple(block.fields()))


class PayloadZipFile:
    """``zipfile.ZipFile(fp, mode='w', compression=compression)`` for an empty, seekable
    ``fp`` at position 0 (a fresh ``BytesIO``), written natively.  ``cache_dir`` as for
    :func:`build_zip`.

    ``writestr``, ``close``, ``namelist``, ``infolist``, ``getinfo``, ``comment`` and the
    context manager behave as zipfile's, ``ZipInfo`` objects included (their CRC, sizes,
    offsets and versions are set as zipfile sets them).  The archive goes into ``fp`` at
    ``close()``.  Anything else (``write``, ``open``, ``mkdir``, a ZipInfo asking for bzip2
    or lzma...) hands the archive over to a real ``ZipFile`` (see :meth:`hand_over`).
    """

    def __init__(self, fp: t.IO[bytes], compression: int = ZIP_STORED, *, cache_dir: str | os.PathLike[str] | None = None) -> None:
        zipfile._check_compression(compression)
        if compression not in _NATIVE_METHODS:
            raise ValueError(f"PayloadZipFile writes ZIP_STORED or ZIP_DEFLATED, not {compression!r}")
        self.fp: t.IO[bytes] | None = fp
        self.mode = "w"
        self.compression = compression
        self.compresslevel = None
        self.debug = 0
        self._filelist: list[zipfile.ZipInfo] = []
        self._name_to_info: dict[str, zipfile.ZipInfo] = {}
        # entries written from a _KeptEntries whose ZipInfo objects are made when first asked
        # for (see writestr_kept): they always come first
        self._unmade: tuple[_KeptEntries, tuple] | None = None
        self._comment = b""
        self._datas: list[bytes] = []
        # the block of kept entries written first whose data were not given (see
        # writestr_kept): inflated from it into _data when first asked for
        self._data_block: t.Any = None
        self._delegate: zipfile.ZipFile | None = None
        self._writer = _native.PayloadZipWriter(zipfile.ZIP64_LIMIT, zipfile.ZIP_FILECOUNT_LIMIT, sys.version_info >= (3, 13), cache_dir)

    # -- what ansible-core uses -----------------------------------------------------------

    def writestr(
        self,
        zinfo_or_arcname: zipfile.ZipInfo | str,
        data: bytes | bytearray | str,
        compress_type: int | None = None,
        compresslevel: int | None = None,
    ) -> None:
        if self._delegate is not None:
            return self._delegate.writestr(zinfo_or_arcname, data, compress_type, compresslevel)
        if isinstance(data, str):
            data = data.encode("utf-8")
        zinfo = zinfo_or_arcname if isinstance(zinfo_or_arcname, zipfile.ZipInfo) else self._new_info(zinfo_or_arcname)
        if not self.fp:
            raise ValueError("Attempt to write to ZIP archive that was already closed")
        if compress_type is not None:
            zinfo.compress_type = compress_type
        if compresslevel is not None:
            zinfo._compresslevel = compresslevel
        zinfo.file_size = len(data)
        if zinfo.compress_type not in _NATIVE_METHODS or not isinstance(data, (bytes, bytearray)) or not _native_date(zinfo.date_time):
            self.hand_over().writestr(zinfo, data)
            return None
        if self._has_name(zinfo.filename):
            warnings.warn(f"Duplicate name: {zinfo.filename!r}", stacklevel=2)
        precompressed = None
        if zinfo.compress_type == ZIP_DEFLATED and (zinfo._compresslevel is not None or not _native_zlib_matches()):
            precompressed = _interpreter_deflate(data, zinfo._compresslevel)
        zinfo.compress_size = 0
        zinfo.CRC = 0
        written = self._writer.add(
            zinfo.filename, zinfo.date_time, zinfo.compress_type, zinfo.create_system,
            zinfo.create_version, zinfo.extract_version, zinfo.reserved, zinfo.internal_attr,
            zinfo.external_attr, zinfo.extra, zinfo.comment, data, precompressed,
        )  # fmt: skip
        if isinstance(written, str):
            # The native writer failed inside: zipfile carries on from the entries kept
            # here, so nothing written so far is lost.
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # duplicates were warned about already
                self.hand_over().writestr(zinfo, data)
            return None
        (
            zinfo.header_offset, zinfo.CRC, zinfo.compress_size, zinfo.file_size,
            _flag_bits_written, zinfo.external_attr, zinfo.create_version, zinfo.extract_version,
        ) = written  # fmt: skip
        zinfo.flag_bits = 0  # zipfile keeps the UTF-8 name flag out of the ZipInfo
        self._filelist.append(zinfo)
        self._name_to_info[zinfo.filename] = zinfo
        self._datas.append(data)
        return None

    def writestr_many(self, items: t.Iterable[tuple[zipfile.ZipInfo, bytes | bytearray]]) -> None:
        """``writestr(zinfo, data)`` for each ``(zinfo, data)`` in order, the common case
        (a new name, stored or deflated at zlib's default level, bytes) in one native call:
        the same archive, ZipInfo objects and warnings as the loop."""
        items = list(items)
        names = {zinfo.filename for zinfo, _ in items}
        simple = (
            self._delegate is None and self.fp is not None and len(names) == len(items)
            and not any(self._has_name(name) for name in names)
            and all(isinstance(data, (bytes, bytearray)) for _, data in items)
            and all(z.compress_type in _NATIVE_METHODS and z._compresslevel is None for z, _ in items)
            and (_native_zlib_matches() or all(z.compress_type == ZIP_STORED for z, _ in items))
        )  # fmt: skip
        if not simple:
            for zinfo, data in items:
                self.writestr(zinfo, data)
            return
        answer = self._writer.add_many([
            (z.filename, z.date_time, z.compress_type, z.create_system, z.create_version, z.extract_version,
             z.reserved, z.internal_attr, z.external_attr, z.extra, z.comment, data)
            for z, data in items
        ])  # fmt: skip
        if isinstance(answer, str):
            # The native writer failed inside: zipfile carries on from the entries kept
            # here (none of this batch), so nothing written so far is lost.  The batch's
            # names are all new: zipfile has no duplicate to warn about.
            delegate = self.hand_over()
            for zinfo, data in items:
                delegate.writestr(zinfo, data)
            return
        written, error = answer
        for (zinfo, data), fields in zip(items, written):
            (
                zinfo.header_offset, zinfo.CRC, zinfo.compress_size, zinfo.file_size,
                _flag_bits_written, zinfo.external_attr, zinfo.create_version, zinfo.extract_version,
            ) = fields  # fmt: skip
            zinfo.flag_bits = 0
            self._filelist.append(zinfo)
            self._name_to_info[zinfo.filename] = zinfo
            self._datas.append(data)
        if error is not None:
            zinfo, data = items[len(written)]  # as writestr leaves the entry it failed on
            zinfo.file_size, zinfo.compress_size, zinfo.CRC = len(data), 0, 0
            raise error

    @property
    def _data(self) -> list[bytes]:
        """Each entry's data, in order (as written, for hand_over and the bytecode path)."""
        block, self._data_block = self._data_block, None
        if block is not None:
            self._datas[:0] = block.datas()
        return self._datas

    @_data.setter
    def _data(self, value: list[bytes]) -> None:
        self._data_block, self._datas = None, value

    def _entries_block(self) -> t.Any:
        """The native block of the entries written so far, when every one was written
        natively from a ``ZipInfo`` by :meth:`writestr_many` or :meth:`writestr` (or from a
        kept block), all with one date and no name twice; else None."""
        infos = self.filelist
        if (
            self._delegate is not None or self.fp is None or not infos or len({z.date_time for z in infos}) != 1
            or len({z.filename for z in infos}) != len(infos)  # (duplicates warn when written)
        ):  # fmt: skip
            return None
        block = self._writer.block()
        if block is None or len(block) != len(infos):
            return None
        return block

    def save_entries(self, directory: str, name: str, largest: int | None = None) -> bool:
        """Leave the entries written so far in ``directory`` as the file ``name``, for
        :func:`_load_kept` in another process (as :meth:`keep_entries` keeps them); not when
        their headers and data take more than ``largest`` bytes."""
        block = self._entries_block()
        if block is None or (largest is not None and block.nbytes > largest):
            return False
        return block.save(directory, name)

    def keep_entries(self) -> _KeptEntries | None:
        """The entries written so far, kept to be written again into other empty archives
        by :meth:`writestr_kept`; None unless every one was written natively from a
        ``ZipInfo`` by :meth:`writestr_many` or :meth:`writestr`, all with one date and
        no name twice."""
        block = self._entries_block()
        if block is None or not _hold_kept(block.nbytes):
            return None
        infos = self.filelist
        kept = _KeptEntries(block, tuple(
            (z.filename, z.compress_type, z.create_system, z.reserved, z.internal_attr, z.extra, z.comment)
            for z in infos
        ))  # fmt: skip
        weakref.finalize(kept, _release_kept, block.nbytes)
        return kept

    def writestr_kept(self, kept: _KeptEntries, date_time: tuple, datas: t.Sequence[bytes] | None = None) -> bool:
        """Into this empty archive, ``kept``'s entries (whose data are ``datas``, in order) dated
        ``date_time`` (six ints): the archive, ``ZipInfo`` objects and warnings are then those of
        ``writestr_many`` writing ``ZipInfo(name, date_time)`` for each with the kept fields.
        ``datas`` None: the data the kept block holds (inflated only if they are asked for).
        False, with nothing written, where it cannot be done this way."""
        if (
            self._delegate is not None or self.fp is None or self._filelist or self._unmade is not None
            or self._datas or self._data_block is not None
            or (datas is not None and len(datas) != len(kept.fields)) or type(date_time) is not tuple or len(date_time) != 6
            or not all(type(p) is int for p in date_time) or date_time[0] < 1980
        ):  # fmt: skip
            return False
        written = self._writer.add_block(kept.block, date_time)
        if written is None:
            return False
        if isinstance(written, str):
            # The native writer failed inside: zipfile takes the (still empty) archive, and
            # the caller writes the entries the ordinary way.
            self.hand_over()
            return False
        self._unmade = (kept, date_time, written)
        if datas is None:
            self._data_block = kept.block
        else:
            self._datas.extend(datas)
        return True

    def _has_name(self, name: str) -> bool:
        return name in self._name_to_info or (self._unmade is not None and name in self._unmade[0].names)

    def _make_unmade(self) -> None:
        """The ZipInfo objects of the kept entries, made as writestr_many leaves them."""
        unmade, self._unmade = self._unmade, None
        if unmade is None:
            return
        kept, date_time, written = unmade
        infos = []
        for (name, compress_type, system, reserved, internal, extra, comment), fields in zip(kept.fields, written):
            zinfo = zipfile.ZipInfo(filename=name, date_time=date_time)
            zinfo.compress_type, zinfo.create_system, zinfo.reserved = compress_type, system, reserved
            zinfo.internal_attr, zinfo.extra, zinfo.comment = internal, extra, comment
            (
                zinfo.header_offset, zinfo.CRC, zinfo.compress_size, zinfo.file_size,
                _flag_bits_written, zinfo.external_attr, zinfo.create_version, zinfo.extract_version,
            ) = fields  # fmt: skip
            zinfo.flag_bits = 0
            infos.append(zinfo)
        later = dict(self._name_to_info)
        self._filelist[:0] = infos
        self._name_to_info.clear()
        self._name_to_info.update((z.filename, z) for z in infos)
        self._name_to_info.update(later)

    @property
    def filelist(self) -> list[zipfile.ZipInfo]:
        self._make_unmade()
        return self._filelist

    @filelist.setter
    def filelist(self, value: list[zipfile.ZipInfo]) -> None:
        self._make_unmade()
        self._filelist = value

    @property
    def NameToInfo(self) -> dict[str, zipfile.ZipInfo]:  # noqa: N802 - zipfile's name
        self._make_unmade()
        return self._name_to_info

    @NameToInfo.setter
    def NameToInfo(self, value: dict[str, zipfile.ZipInfo]) -> None:  # noqa: N802 - zipfile's name
        self._make_unmade()
        self._name_to_info = value

    def close(self) -> None:
        if self._delegate is not None:
            self._delegate.close()
            self.fp = None
            return
        if self.fp is None:
            return
        archive = self._writer.finish(self._comment)
        if isinstance(archive, str):
            self.hand_over().close()  # zipfile writes the archive from the entries kept here
            self.fp = None
            return
        fp, self.fp = self.fp, None
        self._data = []
        fp.write(archive)
        fp.flush()

    def namelist(self) -> list[str]:
        if self._delegate is not None:
            return self._delegate.namelist()
        return [info.filename for info in self.filelist]

    def infolist(self) -> list[zipfile.ZipInfo]:
        return self._delegate.infolist() if self._delegate is not None else self.filelist

    def getinfo(self, name: str) -> zipfile.ZipInfo:
        if self._delegate is not None:
            return self._delegate.getinfo(name)
        info = self.NameToInfo.get(name)
        if info is None:
            raise KeyError("There is no item named %r in the archive" % name)
        return info

    @property
    def comment(self) -> bytes:
        return self._delegate.comment if self._delegate is not None else self._comment

    @comment.setter
    def comment(self, comment: bytes) -> None:
        if self._delegate is not None:
            self._delegate.comment = comment
            return
        if not isinstance(comment, bytes):
            raise TypeError("comment: expected bytes, got %s" % type(comment).__name__)
        if len(comment) > zipfile.ZIP_MAX_COMMENT:
            warnings.warn("Archive comment is too long; truncating to %d bytes" % zipfile.ZIP_MAX_COMMENT, stacklevel=2)
            comment = comment[: zipfile.ZIP_MAX_COMMENT]
        self._comment = comment

    def __enter__(self) -> PayloadZipFile:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self.fp is None else "mode='w'"
        return f"<{type(self).__name__} {state} native={self._delegate is None}>"

    # -- everything else: a real ZipFile ----------------------------------------------------

    def hand_over(self) -> zipfile.ZipFile:
        """From here on a real ``zipfile.ZipFile`` on the same file does the work: it writes
        again the entries written so far (with their ZipInfo objects) and takes every call."""
        if self._delegate is None:
            if self.fp is None:
                raise ValueError("Attempt to write to ZIP archive that was already closed")
            delegate = zipfile.ZipFile(self.fp, mode="w", compression=self.compression)
            delegate.comment = self._comment
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # duplicates were warned about once already
                for info, data in zip(self.filelist, self._data):
                    delegate.writestr(info, data)
            self._delegate, self._data = delegate, []
            self.filelist, self.NameToInfo = delegate.filelist, delegate.NameToInfo
        return self._delegate

    def __getattr__(self, name: str) -> t.Any:
        if name.startswith("__") or name in ("_delegate", "_writer", "_datas", "_data_block", "_filelist", "_name_to_info", "_unmade"):
            raise AttributeError(name)
        return getattr(self.hand_over(), name)

    def _new_info(self, arcname: str) -> zipfile.ZipInfo:
        # What writestr makes of a bare name: local time, the archive's compression.
        zinfo = zipfile.ZipInfo(filename=arcname, date_time=time.localtime(time.time())[:6])
        zinfo.compress_type = self.compression
        zinfo._compresslevel = self.compresslevel
        if zinfo.filename.endswith("/"):
            zinfo.external_attr = 0o40775 << 16 | 0x10
        else:
            zinfo.external_attr = 0o600 << 16
        return zinfo
