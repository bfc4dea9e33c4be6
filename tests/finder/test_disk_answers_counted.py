"""A walk answered from a record on disk is the native path's answer, and a run's counters say
so: two real ``ansible-playbook`` runs of the same play, each writing ``ANSIBLE_ACCEL_STATS``.
The first scans the modules natively and leaves records; the second, in fresh processes,
takes its walks from those records and counts each one used as a native call (with its
``closure_disk_hit`` event), not 0."""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from _playbook_run import run_playbook  # noqa: E402

PLAY = """- hosts: all
  gather_facts: false
  tasks:
    - ping:
    - stat: {path: /}
    - command: "true"
"""


def _run(work) -> dict:
    done, _, stats = run_playbook(work, PLAY, ["h0", "h1"], True, {
        "HOME": str(work / "home"),  # the records live under its ~/.ansible/tmp
        "ANSIBLE_ACCEL_RUNNER": "0",  # every module's payload is built; nothing else changes the walks
        "ANSIBLE_LOCALHOST_WARNING": "0",
    }, results=False)
    assert "failed=0" in done.stdout, done.stdout
    return stats


def test_a_second_run_counts_walks_from_disk_as_native(tmp_path):
    (tmp_path / "home").mkdir(mode=0o700)
    first = _run(tmp_path)
    finder = first["run"]["paths"]["finder"]
    assert first["finder"]["active"] is True, first["finder"]
    assert finder["native"] > 0 and finder.get("events", {}).get("closure_disk_hit", 0) == 0, finder
    assert any(name.startswith("ansible_accel_finder") for name in os.listdir(tmp_path / "home" / ".ansible" / "tmp"))

    second = _run(tmp_path)
    finder = second["run"]["paths"]["finder"]
    hits = finder.get("events", {}).get("closure_disk_hit", 0)
    # Every walk of the second run (3 modules, 2 hosts) came from a record; none was scanned.
    assert hits >= 3, finder
    assert finder["native"] == hits and finder["fallback"] == {}, finder
