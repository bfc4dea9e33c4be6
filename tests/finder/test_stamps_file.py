"""The stamps of a closure record on disk, encoded (``finder_stamps_encode``) and checked
straight from those bytes (``FinderStampsFile``): the answers of ``FinderStamps``."""

from __future__ import annotations

import os

import pytest

from ansible_accel import _native
from ansible_accel._integrations._finder_locate import stamp


def test_encoded_stamps_say_unchanged_until_a_path_changes(tmp_path):
    files = [tmp_path / name for name in ("a.py", "b.py", "\udcff-odd.py")]
    for path in files:
        path.write_bytes(b"x = 1\n")
    missing = str(tmp_path / "missing.py")
    stamps = [(str(tmp_path), stamp(str(tmp_path)))] + [(str(p), stamp(str(p))) for p in files] + [(missing, None)]
    check = _native.FinderStampsFile(_native.finder_stamps_encode(stamps))
    assert len(check) == len(stamps)
    assert [os.fsdecode(p) for p in check.paths()] == [p for p, _ in stamps]
    assert check.unchanged() is True
    assert _native.FinderStamps(stamps).unchanged() is True
    # the same size and mtime, other content: the ctime moves
    before = os.stat(files[1])
    files[1].write_bytes(b"x = 2\n")
    os.utime(files[1], ns=(before.st_atime_ns, before.st_mtime_ns))
    assert check.unchanged() is False
    assert _native.FinderStamps(stamps).unchanged() is False


def test_a_path_appearing_is_a_change(tmp_path):
    missing = str(tmp_path / "later.py")
    check = _native.FinderStampsFile(_native.finder_stamps_encode([(missing, None)]))
    assert check.unchanged() is True
    (tmp_path / "later.py").write_bytes(b"")
    assert check.unchanged() is False


def test_anything_but_encoded_stamps_is_refused(tmp_path):
    good = _native.finder_stamps_encode([(str(tmp_path), stamp(str(tmp_path)))])
    for bad in (b"", b"AASTMP01", good[:-1], good + b"\0", b"x" * len(good)):
        with pytest.raises(ValueError):
            _native.FinderStampsFile(bad)
    with pytest.raises((TypeError, OverflowError)):
        _native.finder_stamps_encode([(str(tmp_path), (-1, 0, 0, 0, 0, 0))])
