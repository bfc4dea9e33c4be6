"""``build_zip`` against zipfile itself, in whatever interpreter runs the tests."""

from __future__ import annotations

import os
import struct
import warnings
import zipfile

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_accel import payload

names = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)
compressible = st.builds(lambda chunk, n: chunk * n, st.binary(min_size=1, max_size=60), st.integers(1, 3000))
datas = st.one_of(st.binary(max_size=4000), compressible, st.just(b""))
entries_st = st.lists(st.tuples(names, datas), max_size=25)
valid_dates = st.tuples(
    st.integers(1980, 2107), st.integers(1, 12), st.integers(1, 31),
    st.integers(0, 23), st.integers(0, 59), st.integers(0, 59),
)  # fmt: skip
# zipfile does not check the parts: out-of-range ones spill into their neighbours' bits.
spilling_dates = st.tuples(
    st.integers(1980, 2107), st.integers(0, 15), st.integers(0, 31),
    st.integers(0, 31), st.integers(0, 63), st.integers(0, 63),
)  # fmt: skip
methods = st.sampled_from([zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED])


@settings(max_examples=300, deadline=None)
@given(entries=entries_st, date_time=st.one_of(valid_dates, spilling_dates), compression=methods)
def test_same_bytes_as_zipfile(entries, date_time, compression, reference):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # duplicate names warn in both
        assert payload.build_zip(entries, date_time, compression) == reference(entries, date_time, compression)


@settings(max_examples=30, deadline=None)
@given(entries=entries_st, date_time=valid_dates)
def test_str_data_is_written_as_utf8_like_writestr(entries, date_time, reference):
    as_text = [(name, data.decode("latin-1")) for name, data in entries]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = reference(as_text, date_time, zipfile.ZIP_DEFLATED)
        assert payload.build_zip(as_text, date_time, zipfile.ZIP_DEFLATED) == expected


@pytest.mark.parametrize("compression", [zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED])
def test_large_entries(compression, reference):
    noise = os.urandom(3 << 20)
    text = b"".join(b"def f%d(x):\n    return x * %d  # %s\n" % (i, i, b"#" * (i % 50)) for i in range(120_000))
    entries = [("noise.bin", noise), ("big.py", text), ("mixed", text[:100_000] + noise[:100_000] + text[:100_000])]
    assert payload.build_zip(entries, (2024, 6, 1, 12, 0, 0), compression) == reference(entries, (2024, 6, 1, 12, 0, 0), compression)


@pytest.mark.parametrize("compression", [zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED])
def test_many_entries(compression, reference):
    entries = [(f"ansible/module_utils/pkg{i % 40}/mod{i}.py", b"x = %d\n" % i * (i % 7)) for i in range(3000)]
    assert payload.build_zip(entries, (2030, 12, 31, 23, 59, 58), compression) == reference(entries, (2030, 12, 31, 23, 59, 58), compression)


def test_more_entries_than_the_end_record_holds_get_zip64_records(reference):
    entries = [(f"{i}", b"") for i in range(zipfile.ZIP_FILECOUNT_LIMIT + 2)]
    got = payload.build_zip(entries, (2024, 1, 1, 0, 0, 0), zipfile.ZIP_STORED)
    assert got == reference(entries, (2024, 1, 1, 0, 0, 0), zipfile.ZIP_STORED)
    assert b"PK\x06\x06" in got[-200:]


def test_names_are_cut_at_nul_and_non_ascii_names_are_flagged_utf8(reference):
    entries = [("caf\u00e9/\u6587\u4ef6.py", b"x"), ("cut\0after", b"y"), ("", b""), ("dir/", b"")]
    got = payload.build_zip(entries, (2024, 1, 1, 0, 0, 0), zipfile.ZIP_DEFLATED)
    assert got == reference(entries, (2024, 1, 1, 0, 0, 0), zipfile.ZIP_DEFLATED)
    import io

    assert zipfile.ZipFile(io.BytesIO(got)).namelist() == ["caf\u00e9/\u6587\u4ef6.py", "cut", "", "dir/"]


