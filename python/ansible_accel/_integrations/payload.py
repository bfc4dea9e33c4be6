"""The ``payload`` path: the AnsiBallZ payload zip written natively.

ansible-core (2.19 to 2.22) builds a Python module's payload in ``_find_module_utils``:
``zf = zipfile.ZipFile(BytesIO(), mode='w', compression=...)``, then ``recursive_finder``
writes the module_utils closure (``ansible/__init__.py`` and ``ansible/module_utils/__init__.py``
as generated stubs, every module_utils file found, embeds and their package
``__init__.py`` files) and ``_add_module_to_zip`` the module and its package inits, each with
``zf.writestr(_make_zinfo(name, date_time, zf=zf), data)``; ``zf.close()``; the buffer is
base64-encoded into the wrapper and the cache file.

The seam is that one ``zipfile.ZipFile(...)`` call: ``module_common``'s ``zipfile`` becomes a
view of zipfile whose ``ZipFile`` opens an ``ansible_accel.payload.PayloadZipFile`` when the
call is that call (a fresh BytesIO, mode 'w', stored or deflated, no level).  Whatever
writes the entries (ansible-core's ``recursive_finder`` or the ``finder`` path's
replacement) writes into it unchanged through ``writestr``, so the two paths compose.
Deflated entries are shared between the run's forked workers, and with later runs, through
a directory beside the runs' local tmp directories (``ansible_accel.payload`` explains why a
stream read from there is always the one zlib would write).
Counters: one ``native`` per payload written natively; a fallback, with its reason, per
payload written by zipfile (other compressions, a writer handed over to zipfile).
"""

from __future__ import annotations

import io
import os
import types
import typing as t
import zipfile

from .. import _counters
from .._activation import Patch, Unavailable
from ..payload import PayloadZipFile, cache_stats, private_cache_dir
from ..payload import _native_zlib_matches as native_zlib_matches
from .bytecode import add_bytecode as _add_bytecode  # the bytecode path's hook (a no-op unless opted in)

PATH = "payload"
_NATIVE_METHODS = {zipfile.ZIP_STORED: "ZIP_STORED", zipfile.ZIP_DEFLATED: "ZIP_DEFLATED"}


class _CountedPayloadZipFile(PayloadZipFile):
    """A PayloadZipFile that counts its archive on the ``payload`` path, and the entries
    whose deflated stream was reused (from this process, or from another worker's)."""

    def __init__(self, *args: t.Any, **kwargs: t.Any) -> None:
        super().__init__(*args, **kwargs)
        self._stats_at_open = cache_stats()

    def hand_over(self) -> zipfile.ZipFile:
        if self._delegate is None:
            _counters.fallback(PATH, "the payload archive was handed over to zipfile")
        return super().hand_over()

    def close(self) -> None:
        written_natively = self._delegate is None and self.fp is not None
        if written_natively:  # the opt-in bytecode path adds its .pyc entries (reads filelist/_data)
            _add_bytecode(self)
        super().close()
        if written_natively:
            _counters.native(PATH)
            now, then = cache_stats(), self._stats_at_open
            if now["hits"] > then["hits"]:
                _counters.extra(PATH, "entries deflated earlier in this process", now["hits"] - then["hits"])
            if now["disk_hits"] > then["disk_hits"]:
                _counters.extra(PATH, "entries deflated by another process", now["disk_hits"] - then["disk_hits"])


def _why_not_native(file: t.Any, mode: str, compression: int, allowZip64: bool, compresslevel: t.Any, kwargs: dict) -> str | None:
    if mode != "w":
        return f"zipfile opened in mode {mode!r}"
    if compression not in _NATIVE_METHODS:
        return f"compression {compression!r} is not stored or deflated"
    if compresslevel is not None or allowZip64 is not True or kwargs:
        return "zipfile options the native writer does not take"
    if type(file) is not io.BytesIO:
        return "zipfile opened on something other than a BytesIO"
    with file.getbuffer() as view:
        if file.tell() != 0 or view.nbytes != 0:
            return "zipfile opened on a BytesIO that is not empty"
    return None


def _open_zipfile(
    file: t.Any,
    mode: str = "r",
    compression: int = zipfile.ZIP_STORED,
    allowZip64: bool = True,
    compresslevel: int | None = None,
    **kwargs: t.Any,
) -> t.Any:
    """``zipfile.ZipFile(...)`` as module_common sees it."""
    reason = _why_not_native(file, mode, compression, allowZip64, compresslevel, kwargs)
    if reason is None:
        cache_dir = None
        if compression == zipfile.ZIP_DEFLATED:
            if native_zlib_matches():
                cache_dir = _shared_cache_dir()
            else:
                _counters.extra(PATH, "deflated by the interpreter's zlib")
        return _CountedPayloadZipFile(file, compression, cache_dir=cache_dir)
    args = (file, mode, compression, allowZip64, compresslevel)
    return _counters.call_original(PATH, reason, zipfile.ZipFile, *args, **kwargs)


def _shared_cache_dir() -> str | None:
    """Where the workers of this run, and later runs, share deflated entries: beside the
    runs' private local temporary directories (ansible-core's ``DEFAULT_LOCAL_TMP`` root).
    Streams are keyed by content and checked byte for byte, so sharing them across runs
    never serves one for other data."""
    from ansible import constants as C

    try:
        local_tmp = C.DEFAULT_LOCAL_TMP
    except Exception:  # noqa: BLE001 - no usable local tmp: no shared cache, nothing else changes
        local_tmp = None
    # the root of the runs' local tmp directories, so later runs find the streams too
    cache_dir = private_cache_dir(os.path.dirname(local_tmp)) if isinstance(local_tmp, str) else None
    if cache_dir is None:
        _counters.extra(PATH, "no private local tmp for the shared deflate cache")
    return cache_dir


class _ZipfileView(types.ModuleType):
    """zipfile, but for ``ZipFile``: what ``module_common.zipfile`` is while installed."""

    def __init__(self) -> None:
        super().__init__(zipfile.__name__, zipfile.__doc__)
        self.ZipFile = _open_zipfile

    def __getattr__(self, name: str) -> t.Any:
        return getattr(zipfile, name)


def plan() -> list[Patch]:
    try:
        from ansible.executor import module_common
    except ImportError as ex:
        raise Unavailable(f"ansible.executor.module_common cannot be imported: {ex}") from ex

    current = getattr(module_common, "zipfile", None)
    if current is not zipfile:
        raise Unavailable("ansible.executor.module_common.zipfile is not the standard zipfile module")
    if not callable(getattr(module_common, "_make_zinfo", None)) or not callable(getattr(module_common, "_find_module_utils", None)):
        raise Unavailable("this ansible-core does not build payloads through _find_module_utils/_make_zinfo")
    return [Patch(module_common, "zipfile", _ZipfileView())]
