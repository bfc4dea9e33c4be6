"""The remote runner (on by default) in real ``ansible-playbook`` runs over
the test bed's sshd: the same task results as plain ansible-core, pipelining off and on, on hosts
with Python 3.11, 3.12 and 3.13, and on hosts with the older interpreters the ansible-core under
test supports (3.8 on 2.19, 3.9, 3.10); modules counted as run by the hosts' runners; and
nothing of the runners left on the hosts once the run has ended."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time

import pytest
from _older import TOO_OLD, older_interpreters
from test_playbook_ssh import _cmd, _differences, run_playbook

# The accelerator as it comes: the remote runner is on unless switched off.
REMOTE: dict[str, str] = {}


def python_processes(sshd) -> list[str]:
    return [_cmd(p) for p in sshd.host_processes() if "python" in _cmd(p)]


def wait_no_python(sshd, seconds: float = 60) -> list[str]:
    """The hosts' Python processes still there after ``seconds`` (the runners end once their
    channel has ended, shortly after the controller)."""
    deadline = time.monotonic() + seconds
    while (left := python_processes(sshd)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


@pytest.mark.parametrize(("pipelining", "client"), [(False, "native"), (True, "python")],
                         ids=["files", "pipelining-python-client"])
def test_results_are_the_same_with_the_remote_runner(sshd, host_interpreters, tmp_path, remote_tmp, pipelining,
                                                     client):
    _same_with_the_remote_runner(sshd, host_interpreters, tmp_path, remote_tmp, pipelining, client)


def test_results_are_the_same_with_the_remote_runner_on_every_ansible_core(sshd, host_interpreters, tmp_path,
                                                                           remote_tmp):
    """With pipelining and the native client, from each environment: ansible-core 2.19, 2.21 and
    2.22 as controllers."""
    _same_with_the_remote_runner(sshd, host_interpreters, tmp_path, remote_tmp, True, "native")


test_results_are_the_same_with_the_remote_runner_on_every_ansible_core.controller = "all"


def _same_with_the_remote_runner(sshd, host_interpreters, tmp_path, remote_tmp, pipelining, client):
    plain, _, plain_out = run_playbook(sshd, host_interpreters, tmp_path, accel=False, pipelining=pipelining,
                                       remote_tmp=remote_tmp)
    env = dict(REMOTE, **({"ANSIBLE_ACCEL_REMOTE_CLIENT": "python"} if client == "python" else {}))
    fast, stats, fast_out = run_playbook(sshd, host_interpreters, tmp_path, accel=True, pipelining=pipelining,
                                         extra_env=env, remote_tmp=remote_tmp)
    assert fast == plain, "\n".join(_differences(plain, fast)[:20])
    assert "s3cr3t-value" not in json.dumps(fast) + fast_out
    remote = stats["run"]["paths"]["remote_runner"]
    print(f"\nremote runner: {json.dumps(remote, sort_keys=True)}")
    assert stats["remote_runner"]["active"], stats["remote_runner"]
    # Each of the three hosts (3.11, 3.12, 3.13) starts a runner at its first module, then runs
    # the rest of its modules through it, each through the client asked for.
    assert remote["native"] > 0, remote
    other = "python" if client == "native" else "native"
    assert remote["events"][f"{client} client"] == remote["native"] and f"{other} client" not in remote["events"], remote
    # The hosts' interpreters have no ansible-accel: each module run in a runner says why it ran
    # without the module-side paths, and the stats file has every one of them.
    side = stats["module_side"]
    assert side["remote_modules"] == remote["native"] and side["argspec"]["native"] == 0, side
    assert sum(side["fallback"].values()) == remote["native"] and all("ansible-accel not importable" in r for r in side["fallback"]), side
    assert not [r for r in remote["fallback"] if r.startswith(("after hand-over", "runner could not start"))], remote
    assert plain_out.count("ok=") == fast_out.count("ok=")
    assert wait_no_python(sshd) == []


SMALL_PLAY = """
- hosts: ssh
  gather_facts: false
  tasks:
    - ansible.builtin.ping:
    - ansible.builtin.stat:
        path: /etc/hostname