@pytest.mark.parametrize("compression", [zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA])
def test_methods_zipfile_writes_itself(compression, reference):
    entries = [("a.py", b"import os\n" * 200), ("b", b"")]
    assert payload.build_zip(entries, (2024, 1, 1, 0, 0, 0), compression) == reference(entries, (2024, 1, 1, 0, 0, 0), compression)


def test_bytearray_data(reference):
    entries = [("a", bytearray(b"abc" * 100))]
    assert payload.build_zip(entries, (2024, 1, 1, 0, 0, 0), 8) == reference(entries, (2024, 1, 1, 0, 0, 0), 8)


def _raised(fn):
    try:
        fn()
    except Exception as ex:  # noqa: BLE001 - the test compares whatever is raised
        return type(ex), str(ex)
    return None


@pytest.mark.parametrize(
    "date_time",
    [(1979, 12, 31, 23, 59, 59), (2108, 1, 1, 0, 0, 0), (2000, 1, 1, 0, 0, -2), (2000, -1, 1, 0, 0, 0), (2000, 1, 1, 32, 0, 0)],
)
def test_bad_dates_raise_what_zipfile_raises(date_time, reference):
    entries = [("a", b"data")]
    expected = _raised(lambda: reference(entries, date_time, zipfile.ZIP_DEFLATED))
    assert expected is not None
    assert _raised(lambda: payload.build_zip(entries, date_time, zipfile.ZIP_DEFLATED)) == expected


def test_without_entries_the_date_is_never_used_as_in_zipfile(reference):
    # zipfile only meets the date in a ZipInfo: no entry, no error.
    expected = reference([], (1979, 1, 1, 0, 0, 0), zipfile.ZIP_STORED)
    assert payload.build_zip([], (1979, 1, 1, 0, 0, 0), zipfile.ZIP_STORED) == expected


def test_unknown_compression_raises_zipfiles_error():
    with pytest.raises(NotImplementedError, match="That compression method is not supported"):
        payload.build_zip([("a", b"")], (2024, 1, 1, 0, 0, 0), 99)


def test_name_with_a_lone_surrogate_fails_to_encode_as_in_zipfile(reference):
    entries = [("bad\udc80.py", b"")]
    expected = _raised(lambda: reference(entries, (2024, 1, 1, 0, 0, 0), 0))
    assert expected is not None and expected[0] is UnicodeEncodeError
    assert _raised(lambda: payload.build_zip(entries, (2024, 1, 1, 0, 0, 0), 0)) == expected


def test_a_name_over_65535_bytes_raises_struct_error(reference):
    entries = [("n" * 70_000, b"")]
    expected = _raised(lambda: reference(entries, (2024, 1, 1, 0, 0, 0), 0))
    assert expected is not None and expected[0] is struct.error
    assert _raised(lambda: payload.build_zip(entries, (2024, 1, 1, 0, 0, 0), 0)) == expected


@pytest.mark.parametrize(
    ("entries", "date_time", "error", "message"),
    [
        ([("a", 1)], (2024, 1, 1, 0, 0, 0), TypeError, "entry data must be bytes, bytearray or str, not int"),
        ([("a", memoryview(b"x"))], (2024, 1, 1, 0, 0, 0), TypeError, "not memoryview"),
        ([(b"a", b"")], (2024, 1, 1, 0, 0, 0), TypeError, "entry name must be str, not bytes"),
        (["ab"], (2024, 1, 1, 0, 0, 0), TypeError, r"each entry must be a \(name, data\) tuple"),
        ([("a", b"", 1)], (2024, 1, 1, 0, 0, 0), TypeError, "not a tuple of 3"),
        ([("a", b"")], (2024, 1, 1, 0, 0), ValueError, "date_time must have 6 items"),
        ([("a", b"")], (2024, 1, 1, 0, 0, 0.5), TypeError, "cannot be interpreted as an integer"),
    ],
)
def test_bad_input_raises_a_clear_error(entries, date_time, error, message):
    with pytest.raises(error, match=message):
        payload.build_zip(entries, date_time, zipfile.ZIP_DEFLATED)


