"""The ``workers`` path in real ``ansible-playbook`` runs: each worker starts with what the
controller computed ahead (and its heap frozen for the worker's collector); results and
counters."""

from __future__ import annotations

import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from _playbook_run import run_playbook  # noqa: E402

PLAY = """\
- hosts: all
  gather_facts: false
  tasks:
    - accel_worker_probe:
    - set_fact: {x: "{{ inventory_hostname }}"}
    - debug: {msg: "{{ x }}"}
    - command: "true"
"""


def _run(tmp_path, accel: bool, **extra_env) -> tuple[dict, dict | None]:
    _, results, stats = run_playbook(tmp_path, PLAY, [f"w{i}" for i in range(3)], accel,
                                     {"ANSIBLE_ACTION_PLUGINS": os.path.join(HERE, "action_plugins"), **extra_env})
    return results, stats


def _probe(report: dict) -> dict:
    return {host: tasks[0]["result"] for host, tasks in report["hosts"].items()}


_VOLATILE = ("start", "end", "delta")


def _comparable(report: dict) -> dict:
    """Every task's result but the probe's, times of day left out."""
    return {h: [{**t, "result": {k: v for k, v in t["result"].items() if k not in _VOLATILE}} for t in tasks[1:]]
            for h, tasks in report["hosts"].items()}


def test_workers_start_with_the_controllers_work_done(tmp_path):
    plain, _ = _run(tmp_path, accel=False)
    warm, stats = _run(tmp_path, accel=True)
    for host, probe in _probe(warm).items():
        plain_probe = _probe(plain)[host]
        # the controller's heap (hundreds of thousands of objects) is frozen for the worker's collector
        assert probe["frozen"] > plain_probe["frozen"] + 10000
        if probe["cached"] is not None:  # ansible-core 2.20+: the mappings are there before the worker needs them
            assert probe["cached"]["size"] >= 2 and plain_probe["cached"]["size"] == 0, (probe, plain_probe)
    assert _comparable(warm) == _comparable(plain)
    workers = stats["run"]["paths"]["workers"]
    assert stats["workers"]["active"] is True and workers["native"] == 12 and not workers["fallback"]


def test_switched_off_workers_fork_as_ansible_core_does(tmp_path):
    plain, _ = _run(tmp_path, accel=False)
    report, stats = _run(tmp_path, accel=True, ANSIBLE_ACCEL_WORKERS="0")
    assert stats["workers"]["active"] is False and "ANSIBLE_ACCEL_WORKERS=0" in stats["workers"]["reason"]
    assert {h: p["frozen"] for h, p in _probe(report).items()} == {h: p["frozen"] for h, p in _probe(plain).items()}


def test_the_controllers_work_ahead_prints_nothing():
    code = ("import ansible_accel._integrations.workers as w, ansible_accel._counters as c; w._prewarm(); "
            "print(sorted(c.snapshot()['workers'].get('events', {})))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    events = eval(done.stdout)  # noqa: S307 - our own printed list
    assert "template lexer built before the fork" in events
    assert "module serialization profiles imported before the fork" in events
