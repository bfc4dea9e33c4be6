"""``build_zip`` against ``zipfile`` byte for byte, on generated entries (any names: NULs,
surrogates, duplicates; bytes, bytearray and str data) and any date_time, odd ones included:
the same bytes, or the same exception and the same warnings."""

from __future__ import annotations

import warnings
import zipfile

from hypothesis import given
from hypothesis import strategies as st

from ansible_accel import payload

from .conftest import CASES, fuzz_settings
from ._outcomes import assert_same_outcome, outcome, zipfile_reference

names = st.one_of(st.text(max_size=20), st.sampled_from(["a.py", "dir/", "ansible/module_utils/x.py", "a\x00b", "é/中", "\ud800"]))
datas = st.one_of(
    st.binary(max_size=3000),
    st.builds(lambda chunk, n: chunk * n, st.binary(min_size=1, max_size=40), st.integers(1, 2000)),
    st.text(max_size=200),
    st.binary(max_size=100).map(bytearray),
)
dates = st.one_of(
    st.tuples(st.integers(1980, 2107), st.integers(1, 12), st.integers(1, 31), st.integers(0, 23), st.integers(0, 59), st.integers(0, 59)),
    st.tuples(*[st.integers(-5, 70000)] * 6),
    st.tuples(*[st.integers()] * 6),
)


def _with_warnings(fn, *args):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = outcome(fn, *args)
    return result, [(w.category, str(w.message)) for w in caught]


@fuzz_settings()
@given(st.lists(st.tuples(names, datas), max_size=8), dates, st.sampled_from([zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED]))
def test_build_zip_like_zipfile(entries, date_time, compression):
    CASES["payload"] += 1
    expected, expected_warnings = _with_warnings(zipfile_reference, entries, date_time, compression)
    got, got_warnings = _with_warnings(payload.build_zip, entries, date_time, compression)
    assert_same_outcome(expected, got)
    if expected[0] == "returned":
        assert got_warnings == expected_warnings
