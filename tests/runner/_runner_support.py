"""Helpers of the runner's tests: real AnsiBallZ scripts built by this environment's
ansible-playbook, and runners started on them in a private temporary directory."""

from __future__ import annotations

import glob
import os
import re
import subprocess
import sys
import textwrap
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BIN = os.path.dirname(sys.executable)
INTERPRETER = sys.executable


# Each task's module gets a distinct "name" (or data) so its kept script can be found again.
TASKS = {
    "observe": "accel_observe: {mutate: false}",
    "observe_mutate": "accel_observe: {mutate: true}",
    "ok": "accel_behave: {name: ok}",
    "exit3": "accel_behave: {name: exit3, exit_code: 3}",
    "segv": "accel_behave: {name: segv, kill_with: 11}",
    "term": "accel_behave: {name: term, kill_with: 15}",
    "raise": "accel_behave: {name: raise, raise_error: true}",
    "big": "accel_behave: {name: big, stdout_bytes: 1048576, stderr_text: 'warning text'}",
    "slow": "accel_behave: {name: slow, sleep: 5}",
    "ping": "ping: {data: pong-marker}",
}


def _marker(name: str) -> bytes:
    return {"observe": b'"mutate": false', "observe_mutate": b'"mutate": true', "ping": b"pong-marker"}.get(
        name, f'"name": "{name}"'.encode())


def build_scripts(work, bytecode: bool = False) -> dict[str, str]:
    """name -> path of the AnsiBallZ script ansible-core wrote for that task (with ``bytecode``:
    built with the accelerator's bytecode path on, for this interpreter)."""
    keep = work / "remote"
    tasks = "\n".join(f"    - {body}" for body in TASKS.values())
    (work / "play.yml").write_text(textwrap.dedent("""\
        - hosts: localhost
          gather_facts: false
          tasks:
        """) + tasks.replace("    - ", "    - ignore_errors: true\n      ") + "\n")
    (work / "inventory").write_text(f"localhost ansible_connection=local ansible_python_interpreter={INTERPRETER}\n")
    env = dict(os.environ, ANSIBLE_LIBRARY=os.path.join(HERE, "library"), ANSIBLE_KEEP_REMOTE_FILES="1",
               ANSIBLE_REMOTE_TMP=str(keep), ANSIBLE_ACCEL="0", ANSIBLE_PIPELINING="0", ANSIBLE_NOCOLOR="1",
               ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_INVENTORY_UNPARSED_WARNING="0")
    env.pop("ANSIBLE_CALLBACKS_ENABLED", None)
    command = [os.path.join(BIN, "ansible-playbook")]
    if bytecode:
        env.update(ANSIBLE_ACCEL="1", ANSIBLE_ACCEL_BYTECODE="1", ANSIBLE_ACCEL_BYTECODE_CACHE=str(work / "pyc-cache"))
        command = [os.path.join(BIN, "ansible-accel"), "ansible-playbook"]
    # "slow" sleeps 5 s once here; its script is what the tests need.
    subprocess.run([*command, "-i", str(work / "inventory"), str(work / "play.yml")],
                   cwd=work, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=600)
    found = {}
    for path in glob.glob(str(keep / "*" / "AnsiballZ_*.py")):
        data = open(path, "rb").read()
        for name in TASKS:
            if _marker(name) in data and (name.startswith("observe") == (b"accel_observe" in data)):
                found[name] = path
    missing = set(TASKS) - set(found)
    assert not missing, f"no kept script for {sorted(missing)}"
    return found


class Runner:
    """A runner started for the tests, with its lifeline held here."""

    def __init__(self, rundir: str, script: bytes, env: dict[str, str]):
        from ansible_accel import _runner_pool

        self.rundir, self.env = rundir, env
        self.lifeline = os.pipe2(os.O_CLOEXEC)
        pool = _runner_pool._Pool
        saved = (pool.rundir, pool.lifeline, pool.core_version, pool.spawned)
        pool.rundir, pool.lifeline, pool.core_version, pool.spawned = rundir, self.lifeline, "tests", []
        try:
            for _ in range(_runner_pool.START_AFTER):
                assert _runner_pool.runner_socket(INTERPRETER, env, script) == (None, "too few modules yet to start a runner")
            sock, reason = _runner_pool.runner_socket(INTERPRETER, env, script)
            assert sock is None and reason == "runner starting"
            self.process = pool.spawned[0]
            self.socket = os.path.join(rundir, _runner_pool.runner_key(INTERPRETER, env) + ".sock")
        finally:
            pool.rundir, pool.lifeline, pool.core_version, pool.spawned = saved
        deadline = time.monotonic() + 60
        while not os.path.exists(self.socket):
            failed = glob.glob(os.path.join(rundir, "*.failed"))
            assert not failed, open(failed[0]).read()
            assert time.monotonic() < deadline, "the runner did not start"
            time.sleep(0.02)
        self.pid = self.process.pid

    def fallbacks(self) -> list[str]:
        path = self.socket + ".fallbacks"
        return open(path).read().splitlines() if os.path.exists(path) else []

    def stop(self) -> None:
        for fd in self.lifeline:
            try:
                os.close(fd)
            except OSError:
                pass
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def normalized(data: bytes) -> bytes:
    """Output with the payload's random temporary names made one."""
    return re.sub(rb"_payload_[a-z0-9_]{8}", b"_payload_RANDOM", data)
