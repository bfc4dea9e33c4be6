"""ANSIBLE_ACCEL_STATS leaves nothing in the temporary directory, whether its owner exits,
``exec``s or is killed, and still adds up the counters of forked workers.  Each case runs a
real interpreter with TMPDIR pointing at a directory of the test's own."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import textwrap

import pytest

PREFIX = "ansible-accel-stats-"

# An owner that forks ``workers`` children, each counting 5 native finder calls and 1
# fallback, then does ``ending``: exit, exec or kill itself.
OWNER = """
import json, os, signal, stat, sys
import ansible_accel
from ansible_accel import _counters, _stats

ansible_accel.install()
{before}
for _ in range({workers}):
    pid = os.fork()
    if pid == 0:
        _counters.native("finder", 5)
        _counters.fallback("finder", "probe")
        sys.exit(0)  # a normal exit: the atexit hook leaves this child's counts
    os.waitpid(pid, 0)
{ending}
"""

REPORT_SPOOL = """
info = os.stat(_stats._spool) if os.path.isdir(_stats._spool) else None
print(json.dumps({
    "spool": _stats._spool,
    "dir_mode": info and stat.S_IMODE(info.st_mode),
    "files": {n: stat.S_IMODE(os.stat(os.path.join(_stats._spool, n)).st_mode) for n in os.listdir(_stats._spool)}
    if info else {},
}), flush=True)
"""


def owner(tmp_path, *, workers: int = 0, before: str = "", ending: str = "", **extra_env: str):
    """Run OWNER with the stats file and TMPDIR under ``tmp_path``."""
    script = OWNER.format(workers=workers, before=textwrap.dedent(before), ending=textwrap.dedent(ending))
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env.update(ANSIBLE_ACCEL_STATS=str(tmp_path / "stats.json"), TMPDIR=str(spool_parent(tmp_path)), **extra_env)
    return subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)


def spool_parent(tmp_path):
    parent = tmp_path / "tmp"
    parent.mkdir(mode=0o700, exist_ok=True)
    return parent


def spools(tmp_path) -> list[str]:
    return sorted(name for name in os.listdir(spool_parent(tmp_path)) if name.startswith(PREFIX))


def stats(tmp_path) -> dict:
    return json.loads((tmp_path / "stats.json").read_text())


def test_normal_exit_adds_up_forked_workers_and_removes_the_spool(tmp_path):
    completed = owner(tmp_path, workers=3, ending=REPORT_SPOOL)
    assert completed.returncode == 0, completed.stderr
    seen = json.loads(completed.stdout)
    assert seen["dir_mode"] == 0o700
    assert len(seen["files"]) == 3 and set(seen["files"].values()) == {0o600}
    run = stats(tmp_path)["run"]
    assert run["processes"] == 4
    assert run["paths"]["finder"]["native"] >= 15  # the owner may count its own calls too
    assert run["paths"]["finder"]["fallback"]["probe"] == 3
    assert spools(tmp_path) == []


def test_spool_is_named_after_its_owner(tmp_path):
    completed = owner(tmp_path, workers=1, ending="print(os.getpid(), _stats._spool)")
    pid, spool = completed.stdout.split()
    assert os.path.dirname(spool) == str(spool_parent(tmp_path))
    assert os.path.basename(spool).startswith(f"{PREFIX}{pid}-")


def test_nothing_is_made_before_a_worker_writes(tmp_path):
    completed = owner(tmp_path, ending="print(os.path.exists(_stats._spool))")
    assert completed.stdout.split() == ["False"]
    assert stats(tmp_path)["run"]["processes"] == 1


def test_exec_leaves_nothing(tmp_path):
    completed = owner(tmp_path, ending="os.execv('/bin/true', ['true'])")
    assert completed.returncode == 0, completed.stderr
    assert spools(tmp_path) == []
    assert not (tmp_path / "stats.json").exists()  # atexit does not run across exec


def test_exec_after_workers_wrote_is_cleaned_by_the_next_owner(tmp_path):
    completed = owner(tmp_path, workers=2, ending="os.execv('/bin/true', ['true'])")
    assert completed.returncode == 0, completed.stderr
    assert len(spools(tmp_path)) == 1  # the exec'd process had the owner's pid
    assert owner(tmp_path).returncode == 0
    assert spools(tmp_path) == []


def test_killed_owner_is_cleaned_by_the_next_owner(tmp_path):
    completed = owner(tmp_path, workers=2, ending="os.kill(os.getpid(), signal.SIGKILL)")
    assert completed.returncode == -signal.SIGKILL
    assert not (tmp_path / "stats.json").exists()
    left = spools(tmp_path)
    assert len(left) == 1
    # The next owner, with workers of its own: the stale spool goes, its own counts stay.
    completed = owner(tmp_path, workers=1)
    assert completed.returncode == 0, completed.stderr
    assert spools(tmp_path) == []
    run = stats(tmp_path)["run"]
    assert run["processes"] == 2 and run["paths"]["finder"]["fallback"]["probe"] == 1


def test_next_owner_keeps_live_foreign_and_unrelated_directories(tmp_path):
    parent = spool_parent(tmp_path)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_pid = int(dead.stdout)
    live = parent / f"{PREFIX}{os.getpid()}-0123456789abcdef"  # this test's process is alive
    loose = parent / f"{PREFIX}{dead_pid}-0123456789abcdef"  # readable by others: not ours to judge
    other = parent / f"{PREFIX}notapid"
    stale = parent / f"{PREFIX}{dead_pid}-fedcba9876543210"
    for path, mode in ((live, 0o700), (loose, 0o755), (other, 0o700), (stale, 0o700)):
        path.mkdir()
        path.chmod(mode)
        (path / "1.json").write_text("{}")
    assert owner(tmp_path).returncode == 0
    assert spools(tmp_path) == sorted(p.name for p in (live, loose, other))


def test_spool_with_another_mode_is_not_used(tmp_path):
    """A directory already at the spool's name that others may open is neither written,
    read nor removed."""
    before = """
    os.mkdir(_stats._spool)
    os.chmod(_stats._spool, 0o755)
    """
    completed = owner(tmp_path, workers=2, before=before, ending="print(_stats._spool)")
    assert completed.returncode == 0, completed.stderr
    spool = completed.stdout.strip()
    assert os.listdir(spool) == []
    assert stat.S_IMODE(os.stat(spool).st_mode) == 0o755
    assert stats(tmp_path)["run"]["processes"] == 1


@pytest.mark.parametrize("ending", ["", "os.execv('/bin/true', ['true'])"], ids=["exit", "exec"])
def test_disabled_accelerator_makes_no_spool(tmp_path, ending):
    completed = owner(tmp_path, workers=1, ending=ending, ANSIBLE_ACCEL="0")
    assert completed.returncode == 0, completed.stderr
    assert spools(tmp_path) == []


def test_a_worker_writes_its_counts_again_only_when_they_changed(tmp_path):
    """A worker leaves its counts when it sends its result and again at its exit: the second
    write is made only if it counted something in between, and the counts the owner adds up are
    those of the last write."""
    ending = """
    records = []
    for more in (0, 2):
        pid = os.fork()
        if pid == 0:
            _counters.native("payload", 1)
            _stats._write_spool()  # as at the result's send
            path = os.path.join(_stats._spool, f"{os.getpid()}.json")
            first = os.stat(path).st_ino
            if more:
                _counters.native("payload", more)
            with open(os.path.join(_stats._spool, f"record-{os.getpid()}"), "w") as handle:
                json.dump([more, first], handle)
            sys.exit(0)  # the exit's write
        os.waitpid(pid, 0)
        with open(os.path.join(_stats._spool, f"record-{pid}")) as handle:
            more, first = json.load(handle)
        written = os.stat(os.path.join(_stats._spool, f"{pid}.json")).st_ino
        records.append([more, written != first])
    print(json.dumps(records), flush=True)
    """
    completed = owner(tmp_path, ending=ending)
    assert completed.returncode == 0, completed.stderr
    assert json.loads(completed.stdout) == [[0, False], [2, True]]
    assert stats(tmp_path)["run"]["paths"]["payload"]["native"] >= 1 + 3
