"""The native writer's answers where it does not write: ``add_block`` into a writer that
cannot take kept entries answers None with nothing written, and the entries written the
ordinary way then give zipfile's archive (or zipfile's exception); ``add_many`` answers the
entries it wrote and the exception that stopped the batch, as a loop of ``writestr`` does."""

from __future__ import annotations

import io
import struct
import sys
import zipfile

import pytest

from ansible_accel import _native, payload

from .test_payload_zipfile import DT, _kept_items, infos

# Dates ZipInfo takes whose DOS fields zipfile cannot pack (struct.error once an entry is written).
UNPACKABLE_DATES = [(2108, 1, 1, 0, 0, 0), (2024, 1, 1, 32, 0, 0), (2024, 1, 1, 0, 0, -2)]


@pytest.fixture(params=[zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED], ids=["stored", "deflated"])
def compression(request) -> int:
    """The raw writer deflates with the native zlib, which gives zipfile's bytes only where it
    is the interpreter's (``PayloadZipFile`` checks that itself)."""
    if request.param == zipfile.ZIP_DEFLATED and not payload._native_zlib_matches():
        pytest.skip("the native zlib does not give the interpreter's bytes")
    return request.param


def _writer(file_count_limit: int = zipfile.ZIP_FILECOUNT_LIMIT):
    return _native.PayloadZipWriter(zipfile.ZIP64_LIMIT, file_count_limit, sys.version_info >= (3, 13))


def _add(writer, zinfo: zipfile.ZipInfo, data: bytes):
    """``writer.add`` with the fields ``PayloadZipFile.writestr`` gives it."""
    return writer.add(
        zinfo.filename, zinfo.date_time, zinfo.compress_type, zinfo.create_system,
        zinfo.create_version, zinfo.extract_version, zinfo.reserved, zinfo.internal_attr,
        zinfo.external_attr, zinfo.extra, zinfo.comment, data,
    )  # fmt: skip


def _block(compression: int):
    """The native block of ``_kept_items`` written at ``DT``."""
    writer = _writer()
    for zinfo, data in _kept_items(compression, DT):
        _add(writer, zinfo, data)
    block = writer.block()
    assert block is not None and len(block) == 5
    return block


def _first(compression: int) -> tuple[zipfile.ZipInfo, bytes]:
    zinfo = zipfile.ZipInfo("first.py", DT)
    zinfo.compress_type = compression
    return zinfo, b"first = 1\n"


def _zipfile(items, compression: int) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, mode="w", compression=compression) as archive:
        for zinfo, data in items:
            archive.writestr(zinfo, data)
    return buffer.getvalue()


def test_add_block_into_a_writer_that_is_not_empty_writes_nothing(compression):
    writer = _writer()
    _add(writer, *_first(compression))
    assert writer.add_block(_block(compression), DT) is None
    for zinfo, data in _kept_items(compression, DT):  # the entries written the ordinary way
        _add(writer, zinfo, data)
    expected = _zipfile([_first(compression), *_kept_items(compression, DT)], compression)
    assert writer.finish(b"") == expected


def test_add_block_into_a_writer_with_other_limits_writes_nothing(compression):
    writer = _writer(file_count_limit=zipfile.ZIP_FILECOUNT_LIMIT - 1)
    assert writer.add_block(_block(compression), DT) is None
    for zinfo, data in _kept_items(compression, DT):
        _add(writer, zinfo, data)
    assert writer.finish(b"") == _zipfile(_kept_items(compression, DT), compression)


def test_add_block_into_a_finished_writer_writes_nothing(compression):
    writer = _writer()
    archive = writer.finish(b"")
    assert writer.add_block(_block(compression), DT) is None
    assert archive == _zipfile([], compression)
    # the ordinary way then meets zipfile's error for a closed archive
    reference = zipfile.ZipFile(io.BytesIO(), mode="w", compression=compression)
    reference.close()
    zinfo, data = _first(compression)
    with pytest.raises(ValueError) as expected:
        reference.writestr(zinfo, data)
    with pytest.raises(ValueError) as got:
        _add(writer, *_first(compression))
    assert got.value.args == expected.value.args


