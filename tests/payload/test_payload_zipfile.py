"""``PayloadZipFile`` against ``zipfile.ZipFile``: the same calls, the same bytes, the same
``ZipInfo`` objects afterwards."""

from __future__ import annotations

import io
import time
import zipfile

import pytest

from ansible_accel import payload

DT = (2025, 3, 4, 5, 6, 6)
ZIPINFO_FIELDS = [
    "orig_filename", "filename", "date_time", "compress_type", "_compresslevel", "comment", "extra",
    "create_system", "create_version", "extract_version", "reserved", "flag_bits", "volume",
    "internal_attr", "external_attr", "header_offset", "CRC", "compress_size", "file_size",
]  # fmt: skip


def run_both(script):
    """Run ``script(archive)`` on a real ZipFile and on a PayloadZipFile (both over a fresh
    BytesIO, ZIP_DEFLATED); return both buffers' bytes and archives."""
    results = []
    for make in (lambda fp: zipfile.ZipFile(fp, mode="w", compression=zipfile.ZIP_DEFLATED),
                 lambda fp: payload.PayloadZipFile(fp, zipfile.ZIP_DEFLATED)):  # fmt: skip
        buffer = io.BytesIO()
        archive = make(buffer)
        script(archive)
        archive.close()
        results.append((buffer.getvalue(), archive))
    return results


def infos(archive):
    return [{f: getattr(i, f) for f in ZIPINFO_FIELDS} for i in archive.infolist()]


def ansible_like_entries(archive):
    for name, data in [("ansible/__init__.py", b"x = 1\n" * 50), ("ansible/module_utils/\u00e9.py", b""), ("m.py", bytes(range(256)) * 40)]:
        info = zipfile.ZipInfo(filename=name, date_time=DT)
        info.compress_type = archive.compression
        archive.writestr(info, data)


def test_ansible_like_writes_give_the_same_bytes_and_zipinfos():
    (expected, ref), (got, native) = run_both(ansible_like_entries)
    assert got == expected
    assert infos(native) == infos(ref)
    assert native.namelist() == ref.namelist()
    assert native.fp is None and ref.fp is None


def test_writestr_with_a_bare_name_uses_local_time_like_zipfile(monkeypatch):
    monkeypatch.setattr(time, "time", lambda: 1_700_000_000.0)

    def script(archive):
        archive.writestr("plain.txt", "caf\u00e9 text")
        archive.writestr("folder/", b"")
        archive.writestr("stored.bin", b"abc" * 100, compress_type=zipfile.ZIP_STORED)

    (expected, ref), (got, native) = run_both(script)
    assert got == expected
    assert infos(native) == infos(ref)


def test_a_compression_level_goes_through_the_interpreters_zlib():
    def script(archive):
        archive.writestr("fast.txt", b"abcdefgh" * 5000, compresslevel=1)
        info = zipfile.ZipInfo("best.txt", DT)
        info.compress_type = zipfile.ZIP_DEFLATED
        info._compresslevel = 9
        archive.writestr(info, b"0123456789" * 7000)

    (expected, ref), (got, native) = run_both(script)
    assert got == expected
    assert native._delegate is None  # still native


def test_custom_zipinfo_fields_reach_the_bytes_like_in_zipfile():
    def script(archive):
        info = zipfile.ZipInfo("custom", DT)
        info.compress_type = zipfile.ZIP_DEFLATED
        info.external_attr = 0o755 << 16
        info.create_system = 0
        info.internal_attr = 1
        info.extra = b"\x99\x99\x02\x00ab"
        info.comment = b"a comment"
        archive.writestr(info, b"payload")
        archive.comment = b"archive comment"

    (expected, ref), (got, native) = run_both(script)
    assert got == expected
    assert infos(native) == infos(ref)