"""


@pytest.mark.parametrize("how", ["variable", "callback"])
def test_switched_off_the_hosts_run_modules_the_ordinary_way(sshd, host_interpreters, tmp_path, remote_tmp, how):
    """``ANSIBLE_ACCEL_REMOTE_RUNNER=0``, or ``remote_runner = false`` for the accelerator's
    callback plugin: no runner is started and every module runs the ordinary way, uncounted."""
    env, settings = ({"ANSIBLE_ACCEL_REMOTE_RUNNER": "0"}, None) if how == "variable" else (
        {}, "[callback_ansible_accel]\nremote_runner = false\n")
    plain, _, _ = run_playbook(sshd, host_interpreters, tmp_path, accel=False, pipelining=True, play_text=SMALL_PLAY,
                               remote_tmp=remote_tmp)
    fast, stats, _ = run_playbook(sshd, host_interpreters, tmp_path, accel=True, pipelining=True, play_text=SMALL_PLAY,
                                  remote_tmp=remote_tmp, extra_env=env, callback_settings=settings)
    assert fast == plain, "\n".join(_differences(plain, fast)[:20])
    reason = ("switched off by ANSIBLE_ACCEL_REMOTE_RUNNER=0" if how == "variable"
              else "switched off by the callback's remote_runner option")
    assert stats["remote_runner"] == {"active": False, "reason": reason, "native": 0, "fallback": {}}, stats["remote_runner"]
    assert stats["run"]["paths"]["finder"]["native"] > 0, stats["run"]["paths"]  # the accelerator was on
    assert not any(name.startswith("ansible-accel-") for name in os.listdir(remote_tmp)), os.listdir(remote_tmp)
    assert python_processes(sshd) == []


def test_results_are_the_same_on_hosts_with_older_interpreters(sshd, tmp_path, remote_tmp):
    """Three hosts on the interpreters before 3.11 that the ansible-core under test supports on
    targets (3.8, 3.9 and 3.10 on 2.19; 3.9, 3.10 and 3.9 again on 2.21 and 2.22), ansible-core's
    defaults (no pipelining): the same results as plain ansible-core, every host's modules run by
    its runner."""
    interpreters = older_interpreters()
    assert len(interpreters) >= 2, interpreters
    plain, _, plain_out = run_playbook(sshd, interpreters, tmp_path, accel=False, pipelining=False,
                                       remote_tmp=remote_tmp)
    fast, stats, fast_out = run_playbook(sshd, interpreters, tmp_path, accel=True, pipelining=False,
                                         extra_env=REMOTE, remote_tmp=remote_tmp)
    assert fast == plain, "\n".join(_differences(plain, fast)[:20])
    for index, name in enumerate(sorted(fast["hosts"])):  # each host ran its modules on its interpreter
        facts = next(t["result"]["ansible_facts"] for t in fast["hosts"][name] if t["action"] in ("setup", "ansible.builtin.setup"))
        assert facts["ansible_python"]["executable"] == interpreters[index % len(interpreters)], (name, facts["ansible_python"])
    remote = stats["run"]["paths"]["remote_runner"]
    print(f"\nolder interpreters: {json.dumps(remote, sort_keys=True)}")
    # Each host's first module starts its runner and waits for it (or goes the ordinary way if
    # it is not ready within the wait: ``runner starting``); all the others run in it.
    waited = remote["events"].get("waited for the runner's start", 0)
    assert set(remote["fallback"]) <= {"runner starting"}, remote
    assert waited + remote["fallback"].get("runner starting", 0) == 3, remote
    assert remote["native"] > 0 and remote["events"]["native client"] == remote["native"], remote
    # With ansible-core's defaults each module's chmod runs in its command (ssh_steps), and once
    # a host's runner is ready its keeper takes the other steps (ssh_keeper_steps), on each of
    # those interpreters: only each host's first task's mkdtemp and transfer are SSH commands.
    assert remote["events"]["steps: chmod in the module's command"] == remote["native"], remote
    assert remote["events"]["keeper apart: no keeper on the host yet"] == 3 * 2, remote
    assert remote["events"]["keeper: mkdtemp"] > 3 and remote["events"]["keeper: the directory removed"] > 3, remote
    # Every module ran through its host's keeper (no SSH command of its own), and each script
    # the keeper wrote was rebuilt from its zip's parts, but the first of each host.
    assert remote["events"]["keeper: a module run (no SSH command)"] == remote["native"], remote
    assert remote["events"]["keeper: a module's script written from its zip's parts"] == remote["native"] - 3, remote
    assert set(remote["events"]) <= {"native client", "waited for the runner's start",
                                     "steps: chmod in the module's command", "keeper: mkdtemp",
                                     "keeper: a file transferred", "keeper: the directory removed",
                                     "keeper apart: no keeper on the host yet", "keeper: forward made",
                                     "keeper: a module run (no SSH command)",
                                     "keeper: a module's script written from its zip's parts"}, remote
    assert plain_out.count("ok=") == fast_out.count("ok=")
    assert wait_no_python(sshd) == []


# Made from 2.19's environment (Python 3.11), whose hosts can be on 3.8, 3.9 and 3.10 at once.
test_results_are_the_same_on_hosts_with_older_interpreters.controller = (3, 11)

SMALL_PLAY = """\
- hosts: all
  gather_facts: false
  tasks:
    - ping: {data: one}
    - command: echo two
    - stat: {path: /}
    - ping: {data: four}
