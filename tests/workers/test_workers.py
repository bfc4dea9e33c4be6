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


_PROBES = '''
import os, sys
import ansible_accel, ansible_accel._counters as counters
ansible_accel.install()
import ansible_accel._integrations.workers as workers
from ansible_accel import _native

def probes_run_in_a_child():
    """Whether the argspec layout probes (a short program, code named "<string>") run in a
    process forked from this one when the native argspec path asks for them."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        seen = []
        sys.setprofile(lambda frame, event, arg: seen.append(1)
                       if event == "call" and frame.f_code.co_filename == "<string>" else None)
        _native.argspec_quick_spec_check()
        sys.setprofile(None)
        os.write(write, b"1" if seen else b"0")
        os._exit(0)
    os.close(write)
    answer = os.read(read, 1)
    os.waitpid(pid, 0)
    return answer == b"1"

before = probes_run_in_a_child()
workers._prewarm()
events = counters.snapshot()["workers"].get("events", {})
print(before, probes_run_in_a_child(), events.get("argspec layout probes made before the fork"))
'''


def test_workers_find_the_argspec_probes_made_by_the_controller():
    done = subprocess.run([sys.executable, "-c", _PROBES], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert done.stdout.split() == ["True", "False", "1"], done.stdout
