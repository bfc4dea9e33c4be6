"""The native stat-stamp check of remembered closures (``_native.FinderStamps``): its stamp
of a path is exactly the one the Python side records with ``os.stat()``, and it says
"changed" for every change the Python check would notice."""

from __future__ import annotations

import os

import pytest

from ansible_accel import _native
from ansible_accel._integrations import _finder_closure, _finder_locate


def _paths(tmp_path):
    regular = tmp_path / "file.py"
    regular.write_bytes(b"x = 1\n")
    directory = tmp_path / "package"
    directory.mkdir()
    link = tmp_path / "link.py"
    link.symlink_to(regular)
    broken = tmp_path / "broken.py"
    broken.symlink_to(tmp_path / "absent.py")
    odd = os.path.join(os.fsencode(tmp_path), b"caf\xe9.py")  # not UTF-8: surrogate-escaped as str
    with open(odd, "wb") as f:
        f.write(b"")
    return [str(regular), str(directory), str(link), str(broken), str(tmp_path / "absent.py"), os.fsdecode(odd),
            str(tmp_path), "/"]


def test_the_native_stamp_is_os_stat_s(tmp_path):
    for path in _paths(tmp_path):
        assert _native.FinderStamps.stamp_of(path) == _finder_locate.stamp(path), path


def test_unchanged_until_something_changes(tmp_path):
    paths = _paths(tmp_path)
    stamps = tuple((p, _finder_locate.stamp(p)) for p in paths)
    check = _native.FinderStamps(stamps)
    assert len(check) == len(paths)
    assert check.unchanged() and _finder_closure._unchanged(stamps)

    os.chmod(paths[0], 0o600)  # only the mode (and ctime) changes
    assert not check.unchanged() and not _finder_closure._unchanged(stamps)

    stamps = tuple((p, _finder_locate.stamp(p)) for p in paths)
    check = _native.FinderStamps(stamps)
    assert check.unchanged()
    (tmp_path / "absent.py").write_bytes(b"")  # a path that was missing now exists
    assert not check.unchanged() and not _finder_closure._unchanged(stamps)


def test_a_stamp_that_does_not_fit_is_checked_in_python(tmp_path):
    path = str(tmp_path)
    odd = ((path, (-1, 0, 0, 0, 0, 0)),)
    with pytest.raises(OverflowError):
        _native.FinderStamps(odd)
    assert _finder_closure.native_check(odd) is None
    closure = _finder_closure.Closure((), (), odd, (), None)
    assert _finder_closure.unchanged(closure) is False
    real = ((path, _finder_locate.stamp(path)),)
    assert _finder_closure.unchanged(_finder_closure.Closure((), (), real, (), None)) is True
