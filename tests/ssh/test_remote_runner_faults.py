"""Faults around the remote runner, in real ``ansible-playbook`` runs over the test bed's sshd:
the runner killed between tasks, its directory removed between tasks, the controller killed,
two controllers against the same host at once, the SSH connection dropped while a module runs.
Each task's result stays the ordinary one; the fault is counted; nothing is left on the host.

Where a module ran is read by the module's own command: the parent of the module's process is
the runner (``server.py``) when it ran warm, the shell of the SSH command when it ran the
ordinary way."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import signal
import subprocess
import time

import pytest
from test_playbook_ssh import BIN, RESULTS_CALLBACK, _cmd, _differences, _normalise
from test_remote_runner import REMOTE, wait_no_python

# The module's parent: its pid, then its command line.
WHERE = "p=$(awk '{print $4}' /proc/$PPID/stat); echo $p; tr '\\0' ' ' < /proc/$p/cmdline"

WARM_UP = [
    {"ping": {"data": "first"}},
    {"command": "sleep 4"},  # a module that runs a while in the runner
    {"ping": {"data": "second"}},
    {"shell": WHERE, "register": "where"},
]
AGAIN = [
    {"ping": {"data": "after"}},
    {"command": "sleep 4"},
    {"shell": WHERE, "register": "where_after"},
]


def _play(*tasks: dict, hosts: str = "h01") -> str:
    """The playbook as JSON (which YAML reads as it is)."""
    return json.dumps([{"hosts": hosts, "gather_facts": False, "tasks": [*WARM_UP, *tasks]}], indent=1)


def _environment(tmp_path, extra=None) -> tuple[dict, str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    results, stats = str(tmp_path / "results.json"), str(tmp_path / "stats.json")
    env.update(ANSIBLE_CALLBACK_PLUGINS=RESULTS_CALLBACK, ANSIBLE_CALLBACKS_ENABLED="e2e_results",
               E2E_RESULTS_FILE=results, ANSIBLE_NOCOLOR="1", ANSIBLE_RETRY_FILES_ENABLED="False",
               ANSIBLE_ACCEL_STATS=stats, ANSIBLE_PIPELINING="True", **REMOTE, **(extra or {}))
    return env, results, stats


def _inventory(sshd, host_interpreters, tmp_path, remote_tmp, count=1) -> str:
    path = tmp_path / "hosts"
    path.write_text(sshd.inventory(sshd.aliases(count, host_interpreters), remote_tmp=remote_tmp))
    return str(path)


def _start(sshd, host_interpreters, tmp_path, remote_tmp, play: str, extra=None) -> tuple[subprocess.Popen, str, str]:
    tmp_path.mkdir(exist_ok=True)
    env, results, stats = _environment(tmp_path, extra)
    playbook = tmp_path / "play.yml"
    playbook.write_text(play)
    process = subprocess.Popen([os.path.join(BIN, "ansible-accel"), "ansible-playbook", "-v", "-i",
                                _inventory(sshd, host_interpreters, tmp_path, remote_tmp), str(playbook)],
                               env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               start_new_session=True)
    return process, results, stats


def _run(sshd, host_interpreters, tmp_path, remote_tmp, play: str, extra=None) -> tuple[dict, dict, str]:
    process, results, stats = _start(sshd, host_interpreters, tmp_path, remote_tmp, play, extra)
    out, _ = process.communicate(timeout=900)
    assert process.returncode == 0, out[-4000:]
    with open(results) as handle, open(stats) as counts:
        return json.load(handle), json.load(counts), out


def _tasks(report: dict, host="h01") -> list[dict]:
    return report["hosts"][host]


def _registered(tasks: list[dict], marker: str) -> tuple[int, str]:
    """(pid, command line) of the parent of the module that ran the ``WHERE`` task number ``marker``."""
    found = [t["result"] for t in tasks if t["action"] in ("shell", "ansible.builtin.shell") and t["result"].get("cmd") == WHERE]
    result = found[marker]
    pid, cmdline = result["stdout"].split("\n", 1)
    return int(pid), cmdline


def _pings(tasks: list[dict]) -> list[str]:
    return [t["result"]["ping"] for t in tasks if t["action"] in ("ping", "ansible.builtin.ping")]


def _remote(stats: dict) -> dict:
    return stats["run"]["paths"]["remote_runner"]


@pytest.mark.parametrize("fault", ["runner killed", "directory removed"])
def test_a_fault_between_tasks(sshd, host_interpreters, tmp_path, remote_tmp, fault):
    """The runner's process killed (SIGKILL), or its directory removed on the host, between two
    tasks: the next modules get their ordinary results, the fault is counted, and a new runner
    serves the modules after it."""
    runner = "{{ where.stdout_lines[0] }}"
    if fault == "runner killed":
        act = {"local_action": f"command kill -9 {runner}"}
    else:  # the directory of its server.py, the second word of its command line
        act = {"local_action": {"module": "shell",
                                "cmd": f"rm -rf \"$(dirname \"$(tr '\\0' '\\n' < /proc/{runner}/cmdline | sed -n 2p)\")\""}}
    report, stats, out = _run(sshd, host_interpreters, tmp_path, remote_tmp, _play(act, *AGAIN))
    tasks = _tasks(report)
    assert _pings(tasks) == ["first", "second", "after"], out[-3000:]
    before, before_cmd = _registered(tasks, 0)
    after, after_cmd = _registered(tasks, 1)
    assert "server.py" in before_cmd and remote_tmp in before_cmd, before_cmd
    assert "server.py" in after_cmd and after != before, (before_cmd, after_cmd)
    fallback = _remote(stats)["fallback"]
    expected = "the runner was killed (signal 9)" if fault == "runner killed" else "its directory was removed"
    # a fallback, or the event of a module that waited for the new runner
    counted = [r for r in (*fallback, *_remote(stats).get("events", {})) if expected in r or r.startswith("after hand-over")]
    print(f"\n{fault}: {json.dumps(_remote(stats), sort_keys=True)}")
    assert counted, fallback
    assert _remote(stats)["native"] >= 2, _remote(stats)
    assert wait_no_python(sshd) == []


def _runners(remote_tmp: str) -> list[int]:
    """The runners (and their keepers' host side) started under ``remote_tmp``, by pid."""
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit() and remote_tmp in (cmd := _cmd(int(name))) and ("server.py" in cmd or "remote.py" in cmd):
            found.append(int(name))
    return found


def test_the_controller_killed(sshd, host_interpreters, tmp_path, remote_tmp):
    """SIGKILL to ``ansible-playbook`` while a module runs in the runner: once its workers are
    gone too, the runner's channel ends and no process of it is left on the host."""
    play = _play({"command": "sleep 5"})
    process, _, _ = _start(sshd, host_interpreters, tmp_path, remote_tmp, play)
    try:
        deadline = time.monotonic() + 300
        # The last task runs: a `sleep 5` whose parent's parent is the runner.
        while not any("sleep 5" in _cmd(p) for p in sshd.host_processes()):
            assert process.poll() is None, process.stdout.read()[-3000:]
            assert time.monotonic() < deadline, "the last task did not start"
            time.sleep(0.05)
        assert [p for p in _runners(remote_tmp) if "server.py" in _cmd(p)], "no runner on the host"
        os.kill(process.pid, signal.SIGKILL)
        process.wait(30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        process.stdout.close()
    assert wait_no_python(sshd, 90) == []
    assert _runners(remote_tmp) == []
    left = [name for name in os.listdir(remote_tmp)]
    runs = [os.listdir(os.path.join(remote_tmp, n)) for n in left if n.startswith("ansible-accel-")]
    assert all(os.listdir(os.path.join(remote_tmp, n, r)) == [] for n in left if n.startswith("ansible-accel-")
               for r in os.listdir(os.path.join(remote_tmp, n))), runs


def test_two_controllers_at_once(sshd, host_interpreters, tmp_path, remote_tmp):
    """Two ``ansible-playbook`` runs against the same host and remote tmp at the same time: each
    has its own runner in its own directory, and both get their ordinary results."""
    play = _play()
    started = [_start(sshd, host_interpreters, tmp_path / name, remote_tmp, play) for name in ("one", "two")]
    views = []
    for process, results, stats in started:
        out, _ = process.communicate(timeout=900)
        assert process.returncode == 0, out[-4000:]
        with open(results) as handle, open(stats) as counts:
            report, counters = json.load(handle), json.load(counts)
        assert _pings(_tasks(report)) == ["first", "second"]
        views.append(_registered(_tasks(report), 0))
        assert _remote(counters)["native"] >= 1, _remote(counters)
    (one, one_cmd), (two, two_cmd) = views
    assert "server.py" in one_cmd and "server.py" in two_cmd, views
    assert one != two and one_cmd.split()[1] != two_cmd.split()[1], views
    assert wait_no_python(sshd) == []


def test_an_idle_runner_ends_and_a_busy_one_does_not(sshd, host_interpreters, tmp_path, remote_tmp):
    """With a 6 s idle time (longer than the warm-up's 4 s module): a module that runs 8 s in
    the runner keeps it (its result is its own, and the same runner serves the next module), a
    10 s pause between tasks ends it (counted), and the next modules start a new one."""
    idle = {"ANSIBLE_ACCEL_REMOTE_RUNNER_IDLE": "6"}
    busy = [{"command": "sleep 8"}, {"shell": WHERE}]
    again = [{"ping": {"data": "after"}}, *[{"ping": {"data": "busy"}}] * 8, {"shell": WHERE}]
    report, stats, out = _run(sshd, host_interpreters, tmp_path, remote_tmp,
                              _play(*busy, {"local_action": "command sleep 10"}, *again), idle)
    tasks = _tasks(report)
    assert _pings(tasks) == ["first", "second", "after", *["busy"] * 8], out[-3000:]
    sleeps = [t["result"]["rc"] for t in tasks if t["result"].get("cmd") == ["sleep", "8"]]
    assert sleeps == [0], sleeps
    (first, first_cmd), (busy_end, _), (after, after_cmd) = (_registered(tasks, n) for n in range(3))
    assert "server.py" in first_cmd and busy_end == first, (first_cmd, busy_end)
    assert "server.py" in after_cmd and after != first, (first_cmd, after_cmd)
    fallback = _remote(stats)["fallback"]
    print(f"\nidle: {json.dumps(_remote(stats), sort_keys=True)}")
    # the next module waits for the new runner (counted as an event), or goes the ordinary way
    # if it does not start in time (counted as a fallback): once either way
    again = _remote(stats).get("events", {}).get("runner ended (idle for 6 s), started again", 0)
    assert again + fallback.get("runner ended (idle for 6 s), starting again", 0) == 1, _remote(stats)
    assert wait_no_python(sshd) == []


def test_modules_the_runner_refuses_are_counted_after_hand_over(sshd, host_interpreters, tmp_path, remote_tmp):
    """Tracebacks asked for (ANSIBLE_DISPLAY_TRACEBACK): each module handed to the runner on the
    host runs the ordinary way after all (its child, having read the script, execs a fresh
    interpreter), once; the host reports each, and the controller counts it as a fallback, not
    as run by the runner."""
    report, stats, out = _run(sshd, host_interpreters, tmp_path, remote_tmp, _play(*AGAIN),
                              {"ANSIBLE_DISPLAY_TRACEBACK": "error"})
    tasks = _tasks(report)
    assert _pings(tasks) == ["first", "second", "after"], out[-3000:]
    remote = _remote(stats)
    print(f"\nrefused: {json.dumps(remote, sort_keys=True)}")
    refused = sum(n for r, n in remote["fallback"].items() if r.startswith("after hand-over: ") and "traceback" in r)
    assert refused >= 4 and remote["native"] == 0, remote
    assert wait_no_python(sshd) == []


def _parent(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return int(handle.read().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return 0


def _ancestors(pid: int) -> list[int]:
    found = []
    while (pid := _parent(pid)) > 1:
        found.append(pid)
    return found


def _control_master(sshd, address: str = "127.0.0.1") -> int:
    """The pid of the ControlPersist master of ``address``, asked of the master itself through
    the ControlPath ansible-core names (``CONTROL_PATH_DIR/`` and the first 10 hex digits of
    the SHA-1 of ``HOST-PORT-USER``)."""
    digest = hashlib.sha1(f"{address}-{sshd.port}-{sshd.user}".encode()).hexdigest()[:10]
    done = subprocess.run(["ssh", *sshd.ssh_options(), "-o", f"ControlPath={os.path.join(sshd.control_dir, digest)}",
                           "-O", "check", "-p", str(sshd.port), f"{sshd.user}@{address}"],
                          capture_output=True, text=True, timeout=30)
    found = re.search(r"Master running \(pid=(\d+)\)", done.stderr)
    assert found, done.stderr
    return int(found.group(1))


def _end_control_masters(sshd) -> None:
    """No ControlPersist connection left from before: each run opens its own."""
    for pid in sshd.control_masters():
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 30
    while sshd.control_masters():
        assert time.monotonic() < deadline, sshd.control_masters()
        time.sleep(0.05)


DROPS = ["sshd killed", "control master killed"]


def _dropped_run(sshd, host_interpreters, tmp_path, remote_tmp, marker: str, drop: str, accel: bool) -> dict:
    """One run of the play whose task is cut off by ``drop`` while it runs, accelerator off
    (plain ``ansible-playbook``) or on with the remote runner: what ansible-core reported, what
    the task's module wrote on the host, and where the module ran."""
    tmp_path.mkdir()
    env, results, stats = _environment(tmp_path)
    if not accel:
        env = {k: v for k, v in env.items() if not k.startswith("ANSIBLE_ACCEL_")}
    playbook = tmp_path / "play.yml"
    playbook.write_text(_play({"shell": f"echo started >> {marker}; sleep 5; echo ended >> {marker}",
                               "ignore_unreachable": True}, *AGAIN))
    command = [os.path.join(BIN, "ansible-accel"), "ansible-playbook"] if accel else [os.path.join(BIN, "ansible-playbook")]
    _end_control_masters(sshd)
    started = time.monotonic()
    process = subprocess.Popen([*command, "-i", _inventory(sshd, host_interpreters, tmp_path, remote_tmp), str(playbook)],
                               env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               start_new_session=True)
    try:
        deadline = time.monotonic() + 300
        while not (sleeps := [p for p in sshd.host_processes() if _cmd(p).startswith("sleep 5 ")]):
            assert process.poll() is None, process.stdout.read()[-3000:]
            assert time.monotonic() < deadline, "the task did not start"
            time.sleep(0.05)
        module = [_cmd(p) for p in _ancestors(sleeps[0])]
        # The task's shell: the command sshd started for it (the keeper's host side is Python).
        shells = [p for p in sshd.host_processes() if _cmd(p).startswith("/bin/sh -c ")
                  and _cmd(_parent(p)).startswith("sshd: ")]
        # The keeper's host side: ``PYTHON -I -S RDIR/remote.py RDIR IDLE``, and the process serving it.
        keepers = [(_cmd(p), _parent(p)) for p in sshd.host_processes() if "/remote.py " in _cmd(p)]
        if accel:  # the pipelined module came through the keeper: no command of its own
            assert shells == [] and len(keepers) == 1, [_cmd(p) for p in sshd.host_processes()]
            serving = keepers[0][1]
        else:
            assert len(shells) == 1, [_cmd(p) for p in sshd.host_processes()]
            serving = _parent(shells[0])
        if drop == "sshd killed":
            victim = serving
        else:
            victim = _control_master(sshd)
        os.kill(victim, signal.SIGKILL)
        out, _ = process.communicate(timeout=900)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        process.stdout.close()
    took = time.monotonic() - started
    left = wait_no_python(sshd, 90)
    with open(results) as handle:
        report = _normalise(json.load(handle))
    with open(marker) as handle:
        written = handle.read()
    os.unlink(marker)
    counters = None
    if accel:
        with open(stats) as handle:
            counters = json.load(handle)
    return {"rc": process.returncode, "report": report, "out": out, "written": written, "module": module,
            "keepers": keepers, "serving": serving, "left": left, "took": took,
            "stats": counters}


@pytest.mark.parametrize("drop", DROPS)
def test_the_connection_dropped_mid_task(sshd, host_interpreters, tmp_path, remote_tmp, drop):
    """The SSH connection dropped while a module runs on the host: its sshd process (the one
    serving the task's shell) or the controller's ControlPersist master killed (SIGKILL), once
    with plain ``ansible-playbook`` and once with the remote runner, the module in the runner.
    The task's outcome as ansible-core reports it (unreachable, its message), the next tasks'
    results (the task ignores unreachable hosts, so they run on a new connection) and the exit
    status are the same; the module ran once, to its end, as without the runner; the modules
    after the drop run in a new runner; and no process of the run nor the runner's directory
    is left on the host."""
    marker = str(tmp_path / "marker")
    plain = _dropped_run(sshd, host_interpreters, tmp_path / "plain", remote_tmp, marker, drop, accel=False)
    fast = _dropped_run(sshd, host_interpreters, tmp_path / "accel", remote_tmp, marker, drop, accel=True)
    remote = _remote(fast["stats"])
    print(f"\n{drop}: plain {plain['took']:.1f} s, status {plain['rc']}; remote runner {fast['took']:.1f} s, "
          f"status {fast['rc']}\n{json.dumps(remote, sort_keys=True)}")
    dropped = [t for t in _tasks(plain["report"]) if t["status"] == "unreachable"]
    print(json.dumps(dropped, indent=1))
    # The module of the dropped task ran in the runner, whose keeper's channel shares the connection.
    assert any("server.py" in c for c in fast["module"]) and not any("server.py" in c for c in plain["module"])
    assert [serving for _, serving in fast["keepers"]] == [fast["serving"]], fast["keepers"]
    assert fast["rc"] == plain["rc"], (plain["out"][-2000:], fast["out"][-2000:])
    (before, before_cmd), (after, after_cmd) = (_registered(_tasks(fast["report"]), n) for n in range(2))
    assert "server.py" in before_cmd and "server.py" in after_cmd and after != before, (before_cmd, after_cmd)
    for report in (plain["report"], fast["report"]):  # the module's parent differs by nature
        for task in _tasks(report):
            if task["result"].get("cmd") == WHERE:
                task["result"]["stdout"] = task["result"]["stdout_lines"] = "X"
    assert fast["report"] == plain["report"], "\n".join(_differences(plain["report"], fast["report"])[:20])
    assert len(dropped) == 1 and dropped[0]["action"] in ("shell", "ansible.builtin.shell"), _tasks(plain["report"])
    assert _pings(_tasks(plain["report"])) == ["first", "second", "after"], plain["out"][-3000:]
    assert fast["written"] == plain["written"] == "started\nended\n", (plain["written"], fast["written"])
    assert plain["left"] == [] and fast["left"] == [], (plain["left"], fast["left"])
    assert _runners(remote_tmp) == []
    runs = [os.path.join(remote_tmp, n, r) for n in os.listdir(remote_tmp) if n.startswith("ansible-accel-")
            for r in os.listdir(os.path.join(remote_tmp, n))]
    assert all(os.listdir(r) == [] for r in runs), {r: os.listdir(r) for r in runs}
