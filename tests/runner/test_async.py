"""``async`` tasks with the runner: ``async_wrapper`` starts in a fork of the warm runner and
detaches there as it does from a fresh interpreter; the results, the job files and the
time limit's kill are ansible-core's."""

from __future__ import annotations

import os
import signal
import sys

from test_playbook import _differences, _normalise

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from _playbook_run import run_playbook  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ASYNC = "async (async_wrapper starts the module)"
# a sleep only this test run's time-limited task runs: the three interpreters' runs go at once,
# and each ends only its own leftovers
MARK = f"29.{os.getpid():07d}"
PLAY = f"""\
- hosts: all
  gather_facts: false
  tasks:
    - ping:
    - ping:
    - ping:
    - command: sleep 0.2
      async: 10
      poll: 1
    - command: sleep 0.3
      async: 20
      poll: 0
      register: job
    - async_status: {{jid: "{{{{ job.ansible_job_id }}}}"}}
      register: st
      until: st.finished
      retries: 60
      delay: 0.5
    - shell: echo out; echo err >&2; exit 3
      async: 10
      poll: 1
      ignore_errors: true
    - shell: exec sleep {MARK}
      async: 2
      poll: 0
      register: slow
    - command: sleep 6
    - async_status: {{jid: "{{{{ slow.ansible_job_id }}}}"}}
      register: killed
      ignore_errors: true
"""


def _run(tmp_path, accel: bool):
    tmp_path.mkdir()
    _, results, stats = run_playbook(tmp_path, PLAY, ["a0", "a1"], accel,
                                     {"ANSIBLE_ASYNC_DIR": str(tmp_path / "jobs"), "ANSIBLE_FORKS": "2"})
    report = _normalise(results)
    for tasks in report["hosts"].values():
        for task in tasks:
            # the killed job's supervisor pid and the time it was killed are its own; how many
            # polls a job took depends on how long each poll took
            for key in ("child_pid", "stop", "attempts"):
                task["result"].pop(key, None)
    return report, stats


def _sleeping() -> list[int]:
    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as handle:
                    if MARK.encode() in handle.read():
                        found.append(int(pid))
            except OSError:
                continue
    return found


def _end_the_sleepers() -> None:
    """async_wrapper's supervisor kills the job's process group at the time limit, but the module
    it starts may be forked before the supervisor moves the job into that group: then the module
    outlives the kill.  That is ansible-core's own race (lost in plain runs too), not the
    runner's; the test ends what it leaves."""
    for pid in _sleeping():
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def test_async_tasks_give_ansible_cores_results_through_the_runner(tmp_path):
    try:
        plain, _ = _run(tmp_path / "off", accel=False)
        warm, stats = _run(tmp_path / "on", accel=True)
    finally:
        _end_the_sleepers()
    assert warm == plain, "\n".join(_differences(plain, warm)[:20])
    killed = [tasks[-1] for tasks in warm["hosts"].values()]
    assert all(t["result"].get("msg") == "Timeout exceeded" and t["status"] == "failed (ignored)" for t in killed), killed
    runner = stats["run"]["paths"]["runner"]
    assert ASYNC not in runner["fallback"], runner
    # 2 hosts x (3 pings, 4 async starts, 2 async_status polls at least), less the first modules
    # that go the ordinary way while the runner starts
    assert runner["native"] >= 2 * 9 - 4, runner
    assert not [r for r in runner["fallback"] if r.startswith("after hand-over")], runner