"""


@pytest.mark.parametrize("case", ["interpreter 3.7", "remote tmp not a directory"])
def test_hosts_where_the_runner_cannot_start(sshd, host_interpreters, tmp_path, remote_tmp, case):
    """A host whose interpreter the runner does not run on, or whose remote tmp cannot be made
    (a file in its way; with pipelining modules need none): its modules go the ordinary way with
    the same results, counted, and ``-v`` says why once per host."""
    if case == "interpreter 3.7":
        if not os.path.exists(TOO_OLD):
            pytest.fail(f"{TOO_OLD} is missing: this machine's test bed has it")
        interpreters, where, wanted = [TOO_OLD], remote_tmp, "interpreter 3.7 is older than the runner supports (3.8)"
        # ansible-core's modules fail there too (it needs 3.8 or 3.9 on targets): the same failures
        play = SMALL_PLAY.replace("    - ", "    - ignore_errors: true\n      ")
    else:
        blocker = os.path.join(remote_tmp, "file")
        with open(blocker, "w") as handle:
            handle.write("in the way\n")
        interpreters, where, wanted = host_interpreters, os.path.join(blocker, "tmp"), "the remote tmp is not usable"
        play = SMALL_PLAY
    runs = [run_playbook(sshd, interpreters, tmp_path, accel=accel, pipelining=True, play_text=play,
                         remote_tmp=where, verbose=True, extra_env=REMOTE if accel else None) for accel in (False, True)]
    (plain, _, _), (fast, stats, out) = runs
    assert fast == plain, "\n".join(_differences(plain, fast)[:20])
    remote = stats["run"]["paths"]["remote_runner"]
    print(f"\n{case}: {json.dumps(remote, sort_keys=True)}")
    assert remote["native"] == 0, remote
    assert sum(n for r, n in remote["fallback"].items() if r.startswith("runner could not start on the host: ")
               and wanted in r) == 3 * 4, remote
    said = [line for line in out.splitlines() if "no remote runner on" in line]
    assert len(said) == 3 and all(wanted in line for line in said), said
    assert wait_no_python(sshd) == []


def test_module_side_counts_come_back_from_hosts_that_have_the_package(sshd, tmp_path, remote_tmp):
    """Hosts whose interpreter is this environment's (ansible-accel installed, the same build):
    the modules their runners run validate arguments natively, the same results as plain
    ansible-core, and each run's module-side counts reach the controller's stats file."""
    runs = [run_playbook(sshd, [sys.executable], tmp_path, accel=accel, pipelining=True, play_text=SMALL_PLAY,
                         remote_tmp=remote_tmp, extra_env=REMOTE if accel else None) for accel in (False, True)]
    (plain, _, _), (fast, stats, _) = runs
    assert fast == plain, "\n".join(_differences(plain, fast)[:20])
    remote, side = stats["run"]["paths"]["remote_runner"], stats["module_side"]
    print(f"\nmodule side on the hosts: {json.dumps(side, sort_keys=True)}")
    assert remote["native"] == 12 and remote["fallback"] == {}, remote  # 3 hosts x 4 modules, all warm
    assert side["remote_modules"] == side["modules"] == 12 and side["fallback"] == {}, side
    assert side["argspec"]["native"] >= 12, side  # each module validates its arguments at least once
    assert wait_no_python(sshd) == []


ASYNC_PLAY = """\
- hosts: all
  gather_facts: false
  tasks:
    - ping:
    - command: sleep 0.2
      async: 10
      poll: 1
    - shell: echo out; echo err >&2; exit 3
      async: 10
      poll: 1
      ignore_errors: true
    - command: sleep 0.3
      async: 20
      poll: 0
      register: job
    - command: sleep 2  # the job has ended by the first look at it, in both runs
    - async_status: {jid: "{{ job.ansible_job_id }}"}
      register: done
      until: done.finished
      retries: 60
      delay: 0.5
