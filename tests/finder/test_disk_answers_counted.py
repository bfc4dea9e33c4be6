"""A walk answered from a record on disk is the native path's answer, and a run's counters say
so: two real ``ansible-playbook`` runs of the same play, each writing ``ANSIBLE_ACCEL_STATS``.
The first scans the modules natively and leaves records; the second, in fresh processes,
takes its walks from those records and counts each one used as a native call (with its
``closure_disk_hit`` event), not 0."""

from __future__ import annotations

import json
import os
import subprocess
import sys

BIN = os.path.dirname(sys.executable)

PLAY = """- hosts: all
  gather_facts: false
  tasks:
    - ping:
    - stat: {path: /}
    - command: "true"
"""


def _run(work, stats: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env.update(
        HOME=str(work / "home"),  # the records live under its ~/.ansible/tmp
        ANSIBLE_ACCEL_STATS=str(work / stats),
        ANSIBLE_ACCEL_RUNNER="0",  # every module's payload is built; nothing else changes the walks
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_LOCALHOST_WARNING="0",
    )
    done = subprocess.run(
        [os.path.join(BIN, "ansible-accel"), "ansible-playbook", "-i", str(work / "inventory"), str(work / "play.yml")],
        cwd=work, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "failed=0" in done.stdout, done.stdout
    return json.loads((work / stats).read_text())


def test_a_second_run_counts_walks_from_disk_as_native(tmp_path):
    (tmp_path / "home").mkdir(mode=0o700)
    (tmp_path / "play.yml").write_text(PLAY)
    (tmp_path / "inventory").write_text(
        "".join(f"h{i} ansible_connection=local ansible_python_interpreter={sys.executable}\n" for i in range(2))
    )
    first = _run(tmp_path, "first.json")
    finder = first["run"]["paths"]["finder"]
    assert first["finder"]["active"] is True, first["finder"]
    assert finder["native"] > 0 and finder.get("events", {}).get("closure_disk_hit", 0) == 0, finder
    assert any(name.startswith("ansible_accel_finder") for name in os.listdir(tmp_path / "home" / ".ansible" / "tmp"))

    second = _run(tmp_path, "second.json")
    finder = second["run"]["paths"]["finder"]
    hits = finder.get("events", {}).get("closure_disk_hit", 0)
    # Every walk of the second run (3 modules, 2 hosts) came from a record; none was scanned.
    assert hits >= 3, finder
    assert finder["native"] == hits and finder["fallback"] == {}, finder
