"""``benches/worker_warmup.py``: a small real run, each task run twice in its worker, results
identical off and on, and the first run (in a freshly forked worker) the one that copies pages."""

from __future__ import annotations

import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_a_small_run_measures_both_runs_of_every_task(tmp_path):
    report_file = tmp_path / "warmup.json"
    done = subprocess.run([sys.executable, "-m", "benches.worker_warmup", "--python", sys.executable, "--hosts", "2",
                           "--forks", "2", "--json", str(report_file)], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "Results: identical" in done.stdout
    report = json.loads(report_file.read_text())
    assert not report["problems"]
    for mode in ("off", "on"):
        table = report["modes"][mode]["summary"]
        assert set(table) == {"set_fact", "debug", "assert", "command", "ping", "all tasks"}
        assert table["all tasks"]["workers"] == 10
        # a fresh fork's first run writes to pages the controller shares with it; the second finds them copied
        assert table["all tasks"]["first_faults"] > 5 * table["all tasks"]["second_faults"] > 0, table