def test_zip64_records_match_zipfile_when_the_limits_are_lowered(monkeypatch):
    monkeypatch.setattr(zipfile, "ZIP64_LIMIT", 1000)
    monkeypatch.setattr(zipfile, "ZIP_FILECOUNT_LIMIT", 3)

    def script(archive):
        for i in range(6):
            info = zipfile.ZipInfo(f"f{i}", DT)
            info.compress_type = zipfile.ZIP_STORED if i % 2 else zipfile.ZIP_DEFLATED
            info.extra = b"\x01\x00\x00\x00" if i == 3 else b""
            archive.writestr(info, bytes(range(256)) * i + b"text " * 100 * i)

    (expected, ref), (got, native) = run_both(script)
    assert got == expected
    assert infos(native) == infos(ref)


def test_other_calls_hand_the_archive_to_zipfile_with_the_same_bytes(tmp_path):
    on_disk = tmp_path / "f.txt"
    on_disk.write_bytes(b"from disk\n" * 100)

    def script(archive):
        ansible_like_entries(archive)
        archive.write(on_disk, "disk/f.txt")  # not in PayloadZipFile: hands over
        info = zipfile.ZipInfo("after", DT)
        info.compress_type = zipfile.ZIP_DEFLATED
        archive.writestr(info, b"more")

    (expected, ref), (got, native) = run_both(script)
    # zipfile.write() stamps the file's mtime: equal in both runs, as is every other byte.
    assert got == expected
    assert native._delegate is not None
    assert native.namelist() == ref.namelist()


def test_a_bzip2_entry_hands_over_too():
    def script(archive):
        ansible_like_entries(archive)
        info = zipfile.ZipInfo("b.bz2", DT)
        info.compress_type = zipfile.ZIP_BZIP2
        archive.writestr(info, b"bzip2 me " * 100)

    (expected, _), (got, native) = run_both(script)
    assert got == expected
    assert native._delegate is not None


def test_closed_archives_refuse_writes_like_zipfile():
    for archive in (zipfile.ZipFile(io.BytesIO(), "w"), payload.PayloadZipFile(io.BytesIO())):
        archive.close()
        archive.close()  # twice is fine
        with pytest.raises(ValueError, match="Attempt to write to ZIP archive that was already closed"):
            archive.writestr(zipfile.ZipInfo("x", DT), b"")


def test_context_manager_and_getinfo():
    buffer = io.BytesIO()
    with payload.PayloadZipFile(buffer, zipfile.ZIP_STORED) as archive:
        archive.writestr(zipfile.ZipInfo("a", DT), b"data")
        assert archive.getinfo("a").file_size == 4
        with pytest.raises(KeyError, match="There is no item named 'b' in the archive"):
            archive.getinfo("b")
    assert zipfile.ZipFile(buffer).read("a") == b"data"


def test_unknown_compression_is_refused_like_zipfile():
    with pytest.raises(NotImplementedError, match="That compression method is not supported"):
        payload.PayloadZipFile(io.BytesIO(), 99)


def test_an_entry_too_large_for_its_headers_fails_and_leaves_what_zipfile_leaves(monkeypatch):
    # Below ZIP64_LIMIT / 1.05 bytes no ZIP64 header is made; 38 bytes of noise deflate to
    # more than 40: zipfile raises after writing them, and the next entry overwrites them.
    monkeypatch.setattr(zipfile, "ZIP64_LIMIT", 40)
    noise = bytes((i * 2654435761 >> 7) & 0xFF for i in range(38))
    errors = []

    def script(archive):
        info = zipfile.ZipInfo("noise", DT)
        info.compress_type = zipfile.ZIP_DEFLATED
        with pytest.raises(RuntimeError, match="Compressed size too large, try using force_zip64") as raised:
            archive.writestr(info, noise)
        errors.append(raised.value.args)
        archive.writestr(zipfile.ZipInfo("ok", DT), b"ok")

    (expected, ref), (got, native) = run_both(script)
    assert got == expected
    assert errors[0] == errors[1]
    assert native.namelist() == ref.namelist() == ["ok"]


