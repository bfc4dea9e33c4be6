"""Pipelined modules that reach the host's runner through its keeper, without an SSH command of
their own (``_integrations/ssh_direct.py``, the keeper's side in ``_runner_remote.py``), in real
``ansible-playbook`` runs over the test bed's sshd: what a module's process is given and how it
ends (a status, a signal, a large result) are as with plain ansible-core and as through its SSH
command; the runs are counted; a host whose commands' process states differ keeps the commands."""

from __future__ import annotations

import json
import os

import pytest

from test_playbook_ssh import _differences, run_playbook
from test_remote_runner import wait_no_python

HERE = os.path.dirname(os.path.abspath(__file__))
LIBRARY = os.path.join(HERE, "library")
DONE = "keeper: a module run (no SSH command)"

PLAY = """
- hosts: ssh
  gather_facts: false
  tasks:
    - accel_process_view:
    - accel_process_view: {end: status}
      ignore_errors: true
    - accel_process_view: {end: signal}
      ignore_errors: true
    - accel_process_view: {end: "{{ 'interrupt' if ansible_pipelining | bool or ansible_python_interpreter is not search('3[.]13') else 'status' }}"}
      ignore_errors: true
    - accel_process_view: {end: large}
      register: large
    - ansible.builtin.assert:
        that: large.blob | length == 3145728
    - accel_process_view:
      environment: {ACCEL_TASK_VAR: one}
    - accel_process_view:
      environment: {ACCEL_TASK_VAR: two, ACCEL_OTHER: "a b"}
"""


@pytest.mark.parametrize("pipelining", [True, False], ids=["pipelining", "terminal"])
def test_modules_through_the_keeper_see_and_end_as_through_their_command(sshd, host_interpreters, tmp_path, remote_tmp,
                                                                         pipelining):
    """Pipelined (the script on the module's standard input, pipes), and without pipelining (the
    script written to the host, the module's command with a terminal, ``-tt``)."""
    env = {"ANSIBLE_LIBRARY": LIBRARY}
    runs = {}
    for name, accel, extra in (("plain", False, {}), ("command", True, {"ANSIBLE_ACCEL_REMOTE_DIRECT": "0"}),
                               ("keeper", True, {})):
        runs[name] = run_playbook(sshd, host_interpreters, tmp_path, accel=accel, pipelining=pipelining, play_text=PLAY,
                                  remote_tmp=remote_tmp, extra_env=dict(env, **extra))
        assert wait_no_python(sshd) == []
    plain = runs["plain"][0]
    for name in ("command", "keeper"):
        assert runs[name][0] == plain, (name, "\n".join(_differences(plain, runs[name][0])[:20]))
    hosts = plain["hosts"]
    # On a terminal, what the module and the shell print is standard output, and the ssh
    # client's closing line standard error.
    stream = "module_stderr" if pipelining else "module_stdout"
    ended = {t["result"]["rc"]: t["result"][stream] for h in hosts.values() for t in h
             if t["status"] == "failed (ignored)"}
    # Known difference, not of this path: on a terminal, Python 3.13 colours an uncaught
    # exception's traceback in a fresh interpreter and not in a runner's child (through the
    # client as through the keeper); the 3.13 host's interrupt is left out there.
    assert sorted(ended) == [3, 130, 143], ended
    end = "\n" if pipelining else "\r\n"
    assert ended[3] == "ending with status 3" + end and ended[143].endswith("Terminated" + end), ended
    assert ended[130].endswith("KeyboardInterrupt" + end), ended
    views = [t["result"] for h in hosts.values() for t in h if "streams" in t["result"]]
    assert len(views) == 3 * 3, views
    assert all(v["streams"]["0"]["fifo"] == pipelining and v["streams"]["1"]["tty"] != pipelining for v in views), views
    remote = runs["keeper"][1]["run"]["paths"]["remote_runner"]
    print(f"\nremote runner: {json.dumps(remote, sort_keys=True)}")
    # Every module of the three hosts went through the keeper, three shapes of command each
    # (no environment, and the two environments), their process states taken twice each.
    assert remote["events"].get(DONE) == remote["native"] == 7 * 3, remote
    assert not [e for e in remote["events"] if e.startswith("direct apart")], remote
    assert not remote["fallback"], remote
    command = runs["command"][1]["run"]["paths"]["remote_runner"]
    assert DONE not in command["events"] and command["native"] == 7 * 3, command


# From each environment: 2.19 ends its modules' commands with ``&& sleep 0``, 2.21 and 2.22 do not.
test_modules_through_the_keeper_see_and_end_as_through_their_command.controller = "all"