def test_add_block_with_a_date_before_1980_writes_nothing(compression):
    writer = _writer()
    assert writer.add_block(_block(compression), (1979, 12, 31, 0, 0, 0)) is None
    with pytest.raises(ValueError, match="ZIP does not support timestamps before 1980"):
        zipfile.ZipInfo("pkg/m0.py", (1979, 12, 31, 0, 0, 0))  # the ordinary way has no entry to write
    assert writer.finish(b"") == _zipfile([], compression)


@pytest.mark.parametrize("date_time", UNPACKABLE_DATES)
def test_add_block_with_a_date_the_headers_cannot_hold_writes_nothing(compression, date_time):
    writer = _writer()
    assert writer.add_block(_block(compression), date_time) is None
    # the ordinary way then meets zipfile's error for the date, and leaves zipfile's archive
    reference_buffer = io.BytesIO()
    reference = zipfile.ZipFile(reference_buffer, mode="w", compression=compression)
    zinfo, data = _kept_items(compression, date_time)[0]
    with pytest.raises(struct.error) as expected:
        reference.writestr(zinfo, data)
    with pytest.raises(struct.error) as got:
        _add(writer, *_kept_items(compression, date_time)[0])
    assert got.value.args == expected.value.args
    reference.close()
    assert writer.finish(b"") == reference_buffer.getvalue()


@pytest.mark.parametrize("date_time", UNPACKABLE_DATES)
def test_writestr_kept_with_a_date_the_headers_cannot_hold_leaves_the_archive_to_the_ordinary_way(compression, date_time):
    """The native None reaches ``writestr_kept`` as False with nothing written; the caller's
    ``writestr_many`` then fails as zipfile's loop of ``writestr`` does, with the same archive."""
    first = payload.PayloadZipFile(io.BytesIO(), compression)
    first.writestr_many(_kept_items(compression, DT))
    kept = first.keep_entries()
    assert kept is not None
    got_buffer = io.BytesIO()
    got = payload.PayloadZipFile(got_buffer, compression)
    assert got.writestr_kept(kept, date_time, [data for _, data in _kept_items(compression, date_time)]) is False
    assert got.namelist() == [] and got._delegate is None
    reference_buffer = io.BytesIO()
    reference = zipfile.ZipFile(reference_buffer, mode="w", compression=compression)
    with pytest.raises(struct.error) as expected:
        for zinfo, data in _kept_items(compression, date_time):
            reference.writestr(zinfo, data)
    with pytest.raises(struct.error) as got_error:
        got.writestr_many(_kept_items(compression, date_time))
    assert got_error.value.args == expected.value.args
    assert infos(got) == infos(reference) == []
    reference.close()
    got.close()
    assert got_buffer.getvalue() == reference_buffer.getvalue()


def test_add_many_answers_what_it_wrote_and_the_exception_that_stopped_it(compression):
    items = _kept_items(compression, DT)
    stopping = zipfile.ZipInfo("pkg/late.py", UNPACKABLE_DATES[1])
    stopping.compress_type = compression
    batch = [*items[:2], (stopping, b"late\n"), *items[2:]]

    def fields(pairs):
        return [
            (z.filename, z.date_time, z.compress_type, z.create_system, z.create_version, z.extract_version,
             z.reserved, z.internal_attr, z.external_attr, z.extra, z.comment, data)
            for z, data in pairs
        ]  # fmt: skip

    writer = _writer()
    written, error = writer.add_many(fields(items))
    assert error is None and len(written) == 5
    assert all(type(f) is tuple and len(f) == 8 and all(type(x) is int for x in f) for f in written)
    writer = _writer()
    written, error = writer.add_many(fields(batch))
    assert len(written) == 2 and isinstance(error, struct.error)
    reference_buffer = io.BytesIO()
    reference = zipfile.ZipFile(reference_buffer, mode="w", compression=compression)
    with pytest.raises(struct.error) as expected:
        for zinfo, data in batch:
            reference.writestr(zinfo, data)
    assert error.args == expected.value.args
    assert [(z.header_offset, z.CRC, z.compress_size, z.file_size) for z in reference.infolist()] == [
        (f[0], f[1], f[2], f[3]) for f in written
    ]
    reference.close()
    assert writer.finish(b"") == reference_buffer.getvalue()