def test_duplicate_names_warn_as_zipfile_does(reference):
    entries = [("a", b"1"), ("b", b"2"), ("a\0x", b"3")]
    with pytest.warns(UserWarning, match="Duplicate name: 'a'") as native_record:
        got = payload.build_zip(entries, (2024, 1, 1, 0, 0, 0), 8)
    with pytest.warns(UserWarning, match="Duplicate name: 'a'") as reference_record:
        expected = reference(entries, (2024, 1, 1, 0, 0, 0), 8)
    assert got == expected
    assert [str(w.message) for w in native_record] == [str(w.message) for w in reference_record]
    assert native_record[0].filename == __file__  # points at the caller, not at ansible_accel


def test_native_zlib_is_the_interpreters():
    # The check every deflated archive relies on; on this machine it must hold, or the
    # deflated archives above were written through the interpreter's zlib.
    assert payload._native_zlib_matches()


def test_deflated_entries_are_reused_only_for_equal_data(reference):
    payload.clear_cache()
    big = b"import os\n" * 500
    entries = [("a.py", big), ("b.py", big + b"#"), ("small", b"tiny")]
    first = payload.build_zip(entries, (2024, 1, 1, 0, 0, 0), zipfile.ZIP_DEFLATED)
    assert payload.cache_stats()["misses"] == 3 and payload.cache_stats()["hits"] == 0  # every entry, "small" too
    again = payload.build_zip([*entries, ("c.py", big)], (2024, 1, 1, 0, 0, 0), zipfile.ZIP_DEFLATED)
    stats = payload.cache_stats()
    assert (stats["hits"], stats["misses"]) == (4, 3)
    assert stats["bytes"] > 2 * len(big)
    assert first == reference(entries, (2024, 1, 1, 0, 0, 0), zipfile.ZIP_DEFLATED)
    assert again == reference([*entries, ("c.py", big)], (2024, 1, 1, 0, 0, 0), zipfile.ZIP_DEFLATED)
    payload.clear_cache()
    assert payload.cache_stats() == {"hits": 0, "misses": 0, "bytes": 0, "disk_hits": 0}


def test_deflated_entries_are_shared_through_a_private_directory(tmp_path, reference):
    cache_dir = payload.private_cache_dir(tmp_path)
    assert cache_dir is not None and cache_dir.startswith(str(tmp_path))
    entries = [("big.py", b"def f(): pass\n" * 2000), ("noise", os.urandom(50_000)), ("small", b"x")]
    expected = reference(entries, (2024, 5, 6, 7, 8, 9), zipfile.ZIP_DEFLATED)
    payload.clear_cache()
    assert payload.build_zip(entries, (2024, 5, 6, 7, 8, 9), 8, cache_dir=cache_dir) == expected
    assert len(os.listdir(cache_dir)) == 2  # "small" is not worth a file
    payload.clear_cache()  # as another process would start: nothing in memory
    assert payload.build_zip(entries, (2024, 5, 6, 7, 8, 9), 8, cache_dir=cache_dir) == expected
    assert payload.cache_stats()["disk_hits"] == 2


def test_a_directory_others_can_write_is_not_used(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o755)
    shared.chmod(0o775)
    assert payload.private_cache_dir(shared) is None
    assert payload.private_cache_dir(tmp_path / "missing") is None
    tmp_path.chmod(0o700)
    assert payload.private_cache_dir(tmp_path) is not None


def test_warming_the_cache_ahead_makes_archives_hit_it(reference):
    payload.clear_cache()
    module_utils = [b"# util %d\n" % i * 300 for i in range(5)]
    assert payload.warm_cache(module_utils) == 5
    entries = [(f"u{i}.py", data) for i, data in enumerate(module_utils)]
    got = payload.build_zip(entries, (2024, 1, 1, 0, 0, 0), zipfile.ZIP_DEFLATED)
    assert payload.cache_stats()["hits"] == 5
    assert got == reference(entries, (2024, 1, 1, 0, 0, 0), zipfile.ZIP_DEFLATED)
