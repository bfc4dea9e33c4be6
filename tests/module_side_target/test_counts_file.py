"""Where a fresh interpreter that opted in writes its counts: with ``target`` alone, the file of
the nearest parent process that is a controller with the accelerator on, found by walking up the
parent processes, and only in a directory of this user's that nobody else may open; with
``target:PATH``, PATH, and only a regular file of this user's, in a directory of this user's or
a sticky one of root's.  Nothing is ever written to a file of another user or through a link."""

from __future__ import annotations

import json
import os
import pathlib
import shlex
import shutil
import subprocess
import sys
import tempfile

import pytest

from ansible_accel import _modside_target, _runner_modside

UID = os.getuid()
AS_ROOT = pytest.mark.skipif(UID != 0, reason="needs root to make files of another user")
NOBODY = 65534


def _base(tmp_path, mode: int = 0o700):
    """``ansible-accel-UID`` in ``tmp_path`` (a temporary directory as TMPDIR names it)."""
    base = tmp_path / f"ansible-accel-{UID}"
    base.mkdir(mode)
    base.chmod(mode)
    return base


def _controller_files(base, pid: int, mode: int = 0o700):
    rundir = base / f"run-{pid}"
    rundir.mkdir()
    rundir.chmod(mode)
    record = rundir / f"{pid}{_runner_modside.TARGET_SUFFIX}"
    record.write_bytes(b"")
    return rundir, record


def _look_up(tmp_path, *, through_shell: bool = False, user: int | None = None, python: str = sys.executable,
             hook: str = _modside_target.__file__) -> str:
    """``controller_record()`` in a process started from this one (with ``through_shell``, from a
    shell this one started), TMPDIR naming ``tmp_path`` and no XDG_RUNTIME_DIR."""
    code = (
        "import importlib.util as u, sys; s = u.spec_from_file_location('m', sys.argv[1]); m = u.module_from_spec(s);"
        " s.loader.exec_module(m); print(m.controller_record())"
    )
    command = [python, "-c", code, hook]
    if through_shell:
        command = ["/bin/sh", "-c", shlex.join(command) + "; true"]
    env = {k: v for k, v in os.environ.items() if k not in ("XDG_RUNTIME_DIR", "TEMP", "TMP")}
    env["TMPDIR"] = str(tmp_path)
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60, check=True, user=user)
    return done.stdout.strip()


def test_the_counts_file_of_the_nearest_controller_up_the_parent_processes(tmp_path):
    base = _base(tmp_path)
    _, record = _controller_files(base, os.getpid())
    assert _look_up(tmp_path) == str(record)
    assert _look_up(tmp_path, through_shell=True) == str(record)  # a grandparent: found walking up
    # The parent of this test's process, when it has a file too, is further up: not chosen.
    _controller_files(base, os.getppid())
    assert _look_up(tmp_path, through_shell=True) == str(record)


def test_nothing_but_a_private_directory_of_this_user_with_a_file_of_this_user_qualifies(tmp_path):
    base = _base(tmp_path)
    rundir, record = _controller_files(base, os.getpid(), mode=0o750)
    assert _look_up(tmp_path) == ""  # others may open the directory
    rundir.chmod(0o700)
    record.unlink()
    assert _look_up(tmp_path) == ""  # no counts file: the controller did not ask for counts
    other = tmp_path / "elsewhere"
    other.write_bytes(b"")
    record.symlink_to(other)
    assert _look_up(tmp_path) == ""  # a link
    record.unlink()
    record.mkdir()
    assert _look_up(tmp_path) == ""  # not a regular file
    record.rmdir()
    record.write_bytes(b"")
    assert _look_up(tmp_path) == str(record)
    base.chmod(0o755)
    assert _look_up(tmp_path) == ""  # the base directory is not private


def test_a_linked_run_directory_does_not_qualify(tmp_path):
    base = _base(tmp_path)
    real = tmp_path / "real"
    real.mkdir(0o700)
    real.chmod(0o700)
    (real / f"{os.getpid()}{_runner_modside.TARGET_SUFFIX}").write_bytes(b"")
    (base / f"run-{os.getpid()}").symlink_to(real)
    assert _look_up(tmp_path) == ""