"""
_JOB_KEYS = ("ansible_job_id", "results_file", "jid")  # the job's id and file: its own in every run


def _without_jobs(value):
    if isinstance(value, dict):
        return {k: "X" if k in _JOB_KEYS else _without_jobs(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_without_jobs(v) for v in value]
    return value


def test_async_tasks_start_in_the_runner(sshd, host_interpreters, tmp_path, remote_tmp):
    """An ``async`` task's start (``async_wrapper.py``, which starts the module) runs in the
    host's runner, with and without polling: the same results as plain ansible-core (but the
    job's own id), no async start counted as a fallback."""
    runs = [run_playbook(sshd, host_interpreters, tmp_path, accel=accel, pipelining=False, play_text=ASYNC_PLAY,
                         remote_tmp=remote_tmp, extra_env=REMOTE if accel else None) for accel in (False, True)]
    (plain, _, _), (fast, stats, _) = runs
    plain, fast = _without_jobs(plain), _without_jobs(fast)
    assert fast == plain, "\n".join(_differences(plain, fast)[:20])
    remote = stats["run"]["paths"]["remote_runner"]
    print(f"\nasync: {json.dumps(remote, sort_keys=True)}")
    assert not any("async" in reason for reason in remote["fallback"]), remote
    assert remote["fallback"] == {} and remote["native"] >= 3 * 7, remote  # ping, 3 async starts, sleep, the polls
    assert wait_no_python(sshd) == []


def test_a_remote_tmp_that_does_not_execute_files_keeps_the_python_client(sshd, host_interpreters, tmp_path):
    """A remote tmp mounted ``noexec``: the native client shipped with the runner cannot run
    there, so the installer drops it and the host's modules go through the Python client, with
    the same results."""
    where = tempfile.mkdtemp(prefix="nx", dir="/tmp")
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "noexec,mode=0700,size=64m", "tmpfs", where],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        os.rmdir(where)
        pytest.skip(f"cannot mount a noexec tmpfs here: {mounted.stderr.strip()}")
    try:
        runs = [run_playbook(sshd, host_interpreters, tmp_path, accel=accel, pipelining=True, play_text=SMALL_PLAY,
                             remote_tmp=where, extra_env=REMOTE if accel else None) for accel in (False, True)]
        (plain, _, _), (fast, stats, _) = runs
        assert fast == plain, "\n".join(_differences(plain, fast)[:20])
        remote = stats["run"]["paths"]["remote_runner"]
        print(f"\nnoexec remote tmp: {json.dumps(remote, sort_keys=True)}")
        assert remote["native"] > 0 and remote["events"]["python client"] == remote["native"], remote
        assert "native client" not in remote["events"], remote
        assert wait_no_python(sshd) == []
    finally:
        subprocess.run(["umount", "-l", where], check=False)
        os.rmdir(where)


def test_aliases_of_one_machine_have_runners_of_their_own(sshd, host_interpreters, tmp_path, remote_tmp):
    """Three host aliases of this machine with the same interpreter, user and remote tmp: each
    has its own runner in its own directory (one alias's start never takes another's)."""
    where = "p=$(awk '{print $4}' /proc/$PPID/stat); echo $p; tr '\\0' ' ' < /proc/$p/cmdline"
    play = SMALL_PLAY + "    - command: sleep 3\n" + f"    - shell: {json.dumps(where)}\n"
    runs = [run_playbook(sshd, host_interpreters[:1], tmp_path, accel=accel, pipelining=True, play_text=play,
                         remote_tmp=remote_tmp, extra_env=REMOTE if accel else None) for accel in (False, True)]
    (plain, _, _), (fast, stats, _) = runs
    remote = stats["run"]["paths"]["remote_runner"]
    print(f"\none interpreter: {json.dumps(remote, sort_keys=True)}")
    assert not [r for r in remote["fallback"] if "could not start" in r or r.startswith("after hand-over")], remote
    parents = {name: tasks[-1]["result"]["stdout"].split("\n", 1) for name, tasks in fast["hosts"].items()}
    assert all("server.py" in cmdline for _, cmdline in parents.values()), parents
    assert len({pid for pid, _ in parents.values()}) == 3 and len({c.split()[1] for _, c in parents.values()}) == 3, parents
    for tasks in (*plain["hosts"].values(), *fast["hosts"].values()):  # the runner's pid differs by nature
        tasks[-1]["result"]["stdout"] = tasks[-1]["result"]["stdout_lines"] = "X"
    assert fast == plain, "\n".join(_differences(plain, fast)[:20])
    assert wait_no_python(sshd) == []
