"""Tasks run with ``become`` in real ``ansible-playbook`` runs on the local connection, mixed
with tasks without it: the runner leaves every become task's modules to the ordinary way (a
fresh interpreter started by the become plugin, as another user's process), counted as runner
fallbacks with reason ``become``, and runs the others warm; every task result is the same as
plain ansible-core's, pipelining off and on.

Two become plugins do the switch: ansible-core's builtin ``su`` (root needs no password for it;
``-s /bin/sh`` because ``nobody``'s login shell refuses commands), which does not pipeline (its
modules arrive in files whatever ``ANSIBLE_PIPELINING`` says), and ``become_plugins/accel_runuser``
(util-linux's ``runuser``), whose modules arrive on standard input when pipelining is on.  The
tasks run as ``nobody`` use the system's Python, the one interpreter here that ``nobody`` may
run, and ``/var/tmp`` as their remote tmp (the module's own temporary files go there: nobody's
home does not exist, and a host's remote tmp is root's); ansible-core's own ``chown`` hands them
the module's files (the connection's user is root).

With ``ANSIBLE_ACCEL_MODULE_SIDE=target`` in the task environment, every module sees the value
as written, and the counts of those run as the controller's user, with become (to root, the
user running these tests) and without, reach the controller's stats (docs/module-side.md)."""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from _playbook_run import run_playbook  # noqa: E402
from test_playbook import _differences, _normalise, _runner_processes  # noqa: E402

BECOME = "become"
WARMING = {"too few modules yet to start a runner", "runner starting"}
SYSTEM_PYTHON = "/usr/bin/python3"
BECOME_PLUGINS = os.path.join(HERE, "become_plugins")
# The play's ``shape`` command tells how the module that runs it was started: the number of words
# of its command line (2: ``PYTHON SCRIPT``; 1: ``PYTHON``, the script on standard input), then 1
# when a runner forked it (``_runner_server.py``, or ``server.py`` on a host reached over SSH),
# else 0.
PLAY = f"""\
- hosts: all
  gather_facts: false
  become_method: METHOD
  vars:
    ansible_become_flags: "-s /bin/sh"
    d: "{{{{ work }}}}/{{{{ inventory_hostname }}}}"
    shape: |
      echo $(tr '\\0' '\\n' < /proc/$PPID/cmdline | wc -l) $(grep -ac server.py /proc/$(cut -d ' ' -f 4 /proc/$PPID/stat)/cmdline)
  tasks:
    - file: {{path: "{{{{ d }}}}", state: directory, mode: "0755"}}
    - ping: {{data: "{{{{ item }}}}"}}
      become: "{{{{ item }}}}"
      loop: [false, true]
    - command: id -un
      become: true
    - copy: {{content: "root only\\n", dest: "{{{{ d }}}}/root-only", mode: "0600"}}
      become: true
    - shell: "{{{{ shape }}}}"
      become: true
      become_user: root
    - command: id -un
    - become: true
      become_user: nobody
      vars:
        ansible_python_interpreter: {SYSTEM_PYTHON}
        ansible_remote_tmp: /var/tmp
      block:
        - command: id -un
        - stat: {{path: "{{{{ d }}}}/root-only"}}
        - copy: {{content: "by nobody\\n", dest: "{{{{ d }}}}/nobody-cannot"}}
          ignore_errors: true
        - shell: "{{{{ shape }}}}"
    - stat: {{path: "{{{{ d }}}}/root-only"}}
    - copy: {{content: "by root\\n", dest: "{{{{ d }}}}/plain"}}
    - file: {{path: "{{{{ d }}}}", state: absent}}
"""
HOSTS = ["b1", "b2"]
# Module runs per host (``copy`` of new content runs ``stat``, then ``copy``; the loop's items run
# on one connection, with become and without): with become, 5 as root and 5 as nobody; without
# it, 7.
BECOME_RUNS, OTHER_RUNS = 5 + 5, 7


