"""``benches/runner_floor.py``: a module's own run, forked from a process that imported it, gives
the fresh interpreter's result, and costs less than the fresh start it bounds."""

from __future__ import annotations

import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_the_floor_row_gives_the_fresh_result_for_less():
    done = subprocess.run([sys.executable, "-m", "benches.runner_floor", "--runs", "2", "ping", "stat"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    rows = {m.group(1): m for m in re.finditer(
        r"^(\S+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)×\s+([\d.]+)×\s+(\S+)$", done.stdout, re.M)}
    assert set(rows) == {"ping", "stat"}, done.stdout
    for row in rows.values():
        fresh, floor, files = (float(row.group(i)) for i in (2, 3, 4))
        assert row.group(7) == "equal"
        assert 0 < floor < fresh and 0 <= files < fresh, row.group(0)
    # stat runs commands of its own (file, lsattr): its own run costs more than ping's
    assert float(rows["stat"].group(3)) > float(rows["ping"].group(3))
    assert re.search(r"the shell the local connection starts every command with: [\d.]+ ms", done.stdout)
