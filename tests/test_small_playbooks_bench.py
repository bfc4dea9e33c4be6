"""``benches/small_playbooks.py`` (no playbook slower with the accelerator on) runs one of its
playbooks once per mode and gives a whole report: results identical, nothing left behind.  Its
times are for ``make bench-e2e``, never checked here.  It runs as its own process, as make runs
it: the benchmark reaps (and ends) every descendant of the process it runs in, and a test
session may have long-lived children of its own (the SSH tests' sshd)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from benches import small_playbooks  # noqa: E402


def test_one_playbook_both_modes(tmp_path):
    out = tmp_path / "report.json"
    done = subprocess.run([sys.executable, "-m", "benches.small_playbooks", "--python", sys.executable, "--repeats", "1",
                           "--only", "three-modules", "--json", str(out)],
                          cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600)
    assert done.returncode == 0, done.stdout
    report = json.loads(out.read_text())
    assert report["problems"] == []
    entry = report["playbooks"]["three-modules"]
    for kind in ("cpu", "wall"):
        assert entry[kind]["off"] > 0 and entry[kind]["on"] > 0
    assert "results: identical" in done.stdout


def test_results_are_compared():
    """A run whose results differ is reported, not averaged in."""
    first = small_playbooks.normalised({"h": [{"rc": 0, "delta": "0:00:01"}]})
    second = small_playbooks.normalised({"h": [{"rc": 0, "delta": "0:00:02"}]})
    third = small_playbooks.normalised({"h": [{"rc": 1, "delta": "0:00:01"}]})
    assert first == second and first != third