@AS_ROOT
def test_a_module_run_as_another_user_finds_nothing():
    """The controller's files are its user's: a module of another user (``become``; here
    ``nobody`` with the system's Python, which that user may run) looks for its own, and takes
    none that is not, even under its name and open to all."""
    work = tempfile.mkdtemp(prefix="accel-counts-", dir="/tmp")
    try:
        os.chmod(work, 0o755)
        hook = shutil.copy(_modside_target.__file__, work)
        _, record = _controller_files(_base(pathlib.Path(work)), os.getpid())
        assert _look_up(work) == str(record)
        base = pathlib.Path(work, f"ansible-accel-{NOBODY}")
        base.mkdir(0o755)
        rundir, _ = _controller_files(base, os.getpid(), mode=0o755)
        (rundir / f"{os.getpid()}{_runner_modside.TARGET_SUFFIX}").chmod(0o666)
        assert _look_up(work, user=NOBODY, python="/usr/bin/python3", hook=hook) == ""
        # Made that user's own, they would be its (the walk reaches this process from there too).
        for path in (base, rundir, rundir / f"{os.getpid()}{_runner_modside.TARGET_SUFFIX}"):
            os.chown(path, NOBODY, NOBODY)
            path.chmod(0o700 if path.is_dir() else 0o600)
        assert _look_up(work, user=NOBODY, python="/usr/bin/python3", hook=hook).startswith(str(rundir))
    finally:
        shutil.rmtree(work)


def _append(path, create: bool, line: bytes = b'{"x": 1}\n') -> None:
    """As ``flush()`` appends (which swallows the error of a file it may not open)."""
    try:
        _runner_modside._append_own(str(path), line, create)
    except OSError:
        pass


def test_a_named_file_is_created_and_appended_to(tmp_path):
    record = tmp_path / "counts.jsonl"
    _append(record, create=True)
    _append(record, create=True)
    assert [json.loads(line) for line in record.read_text().splitlines()] == [{"x": 1}, {"x": 1}]
    assert record.stat().st_mode & 0o777 == 0o600


def test_the_controller_file_is_never_created(tmp_path):
    record = tmp_path / "counts.jsonl"
    _append(record, create=False)
    assert not record.exists()


def test_never_through_a_link(tmp_path):
    target = tmp_path / "target"
    target.write_bytes(b"")
    link = tmp_path / "link"
    link.symlink_to(target)
    _append(link, create=True)
    assert target.read_bytes() == b""


@AS_ROOT
def test_never_a_file_of_another_user_nor_in_a_directory_of_another_user(tmp_path):
    theirs = tmp_path / "theirs.jsonl"
    theirs.write_bytes(b"")
    os.chown(theirs, NOBODY, NOBODY)
    _append(theirs, create=True)
    assert theirs.read_bytes() == b""

    their_dir = tmp_path / "their-dir"
    their_dir.mkdir()
    os.chown(their_dir, NOBODY, NOBODY)
    _append(their_dir / "counts.jsonl", create=True)
    assert os.listdir(their_dir) == []

    their_dir.chmod(0o777)  # whatever its mode
    _append(their_dir / "counts.jsonl", create=True)
    assert os.listdir(their_dir) == []


@AS_ROOT
def test_another_user_writes_in_a_sticky_directory_of_roots_only(tmp_path):
    """As ``nobody`` (the system's Python, which that user may run): a new file in a sticky
    directory of root's, such as /tmp, is made; in root's other directories, even open to all,
    nothing is."""
    work = tempfile.mkdtemp(prefix="accel-counts-", dir="/tmp")
    try:
        os.chmod(work, 0o755)
        shutil.copy(_runner_modside.__file__, work)
        sticky, open_dir = os.path.join(work, "sticky"), os.path.join(work, "open")
        os.mkdir(sticky)
        os.chmod(sticky, 0o1777)
        os.mkdir(open_dir)
        os.chmod(open_dir, 0o777)
        code = (
            "import sys; sys.path.insert(0, sys.argv[1]); import _runner_modside as m\n"
            "for d in sys.argv[2:]: m._append_own(d + '/counts.jsonl', b'{}\\n', True)\n"
        )
        subprocess.run(["/usr/bin/python3", "-c", code, work, sticky, open_dir], check=True, timeout=60, user=NOBODY)
        made = os.path.join(sticky, "counts.jsonl")
        assert os.stat(made).st_uid == NOBODY and open(made, "rb").read() == b"{}\n"
        assert os.listdir(open_dir) == []
    finally:
        shutil.rmtree(work)
