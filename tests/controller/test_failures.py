"""Failure behaviour with the ``controller`` and ``workers`` paths on, against both off, in real
``ansible-playbook`` runs: a worker that dies mid-task (killed, or exiting without a result) in
the linear strategy (the run ends at once) and the free strategy (ansible-core's free loop waits
for the dead worker's host until interrupted), and Ctrl-C mid-run.  The same exit status, the same callbacks
in the same order, the same printed lines and errors, and no process left behind."""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _controller_support as _support  # noqa: E402
from _controller_support import run  # noqa: E402

HOSTS = ["d1", "d2", "d3"]
DYING = """\
- name: {strategy} play
  hosts: all
  gather_facts: false
  strategy: {strategy}
  tasks:
    - command: "sleep 0.{{{{ inventory_hostname[-1] }}}}"
      changed_when: false
    - accel_die: {{host: d2, after: 0.3, how: {how}}}
    - debug: {{msg: "after {{{{ inventory_hostname }}}}"}}
"""
INTERRUPTED = """\
- name: interrupted play
  hosts: all
  gather_facts: false
  tasks:
    - debug: {msg: "before"}
    - name: slow
      command: sleep 60
    - debug: {msg: "never"}
"""


def _errors(stderr: str) -> list[str]:
    return sorted(line for line in stderr.splitlines() if "ERROR" in line or "interrupted" in line)


def _same(on, off, free: tuple[str, ...] = ()) -> None:
    assert on.returncode == off.returncode
    assert _support.canonical_events(on.events, free) == _support.canonical_events(off.events, free)
    assert _support.printed(on.stdout, free) == _support.printed(off.stdout, free)
    assert _errors(on.stderr) == _errors(off.stderr)
    assert (on.left, off.left) == ([], [])
    assert on.stats["controller"]["active"] is True and on.stats["workers"]["active"] is True
    assert off.stats["controller"]["active"] is False and off.stats["workers"]["active"] is False


def _finished(run_) -> set:
    return {(e[1][0]["host"], e[1][0]["task"]) for e in run_.events if e[0] == "v2_runner_on_ok"}


def test_a_worker_killed_mid_task_linear(tmp_path):
    play = DYING.format(strategy="linear", how="kill")
    off = run(tmp_path, play, HOSTS, off=True)
    on = run(tmp_path, play, HOSTS, off=False)
    _same(on, off)
    assert on.returncode == 1 and "A worker was found in a dead state" in on.stderr
    assert "v2_playbook_on_stats" not in [event[0] for event in on.events]  # the run ends at the dead worker
    # the other hosts' results of the dying task came in before it died; d2's never did
    assert {("d1", "accel_die"), ("d3", "accel_die")} <= _finished(on) and ("d2", "accel_die") not in _finished(on)
    assert ("d1", "debug") not in _finished(on)


def test_a_worker_that_exits_without_a_result_free(tmp_path):
    play = DYING.format(strategy="free", how="exit")
    # the other hosts finish; the free loop then waits on d2 for good: Ctrl-C ends it
    ends = ("after d1", "after d3")
    off = run(tmp_path, play, HOSTS, off=True, interrupt_when=ends, interrupt_after=1.5)
    on = run(tmp_path, play, HOSTS, off=False, interrupt_when=ends, interrupt_after=1.5)
    _same(on, off, ("free play",))
    assert on.returncode == 99 and "User interrupted execution" in on.stderr
    assert {("d1", "debug"), ("d3", "debug")} <= _finished(on)
    assert {task for host, task in _finished(on) if host == "d2"} == {"command"}


def test_ctrl_c_mid_task(tmp_path):
    # Ctrl-C while every host's module runs its command
    running = ("sleep 60", len(HOSTS))
    off = run(tmp_path, INTERRUPTED, HOSTS, off=True, interrupt_when=("TASK [slow]",), interrupt_after=0.2,
              interrupt_running=running)
    on = run(tmp_path, INTERRUPTED, HOSTS, off=False, interrupt_when=("TASK [slow]",), interrupt_after=0.2,
             interrupt_running=running)
    _same(on, off)
    assert on.returncode == 99 and "User interrupted execution" in on.stderr
    assert "never" not in on.stdout
    assert [e[0] for e in on.events].count("v2_runner_on_start") == 6  # 3 hosts x (debug, slow)
