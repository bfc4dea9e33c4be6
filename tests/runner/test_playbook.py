"""Real ``ansible-playbook`` runs with the runner off and on (local connection, pipelining off and
on): every task's result is the same, the runner ran the modules, and no process is left."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
BIN = os.path.dirname(sys.executable)
sys.path.insert(0, os.path.dirname(HERE))
from _playbook_run import run_playbook  # noqa: E402

PLAY = """\
- hosts: all
  gather_facts: false
  vars:
    d: "{{ work }}/{{ inventory_hostname }}"
  tasks:
    - file: {path: "{{ d }}", state: directory}
    - ping: {data: marker}
    - command: echo hello
      environment: {GREETING: "it's a b"}
    - shell: "echo $GREETING | tr a-z A-Z; echo oops >&2"
      environment: {GREETING: quoted}
    - stat: {path: "{{ d }}"}
    - copy: {content: "one\\ntwo\\n", dest: "{{ d }}/f.txt", mode: "0644"}
    - lineinfile: {path: "{{ d }}/f.txt", line: three}
    - slurp: {src: "{{ d }}/f.txt"}
    - setup: {gather_subset: ["!all", "!min", "platform"]}
    - accel_observe: {mutate: false}
    - accel_behave: {name: fails, exit_code: 3}
      ignore_errors: true
    - accel_behave: {name: raises, raise_error: true}
      ignore_errors: true
    - command: sleep 0.1
      async: 10
      poll: 1
    - file: {path: "{{ d }}", state: absent}
"""

_NAMES = [
    (re.compile(r"_payload_[a-z0-9_]{8}"), "_payload_X"),
    (re.compile(r"ansible-tmp-[0-9.]+-[0-9]+-[0-9]+"), "ansible-tmp-X"),
    (re.compile(r"j[0-9]+\.[0-9]+"), "jX"),
]
# Values that differ from run to run by nature: times, ids, the probe module's pids and random
# number (and its process group: the runner's, see docs/runner.md), the reference count of a
# preloaded object (immortal in a runner's child on 3.12+), the work directory's inode.
_VOLATILE_KEYS = {"_original_basename",  # a random temporary file's name for copy's content (2.19)
                  "start", "end", "delta", "ansible_job_id", "results_file", "started", "finished", "duration",
                  "pid", "random", "pgrp", "sid", "basic_refcount", "atime", "ctime", "mtime", "inode", "version",
                  "wrapper_code"}  # a digest of the script, which differs between two playbook runs


def _normalise(value):
    if isinstance(value, dict):
        return {k: "X" if k in _VOLATILE_KEYS else _normalise(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_normalise(v) for v in value]
    if isinstance(value, str):
        for pattern, replacement in _NAMES:
            value = pattern.sub(replacement, value)
    return value


def _differences(a, b, where="") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        return [d for k in sorted(set(a) | set(b)) for d in _differences(a.get(k), b.get(k), f"{where}/{k}")]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in _differences(x, y, f"{where}[{i}]")]
    return [] if a == b else [f"{where}: {a!r} != {b!r}"]


def _run(tmp_path, accel: bool, pipelining: bool, runner: bool = True) -> tuple[list, dict | None]:
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    _, results, stats = run_playbook(tmp_path, PLAY, ["h1", "h2", "h3"], accel,
                                     {"ANSIBLE_LIBRARY": os.path.join(HERE, "library"), "ANSIBLE_PIPELINING": str(pipelining),
                                      "ANSIBLE_ACCEL_RUNNER": "1" if runner else "0", "ANSIBLE_FORKS": "3"},
                                     ("-e", f"work={work}"))
    return _normalise(results), stats


def _runner_processes(marker: str | None = None) -> list[int]:
    """Runner processes on this machine; with ``marker``, only those whose environment holds
    it (a test's own temporary path), not those of other runs going on meanwhile."""
    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as handle:
                    if b"_runner_server.py" not in handle.read():
                        continue
                if marker is not None:
                    with open(f"/proc/{pid}/environ", "rb") as handle:
                        if marker.encode() not in handle.read():
                            continue
                found.append(int(pid))
            except OSError:
                continue
    return found


@pytest.mark.parametrize("pipelining", [False, True], ids=["files", "pipelining"])
def test_results_are_the_same_with_the_runner(tmp_path, pipelining):
    plain, _ = _run(tmp_path, accel=False, pipelining=pipelining)
    warm, stats = _run(tmp_path, accel=True, pipelining=pipelining)
    assert warm == plain, "\n".join(_differences(plain, warm)[:20])
    runner = stats["run"]["paths"]["runner"]
    # 3 hosts x 13 module tasks; the first modules of a kind go the ordinary way while a runner starts.
    assert runner["native"] >= 20, runner
    assert not [r for r in runner["fallback"] if r.startswith("after hand-over")], runner
    # the async task's start (async_wrapper) went to the runner too
    assert "async (async_wrapper starts the module)" not in runner["fallback"], runner
    assert "a module command of another shape (arguments)" not in runner["fallback"], runner
    # the commands around the modules: the temporary directories only without pipelining
    done_here = {k.split(": ")[1]: n for k, n in runner.get("events", {}).items() if k.startswith("commands without a shell")}
    assert {"home", "mkdtemp", "rm"} | (set() if pipelining else {"chmod"}) <= set(done_here), runner
    assert not [k for k in runner.get("events", {}) if k.startswith("commands through the shell")], runner
    deadline = time.monotonic() + 10
    while _runner_processes(str(tmp_path)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _runner_processes(str(tmp_path)) == []


def test_switched_off_the_runner_runs_nothing(tmp_path):
    _, stats = _run(tmp_path, accel=True, pipelining=True, runner=False)
    assert stats["runner"]["active"] is False and stats["run"]["paths"]["runner"]["native"] == 0


def test_no_runner_is_left_when_the_controller_is_killed(tmp_path):
    play = tmp_path / "slow.yml"
    play.write_text("- hosts: all\n  gather_facts: false\n  tasks:\n" + "    - ping:\n" * 3 + "    - command: sleep 6\n")
    inventory = tmp_path / "hosts"
    inventory.write_text("".join(f"h{i} ansible_connection=local ansible_python_interpreter={sys.executable}\n" for i in range(1, 3)))
    before = set(_runner_processes())
    controller = subprocess.Popen([os.path.join(BIN, "ansible-accel"), "ansible-playbook", "-i", str(inventory), str(play)],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 120
    while not (set(_runner_processes()) - before) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert set(_runner_processes()) - before, "no runner started"
    time.sleep(2)  # the sleeping task is running
    os.kill(controller.pid, signal.SIGKILL)
    controller.wait()
    # The workers end on their own once their task does (the sleep), then the runners see it.
    deadline = time.monotonic() + 60
    while set(_runner_processes()) - before and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not set(_runner_processes()) - before
