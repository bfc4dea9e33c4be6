"""The closure records' directory stays bounded: least recently used records go first, and
temporary files a dead worker left behind go after an hour."""

from __future__ import annotations

import os
import time

from ansible_accel._integrations import _finder_disk


def _file(path, size: int, age_s: float):
    path.write_bytes(b"x" * size)
    then = time.time() - age_s
    os.utime(path, (then, then))
    return path


def test_within_bounds_nothing_goes(tmp_path):
    records = [_file(tmp_path / f"{i}.json", 10, 100 + i) for i in range(8)]
    _finder_disk.prune(str(tmp_path), max_records=8, max_bytes=1000)
    assert all(r.exists() for r in records)


def test_too_many_records_the_least_recently_used_go(tmp_path):
    # record i was last used i minutes ago: the oldest uses go first, down to 3/4 of the bound
    records = [_file(tmp_path / f"{i}.json", 10, 60 * i) for i in range(9)]
    _finder_disk.prune(str(tmp_path), max_records=8, max_bytes=10_000)
    assert [r.exists() for r in records] == [True] * 6 + [False] * 3


def test_too_many_bytes_the_least_recently_used_go(tmp_path):
    records = [_file(tmp_path / f"{i}.json", 100, 60 * i) for i in range(5)]
    _finder_disk.prune(str(tmp_path), max_records=100, max_bytes=400)
    assert [r.exists() for r in records] == [True] * 3 + [False] * 2


def test_stale_temporary_files_go_and_other_files_stay(tmp_path):
    stale = _file(tmp_path / "a.json.123.part", 10, 2 * 3600)
    fresh = _file(tmp_path / "b.json.456.part", 10, 60)
    other = _file(tmp_path / "notes.txt", 10, 10 * 3600)
    (tmp_path / "sub.json").mkdir()
    _finder_disk.prune(str(tmp_path), max_records=1, max_bytes=1)
    assert not stale.exists() and fresh.exists() and other.exists() and (tmp_path / "sub.json").is_dir()


def test_a_missing_directory_is_no_error(tmp_path):
    _finder_disk.prune(str(tmp_path / "gone"))


def test_few_records_are_not_looked_at_but_stale_temporary_files_still_go(tmp_path, monkeypatch):
    # at most LARGEST_RECORD each (store() leaves no larger one): 4 of them fit in 400 bytes
    monkeypatch.setattr(_finder_disk, "LARGEST_RECORD", 100)
    records = [_file(tmp_path / f"{i}.json", 100, 60 * i) for i in range(4)]
    stale = _file(tmp_path / "c.json.789.part", 10, 2 * 3600)
    _finder_disk.prune(str(tmp_path), max_records=100, max_bytes=400)
    assert all(r.exists() for r in records) and not stale.exists()
    # one more and they may not fit: looked at, and the least recently used go
    records.append(_file(tmp_path / "4.json", 100, 60 * 4))
    _finder_disk.prune(str(tmp_path), max_records=100, max_bytes=400)
    assert [r.exists() for r in records] == [True] * 3 + [False] * 2


def test_kept_entry_blocks_are_bounded_apart_from_the_records(tmp_path):
    # the blocks' own suffix and size: records (and other files) are not counted or removed
    blocks = [_file(tmp_path / f"{i}-t-8.block", 100, 60 * i) for i in range(6)]
    records = [_file(tmp_path / f"{i}.json", 10, 60 * 60 + i) for i in range(3)]
    _finder_disk.prune(str(tmp_path), max_records=4, max_bytes=10_000, suffix=".block", largest=1000)
    assert [b.exists() for b in blocks] == [True] * 3 + [False] * 3
    assert all(r.exists() for r in records)
    _finder_disk.prune(str(tmp_path), max_records=100, max_bytes=250, suffix=".block", largest=100)
    assert [b.exists() for b in blocks] == [True] * 1 + [False] * 5
