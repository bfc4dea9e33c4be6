"""The exit recorder of the end-to-end benchmarks (``benches.e2e.exits``): the CPU of processes
that end while it records, by ancestry."""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
from benches.e2e import exits  # noqa: E402

BUSY = "import time\nend = time.process_time() + 0.3\nwhile time.process_time() < end: pass\n"


@pytest.mark.skipif(os.geteuid() != 0, reason="registering for every CPU's task statistics needs root")
def test_the_cpu_of_an_ended_process_is_recorded_with_its_ancestry(tmp_path):
    path = str(tmp_path / "exits.tsv")
    recorder = subprocess.Popen([sys.executable, "-m", "benches.e2e.exits", "record", path], cwd=ROOT,
                                stdout=subprocess.PIPE, text=True)
    try:
        assert recorder.stdout.readline().strip() == "recording"
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        # the shell forks the interpreter (a command follows it), so the interpreter's parent ends too
        subprocess.run(["/bin/sh", "-c", f"{sys.executable} -c '{BUSY}'; true"], check=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    finally:
        recorder.send_signal(signal.SIGTERM)
        assert recorder.wait(timeout=30) == 0
    spent = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    rows = exits.read(path)
    shells = [row for row in rows if row[2] == "sh" and row[1] == os.getpid()]
    assert len(shells) == 1
    busy = [row for row in rows if row[1] == shells[0][0]]
    assert len(busy) == 1
    assert 0.3 <= busy[0][3] / 1e9 <= spent + 0.05
    mine = [row for row in rows if shells[0][0] in (row[0], row[1])]  # (the machine runs other things too)
    below = exits.by_ancestry(mine, below="sh")
    assert list(below) == [f"{busy[0][2]} < sh"]
    assert below[f"{busy[0][2]} < sh"] == (busy[0][3], 1)
    assert exits.main(["tree", path, "--below", "sh"]) == 0