@pytest.fixture
def work():
    """A directory ``nobody`` can enter but not write to (pytest's own are 0700)."""
    path = tempfile.mkdtemp(prefix="accel-become-", dir="/tmp")
    os.chmod(path, 0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _run(tmp_path, work: str, accel: bool, pipelining: bool, play: str = PLAY, method: str = "su",
         **env: str) -> tuple[dict, dict | None]:
    _, results, stats = run_playbook(tmp_path, play.replace("METHOD", method), HOSTS, accel,
                                     {"ANSIBLE_PIPELINING": str(pipelining), "ANSIBLE_FORKS": str(len(HOSTS)),
                                      "ANSIBLE_BECOME_PLUGINS": BECOME_PLUGINS, **env},
                                     ("-e", f"work={work}"))
    return _normalise(results), stats


def _results(report: dict, host: str, action: str, status: str | None = None) -> list[dict]:
    return [t["result"] for t in report["hosts"][host] if t["action"] == action and status in (None, t["status"])]


@pytest.mark.parametrize(("pipelining", "method"), [(False, "su"), (True, "accel_runuser")],
                         ids=["files-su", "pipelining-runuser"])
def test_become_tasks_go_the_ordinary_way_with_the_same_results(tmp_path, work, pipelining, method):
    plain, _ = _run(tmp_path, work, accel=False, pipelining=pipelining, method=method)
    warm, stats = _run(tmp_path, work, accel=True, pipelining=pipelining, method=method)
    assert warm == plain, "\n".join(_differences(plain, warm)[:20])

    # The become plugin switched users, and each become task's module ran in an interpreter of
    # its own, started as the plugin's pipelining allows.
    words = "1" if pipelining and method != "su" else "2"
    for host in HOSTS:
        assert [r["stdout"] for r in _results(warm, host, "command")] == ["root", "root", "nobody"]
        assert [r["stdout"] for r in _results(warm, host, "shell")] == [f"{words} 0"] * 2
        denied = _results(warm, host, "copy", "failed (ignored)")
        assert [r["msg"] for r in denied] == [f"Destination {work}/{host} not writable"], denied
        seen = _results(warm, host, "stat")[0]["stat"]  # root-only, by nobody
        assert seen["exists"] and not seen["readable"], seen

    runner = stats["run"]["paths"]["runner"]
    print(f"\nrunner: {json.dumps(runner, sort_keys=True)}")
    fallback = dict(runner["fallback"])
    assert fallback.pop(BECOME, 0) == BECOME_RUNS * len(HOSTS), runner
    # Every other module run went to a runner, but the first ones while it started.
    assert set(fallback) <= WARMING, runner
    assert runner["native"] + sum(fallback.values()) == OTHER_RUNS * len(HOSTS), runner
    assert runner["native"] > 0, runner
    deadline = time.monotonic() + 10
    while _runner_processes(str(tmp_path)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _runner_processes(str(tmp_path)) == []


TARGET_PLAY = """\
- hosts: all
  gather_facts: false
  become_method: su
  environment:
    ANSIBLE_ACCEL_MODULE_SIDE: target
  tasks:
    - ping: {data: "{{ item }}"}
      loop: [1, 2, 3]
    - ping: {data: two}
      become: true
    - stat: {path: /}
    - command: printenv ANSIBLE_ACCEL_MODULE_SIDE
    - command: printenv ANSIBLE_ACCEL_MODULE_SIDE
      become: true
"""


def test_module_side_counts_of_modules_run_as_the_controllers_user_with_become_too(tmp_path, work):
    """``ANSIBLE_ACCEL_MODULE_SIDE=target`` in the task environment: every module sees
    ``target``, with become and without, as under plain ansible-core; each module run reports
    one module-side line, from its runner or, for those with become and the first ones while the
    runner starts, from its fresh interpreter, which finds the controller's counts file as the
    controller's own user (root, with become to root)."""
    plain, _ = _run(tmp_path, work, accel=False, pipelining=True, play=TARGET_PLAY)
    on, stats = _run(tmp_path, work, accel=True, pipelining=True, play=TARGET_PLAY)
    assert on == plain, "\n".join(_differences(plain, on)[:20])
    assert all([r["stdout"] for r in _results(on, host, "command")] == ["target"] * 2 for host in HOSTS), on
    side, runner = stats["module_side"], stats["run"]["paths"]["runner"]
    print(f"\nmodule side: {json.dumps(side, sort_keys=True)}\nrunner: {json.dumps(runner, sort_keys=True)}")
    with_become, without_become = 2 * len(HOSTS), 5 * len(HOSTS)
    fallback = dict(runner["fallback"])
    assert fallback.pop(BECOME, 0) == with_become and set(fallback) <= WARMING, runner
    assert runner["native"] + sum(fallback.values()) == without_become, runner
    assert side["modules"] == with_become + without_become, side
    assert side["argspec"]["native"] == side["modules"] and side["fallback"] == {}, side
    # the runs that went the ordinary way (with become, and while the runner started: the first
    # two at least) found the controller's counts file
    assert side["target_modules"] == with_become + sum(fallback.values()) >= with_become + 2, (side, runner)
