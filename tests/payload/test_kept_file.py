"""Kept entries left in a file (``PayloadZipFile.save_entries``) and read back in another
archive (``_load_kept`` + ``writestr_kept`` without the data): the same archive as writing
the entries again, and the data, when asked for (``hand_over``, the bytecode path), the
very data written."""

from __future__ import annotations

import io
import zipfile

import pytest

from ansible_accel import payload

from .test_payload_zipfile import DT, _kept_items, _warnings, infos

LATER = (2031, 12, 31, 23, 59, 59)


def _saved(tmp_path, compression, name="kept.block"):
    first = payload.PayloadZipFile(io.BytesIO(), compression)
    first.writestr_many(_kept_items(compression, DT))
    assert first.save_entries(str(tmp_path), name)
    assert [p.name for p in tmp_path.iterdir()] == [name]  # (no temporary file left)
    return tmp_path / name


@pytest.mark.parametrize("compression", [zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED])
@pytest.mark.parametrize("then", ["nothing", "writestr", "duplicate", "hand_over", "data"])
def test_entries_read_back_from_a_file_are_the_same_writes_with_the_new_date(tmp_path, compression, then):
    kept = payload._load_kept(_saved(tmp_path, compression))
    assert kept is not None and len(kept.block) == 5

    def rest(archive):
        if then == "writestr":
            archive.writestr(zipfile.ZipInfo("m.py", LATER), b"module\n")
        elif then == "duplicate":
            archive.writestr(zipfile.ZipInfo("pkg/m2.py", LATER), b"again\n")
        elif then == "hand_over":
            archive.writestr(zipfile.ZipInfo("m.py", LATER), b"module\n")
            archive.mkdir("pkg/sub")

    reference_buffer, got_buffer = io.BytesIO(), io.BytesIO()
    reference = zipfile.ZipFile(reference_buffer, mode="w", compression=compression)
    got = payload.PayloadZipFile(got_buffer, compression)
    with _warnings() as caught:
        for zinfo, data in _kept_items(compression, LATER):
            reference.writestr(zinfo, data)
        rest(reference)
        assert got.writestr_kept(kept, LATER)
        rest(got)
    messages = [str(w.message) for w in caught]
    assert messages[: len(messages) // 2] == messages[len(messages) // 2:]
    if then == "data":  # what the bytecode path reads
        assert got._data == [data for _, data in _kept_items(compression, LATER)]
    assert infos(got) == infos(reference)
    assert list(got.NameToInfo) == list(reference.NameToInfo)
    reference.close()
    got.close()
    assert got_buffer.getvalue() == reference_buffer.getvalue()


def test_a_damaged_cut_or_missing_file_is_no_kept_entries(tmp_path):
    path = _saved(tmp_path, zipfile.ZIP_DEFLATED)
    good = path.read_bytes()
    assert payload._load_kept(path) is not None
    for at in (3, len(good) // 3, len(good) - 100, len(good) - 2):
        damaged = bytearray(good)
        damaged[at] ^= 1
        path.write_bytes(bytes(damaged))
        assert payload._load_kept(path) is None, at
    path.write_bytes(good[:-1])
    assert payload._load_kept(path) is None
    path.write_bytes(b"")
    assert payload._load_kept(path) is None
    assert payload._load_kept(tmp_path / "missing.block") is None


def test_entries_are_saved_only_when_they_can_be_kept(tmp_path):
    assert not payload.PayloadZipFile(io.BytesIO(), zipfile.ZIP_DEFLATED).save_entries(str(tmp_path), "empty")
    mixed = payload.PayloadZipFile(io.BytesIO(), zipfile.ZIP_DEFLATED)
    mixed.writestr(zipfile.ZipInfo("a.py", DT), b"a")
    mixed.writestr(zipfile.ZipInfo("b.py", LATER), b"b")
    assert not mixed.save_entries(str(tmp_path), "mixed")
    plain = payload.PayloadZipFile(io.BytesIO(), zipfile.ZIP_DEFLATED)
    plain.writestr(zipfile.ZipInfo("a.py", DT), b"a")
    for bad_name in ("../escape", ".hidden", "a/b"):
        assert not plain.save_entries(str(tmp_path), bad_name)
    assert not plain.save_entries(str(tmp_path / "no" / "such" / "dir"), "x")
    assert not plain.save_entries(str(tmp_path), "too-large", largest=10)
    assert list(tmp_path.iterdir()) == []
    assert plain.save_entries(str(tmp_path), "fits", largest=1000)


def test_kept_entries_without_data_go_only_into_an_empty_archive(tmp_path):
    kept = payload._load_kept(_saved(tmp_path, zipfile.ZIP_DEFLATED))
    busy = payload.PayloadZipFile(io.BytesIO(), zipfile.ZIP_DEFLATED)
    busy.writestr(zipfile.ZipInfo("first.py", DT), b"")
    assert not busy.writestr_kept(kept, DT)
    twice = payload.PayloadZipFile(io.BytesIO(), zipfile.ZIP_DEFLATED)
    assert twice.writestr_kept(kept, DT)
    assert not twice.writestr_kept(kept, DT)
    assert len(twice.namelist()) == 5