@pytest.mark.parametrize("compression", [zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED])
@pytest.mark.parametrize("case", ["plain", "duplicate", "str_data", "after_writestr", "level"])
def test_writestr_many_is_a_loop_of_writestr(case, compression):
    """``writestr_many`` (the finder path's batch) leaves what the same ``writestr`` calls
    leave: bytes, ZipInfo objects, warnings."""
    def items():
        made = []
        for i, data in enumerate([b"", b"x" * 3000, b"import os\n" * 40, bytes(range(256)) * 9]):
            zinfo = zipfile.ZipInfo(filename=f"pkg/m{i}.py", date_time=DT)
            zinfo.compress_type = compression
            made.append((zinfo, data))
        if case == "duplicate":
            again = zipfile.ZipInfo(filename="pkg/m1.py", date_time=DT)
            again.compress_type = compression
            made.append((again, b"again\n"))
        if case == "str_data":
            made[2] = (made[2][0], "text é\n")
        if case == "level":
            made[1][0]._compresslevel = 1
        return made

    expected_buffer = io.BytesIO()
    expected_archive = zipfile.ZipFile(expected_buffer, mode="w", compression=compression)
    got_buffer = io.BytesIO()
    got_archive = payload.PayloadZipFile(got_buffer, compression)
    with _warnings() as caught:
        for archive, many in ((expected_archive, False), (got_archive, True)):
            if case == "after_writestr":
                archive.writestr(zipfile.ZipInfo("first.py", DT), b"first\n")
            if many:
                archive.writestr_many(items())
            else:
                for zinfo, data in items():
                    archive.writestr(zinfo, data)
    messages = [str(w.message) for w in caught]
    assert messages[: len(messages) // 2] == messages[len(messages) // 2:]
    assert infos(got_archive) == infos(expected_archive)
    expected_archive.close()
    got_archive.close()
    assert got_buffer.getvalue() == expected_buffer.getvalue()


def _warnings():
    import warnings

    manager = warnings.catch_warnings(record=True)

    class Recording:
        def __enter__(self):
            caught = manager.__enter__()
            warnings.simplefilter("always")
            return caught

        def __exit__(self, *exc):
            return manager.__exit__(*exc)

    return Recording()


def _kept_items(compression, date_time):
    made = []
    for i, data in enumerate([b"", b"x" * 3000, b"import os\n" * 40, bytes(range(256)) * 9, b"\xe9\n"]):
        zinfo = zipfile.ZipInfo(filename=f"pkg/m{i}{'é' if i == 4 else ''}.py", date_time=date_time)
        zinfo.compress_type = compression
        made.append((zinfo, data))
    return made


@pytest.mark.parametrize("compression", [zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED])
@pytest.mark.parametrize("date_time", [DT, (2031, 12, 31, 23, 59, 59), (1980, 1, 1, 0, 0, 0)])
@pytest.mark.parametrize("then", ["nothing", "writestr", "duplicate", "hand_over", "infolist_first"])
def test_kept_entries_written_again_are_the_same_writes_with_the_new_date(compression, date_time, then):
    """``writestr_kept`` into an empty archive leaves what ``writestr_many`` of the same
    entries with its own date leaves: bytes, ZipInfo objects (made when first asked for),
    warnings, and whatever is written or asked next."""
    first = payload.PayloadZipFile(io.BytesIO(), compression)
    first.writestr_many(_kept_items(compression, DT))
    kept = first.keep_entries()
    assert kept is not None and len(kept.block) == 5

    def rest(archive):
        if then == "writestr":
            archive.writestr(zipfile.ZipInfo("m.py", date_time), b"module\n")
        elif then == "duplicate":
            archive.writestr(zipfile.ZipInfo("pkg/m2.py", date_time), b"again\n")
        elif then == "hand_over":
            archive.mkdir("pkg/sub")
        elif then == "infolist_first":
            assert [i.filename for i in archive.infolist()][:2] == ["pkg/m0.py", "pkg/m1.py"]
            archive.writestr(zipfile.ZipInfo("m.py", date_time), b"module\n")

    expected_buffer, got_buffer = io.BytesIO(), io.BytesIO()
    expected_archive = payload.PayloadZipFile(expected_buffer, compression)
    got_archive = payload.PayloadZipFile(got_buffer, compression)
    reference_buffer = io.BytesIO()
    reference = zipfile.ZipFile(reference_buffer, mode="w", compression=compression)
    with _warnings() as caught:
        expected_archive.writestr_many(_kept_items(compression, date_time))
        rest(expected_archive)
        for zinfo, data in _kept_items(compression, date_time):
            reference.writestr(zinfo, data)
        rest(reference)
        assert got_archive.writestr_kept(kept, date_time, [data for _, data in _kept_items(compression, date_time)])
        rest(got_archive)
    messages = [str(w.message) for w in caught]
    assert messages[: len(messages) // 3] == messages[len(messages) // 3: 2 * len(messages) // 3]
    assert messages[: len(messages) // 3] == messages[2 * len(messages) // 3:]
    assert infos(got_archive) == infos(expected_archive) == infos(reference)
    assert got_archive.namelist() == reference.namelist()
    assert list(got_archive.NameToInfo) == list(reference.NameToInfo)
    for archive in (expected_archive, got_archive, reference):
        archive.close()
    assert got_buffer.getvalue() == expected_buffer.getvalue() == reference_buffer.getvalue()


def test_kept_entries_go_only_into_an_empty_archive_with_a_date_the_headers_hold():
    first = payload.PayloadZipFile(io.BytesIO(), zipfile.ZIP_DEFLATED)
    first.writestr_many(_kept_items(zipfile.ZIP_DEFLATED, DT))
    kept = first.keep_entries()
    datas = [data for _, data in _kept_items(zipfile.ZIP_DEFLATED, DT)]
    busy = payload.PayloadZipFile(io.BytesIO(), zipfile.ZIP_DEFLATED)
    busy.writestr(zipfile.ZipInfo("first.py", DT), b"")
    assert not busy.writestr_kept(kept, DT, datas)
    assert busy.namelist() == ["first.py"]
    for date_time in [(1979, 12, 31, 0, 0, 0), (2108, 1, 1, 0, 0, 0), [2024, 1, 1, 0, 0, 0], (2024.0, 1, 1, 0, 0, 0)]:
        fresh = payload.PayloadZipFile(io.BytesIO(), zipfile.ZIP_DEFLATED)
        assert not fresh.writestr_kept(kept, date_time, datas)
        assert fresh.namelist() == []
    fresh = payload.PayloadZipFile(io.BytesIO(), zipfile.ZIP_DEFLATED)
    assert not fresh.writestr_kept(kept, DT, datas[:-1])
    closed = payload.PayloadZipFile(io.BytesIO(), zipfile.ZIP_DEFLATED)
    closed.close()
    assert not closed.writestr_kept(kept, DT, datas)
    # nothing to keep: an empty archive, one with two dates, one handed over to zipfile
    assert payload.PayloadZipFile(io.BytesIO(), zipfile.ZIP_DEFLATED).keep_entries() is None
    mixed = payload.PayloadZipFile(io.BytesIO(), zipfile.ZIP_DEFLATED)
    mixed.writestr(zipfile.ZipInfo("a.py", DT), b"a")
    mixed.writestr(zipfile.ZipInfo("b.py", (2030, 1, 1, 0, 0, 0)), b"b")
    assert mixed.keep_entries() is None
    twice = payload.PayloadZipFile(io.BytesIO(), zipfile.ZIP_DEFLATED)
    twice.writestr(zipfile.ZipInfo("a.py", DT), b"a")
    with pytest.warns(UserWarning, match="Duplicate name"):
        twice.writestr(zipfile.ZipInfo("a.py", DT), b"again")
    assert twice.keep_entries() is None
    handed = payload.PayloadZipFile(io.BytesIO(), zipfile.ZIP_DEFLATED)
    handed.writestr(zipfile.ZipInfo("a.py", DT), b"a")
    handed.hand_over()
    assert handed.keep_entries() is None
