"""The ``controller`` path in real ``ansible-playbook`` runs: the strategy waits on events
instead of polling, with the same results, callbacks and their order (linear and free
strategies, serial, throttle, handlers, max_fail_percentage, failures)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

BIN = os.path.dirname(sys.executable)
HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS_CALLBACK = os.path.join(os.path.dirname(os.path.dirname(HERE)), "benches", "e2e", "callback_plugins")
PLAY = """\
- name: linear play
  hosts: all
  gather_facts: false
  serial: [2, 3]
  max_fail_percentage: 60
  tasks:
    - command: "sleep 0.{{ inventory_hostname[-1] }}"
      changed_when: false
    - debug: {msg: "{{ inventory_hostname }}"}
      throttle: 1
    - command: "true"
      notify: a handler
      changed_when: true
    - fail: {msg: "h3 fails"}
      when: inventory_hostname == 'h3'
  handlers:
    - name: a handler
      debug: {msg: "handled {{ inventory_hostname }}"}

- name: free play
  hosts: all
  gather_facts: false
  strategy: free
  tasks:
    - command: "sleep 0.{{ inventory_hostname[-1] }}"
      changed_when: false
    - debug: {msg: "free {{ inventory_hostname }}"}
"""
_VOLATILE = ("start", "end", "delta")


def _run(tmp_path, **extra_env) -> tuple[dict, str, dict]:
    (tmp_path / "play.yml").write_text(PLAY)
    (tmp_path / "hosts").write_text("".join(f"h{i} ansible_connection=local ansible_python_interpreter={sys.executable}\n"
                                            for i in range(1, 6)))
    results, stats = tmp_path / "results.json", tmp_path / "stats.json"
    stats.unlink(missing_ok=True)
    env = dict(os.environ, ANSIBLE_CALLBACK_PLUGINS=RESULTS_CALLBACK, ANSIBLE_CALLBACKS_ENABLED="e2e_results",
               E2E_RESULTS_FILE=str(results), ANSIBLE_ACCEL_STATS=str(stats), ANSIBLE_NOCOLOR="1", ANSIBLE_FORKS="3", **extra_env)
    done = subprocess.run([os.path.join(BIN, "ansible-accel"), "ansible-playbook", "-i", str(tmp_path / "hosts"),
                           str(tmp_path / "play.yml")], env=env, capture_output=True, text=True, timeout=600)
    report = json.loads(results.read_text())
    for tasks in report["hosts"].values():
        for task in tasks:
            for key in _VOLATILE:
                task["result"].pop(key, None)
    # the printed lines without the timings ansible-core prints nowhere by default
    return report, done.stdout, json.loads(stats.read_text()) | {"returncode": done.returncode}


def _lines(output: str) -> tuple[list[str], list[str]]:
    """The printed lines, sorted: hosts report in the order they finish, which differs from run
    to run with or without the accelerator.  Of the free play, only the hosts' result lines:
    there task headers interleave with them as the hosts happen to progress."""
    linear, _, free = output.partition("PLAY [free play]")
    reports = ("ok: [", "changed: [", "skipping: [", "fatal: [", "failed: [")
    return sorted(linear.splitlines()), sorted(line for line in free.splitlines() if line.startswith(reports))


def test_results_and_output_are_the_same_waiting_on_events(tmp_path):
    polled, polled_out, polled_stats = _run(tmp_path, ANSIBLE_ACCEL_CONTROLLER="0")
    waited, waited_out, stats = _run(tmp_path)
    assert polled_stats["controller"]["active"] is False
    assert (waited, stats["returncode"]) == (polled, polled_stats["returncode"])
    assert _lines(waited_out) == _lines(polled_out)
    assert stats["returncode"] == 2  # h3 failed (within max_fail_percentage)
    controller = stats["run"]["paths"]["controller"]
    assert stats["controller"]["active"] is True and controller["native"] >= 2  # one per play's strategy
    assert controller["events"].get("woken by a result", 0) > 0


def test_a_result_wakes_the_waiting_loop_at_once():
    # The sleep the strategy calls returns when a result arrives, long before its longest wait.
    code = """
import collections, threading, time
import ansible_accel
ansible_accel.install()
from ansible_accel._integrations import controller
from ansible.plugins import strategy as strategy_module
class Strategy:
    _results = collections.deque()
    _workers = []
strategy = Strategy()
controller._adopt(strategy)
threading.Timer(0.02, strategy._results.append, args=("result",)).start()
started = time.monotonic()
strategy_module.time.sleep(10)
print(round(time.monotonic() - started, 3))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert float(done.stdout) < 1.0
