"""The remote runner's parts over a real SSH connection, driven directly rather than through
ansible-core (docs/runner-ssh.md; ``test_remote_runner.py`` runs them through ansible-core's
``ssh`` connection): the runner started through an SSH command whose standard input is its
lifeline, modules run through the host-side Python client by commands on the same
ControlPersist connection and compared with fresh runs (what a module sees, its output and
end), the host-side CPU of a module start fresh and warm, and what is left on the host when the
lifeline's channel ends (closed, or its ``ssh`` client killed as a killed controller's would
be)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "runner"))
import _sshd
import ansible_accel
from _older import older_interpreters
from _runner_support import INTERPRETER, build_scripts, normalized
from ansible_accel import _runner_pool

PACKAGE = os.path.dirname(ansible_accel.__file__)
# The runner loads the module-side paths from the file beside it, by that name.
FILES = {"server.py": os.path.join(PACKAGE, "_runner_server.py"), "_runner_modside.py": os.path.join(PACKAGE, "_runner_modside.py"),
         "client.py": os.path.join(PACKAGE, "_runner_remote_client.py")}

# Run by the host's interpreter as `PYTHON -I -S -c BOOT DIR`: reads the files from standard
# input (name, size, bytes each), writes them with O_EXCL into DIR (made 0700), then becomes the
# runner with standard input, the SSH channel, as its lifeline.
BOOT = r"""
import os, sys
d = sys.argv[1]
os.mkdir(d, 0o700)
def read(n):
    data = b""
    while len(data) < n:
        chunk = os.read(0, n - len(data))
        if not chunk:
            raise SystemExit("input cut short")
        data += chunk
    return data
count = int.from_bytes(read(4), "little")
for _ in range(count):
    name = read(int.from_bytes(read(4), "little")).decode()
    data = read(int.from_bytes(read(4), "little"))
    fd = os.open(os.path.join(d, name), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    os.write(fd, data)
    os.close(fd)
with open("/proc/self/environ", "rb") as handle:
    env = handle.read().rstrip(b"\0")
fd = os.open(os.path.join(d, "r.probe.env"), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
os.write(fd, env)
os.close(fd)
lock = os.open(os.path.join(d, "r.lock"), os.O_RDWR | os.O_CREAT, 0o600)
os.set_inheritable(lock, True)
# The environment this process started with: this interpreter coerced a C locale in its own
# (LC_CTYPE), which the runner's interpreter must do itself, as the modules' do.
start = dict(e.split(b"=", 1) for e in env.split(b"\0") if b"=" in e)
os.execve(sys.executable, [sys.executable, os.path.join(d, "server.py"), os.path.join(d, "r.sock"), "0", str(lock),
                           os.path.join(d, "r.probe"), os.path.join(d, "r.log")], start)
"""


def _pack(files: dict[str, bytes]) -> bytes:
    out = len(files).to_bytes(4, "little")
    for name, data in files.items():
        out += len(name).to_bytes(4, "little") + name.encode() + len(data).to_bytes(4, "little") + data
    return out


@pytest.fixture(scope="module")
def scripts(tmp_path_factory) -> dict[str, str]:
    return build_scripts(tmp_path_factory.mktemp("scripts"))


class Host:
    """One host alias on the test bed's sshd, reached through one ControlPersist master."""

    def __init__(self, sshd, tmp_path):
        self.sshd = sshd
        self.control = os.path.join(sshd.control_dir, f"proto-{os.getpid()}-{id(self) % 10000}")
        self.base = ["ssh", *sshd.ssh_options(), "-p", str(sshd.port), "-o", f"ControlPath={self.control}"]
        self.target = f"{sshd.user}@127.0.0.1"
        subprocess.run([*self.base, "-o", "ControlMaster=yes", "-o", "ControlPersist=60", "-f", "-N", self.target],
                       check=True, timeout=60)

    def run(self, command: str, stdin: bytes = b"") -> subprocess.CompletedProcess:
        return subprocess.run([*self.base, "-o", "ControlMaster=no", self.target, command], input=stdin,
                              capture_output=True, timeout=120, check=False)

    def keeper(self, directory: str, files: dict[str, bytes], python: str) -> subprocess.Popen:
        """The lifeline's channel: starts the runner in DIRECTORY and keeps its standard input open."""
        command = f"{shlex.quote(python)} -I -S -c {shlex.quote(BOOT)} {shlex.quote(directory)}"
        process = subprocess.Popen([*self.base, "-o", "ControlMaster=no", self.target, command], stdin=subprocess.PIPE,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        process.stdin.write(_pack(files))
        process.stdin.flush()
        return process

    def close(self) -> None:
        subprocess.run([*self.base, "-O", "exit", self.target], capture_output=True, timeout=60, check=False)


def _read(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()


def _runner_processes(sshd, directory: str) -> list[int]:
    return [p for p in sshd.host_processes() if directory in _cmdline(p)]


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


# The hosts' interpreters: this environment's, the other test environments' base Pythons, and
# the older ones this ansible-core supports on targets (3.8 on 2.19; 3.9 and 3.10) (the scripts
# are this ansible-core's, which runs on each of them as a target).
OLDER_PYTHONS = older_interpreters()
HOST_PYTHONS = [INTERPRETER] + [path for version, path in sorted(_sshd.interpreters().items())
                                if version != f"{sys.version_info[0]}.{sys.version_info[1]}"] + OLDER_PYTHONS


def _start(host, tmp_path, scripts, python=INTERPRETER):
    directory = str(tmp_path / "remote" / "ansible-accel-run")
    os.makedirs(os.path.dirname(directory), mode=0o700)
    with open(scripts["observe"], "rb") as handle:
        probe = _runner_pool.probe_script(handle.read())
    files = {name: _read(path) for name, path in FILES.items()}
    files["r.probe"] = probe
    keeper = host.keeper(directory, files, python)
    sock = os.path.join(directory, "r.sock")
    deadline = time.monotonic() + 120
    while not os.path.exists(sock):
        assert keeper.poll() is None, "the runner's channel ended before the runner listened"
        assert time.monotonic() < deadline, "the runner did not start"
        time.sleep(0.05)
    return keeper, directory, sock


def _wait_gone(sshd, directory, seconds=30) -> list[int]:
    deadline = time.monotonic() + seconds
    while _runner_processes(sshd, directory) and time.monotonic() < deadline:
        time.sleep(0.05)
    return _runner_processes(sshd, directory)


@pytest.mark.parametrize(("end", "python"), [("closed", HOST_PYTHONS[0]), ("killed", HOST_PYTHONS[0]),
                                             *[("closed", p) for p in HOST_PYTHONS[1:]]],
                         ids=lambda v: os.path.basename(v))
def test_modules_run_warm_over_ssh_and_nothing_is_left(sshd, tmp_path, scripts, end, python):
    host = Host(sshd, tmp_path)
    keeper = None
    try:
        keeper, directory, sock = _start(host, tmp_path, scripts, python)
        assert oct(os.stat(directory).st_mode & 0o777) == "0o700"
        client = os.path.join(directory, "client.py")
        for name in ("observe", "ping", "exit3", "term", "raise"):
            plain = host.run(f"/bin/sh -c {shlex.quote(f'{python} {scripts[name]}')}")
            warm = host.run(f"/bin/sh -c {shlex.quote(f'{python} -I -S {client} {sock} {python} {scripts[name]}')}")
            if name == "observe":
                views = [json.loads(normalized(d.stdout))["observed"] for d in (plain, warm)]
                for view in views:
                    for own in ("pid", "random", "pgrp", "sid", "basic_refcount"):
                        view.pop(own)
                # the shell's own variables differ between two commands' shells
                for view in views:
                    view["environ"] = [e for e in view["environ"] if not str(e).startswith(("SSH_CLIENT", "SSH_CONNECTION"))]
                assert views[1] == views[0]
                assert views[0]["executable"] == python
            else:
                assert (warm.returncode, normalized(warm.stdout), normalized(warm.stderr)) == \
                    (plain.returncode, normalized(plain.stdout), normalized(plain.stderr)), name
        fallbacks = sock + ".fallbacks"
        assert not os.path.exists(fallbacks) or _read(fallbacks) == b""
        assert _runner_processes(sshd, directory), "no runner on the host"
        if end == "closed":
            keeper.stdin.close()
        else:
            keeper.kill()
        keeper.wait(30)
        assert _wait_gone(sshd, directory) == []
    finally:
        if keeper is not None and keeper.poll() is None:
            keeper.kill()
            keeper.wait()
        host.close()


def test_cpu_of_a_module_start_on_the_host(sshd, tmp_path, scripts):
    """What ``ping`` costs on the host side (the sshd's cgroup: sshd's channel handling, the
    shell, the interpreter or the client, the runner's child), fresh and warm, each by a command
    on one ControlPersist connection; printed, and warm must cost less."""
    host = Host(sshd, tmp_path)
    keeper = None
    try:
        keeper, directory, sock = _start(host, tmp_path, scripts)
        client = os.path.join(directory, "client.py")
        commands = {"fresh": f"{INTERPRETER} {scripts['ping']}",
                    "warm": f"{INTERPRETER} -I -S {client} {sock} {INTERPRETER} {scripts['ping']}"}
        costs = {}
        for label, command in commands.items():
            host.run(f"/bin/sh -c {shlex.quote(command)}")  # the first of each, not counted
            samples = []
            for _ in range(10):
                before = sshd.cpu()
                done = host.run(f"/bin/sh -c {shlex.quote(command)}")
                samples.append(sshd.cpu() - before)
                assert done.returncode == 0, done.stderr
            samples.sort()
            costs[label] = samples[len(samples) // 2]
        print(f"\nping on the host side, median of 10: fresh {costs['fresh'] * 1000:.1f} ms, warm {costs['warm'] * 1000:.1f} ms "
              f"CPU (load {os.getloadavg()[0]:.1f})")
        assert costs["warm"] < costs["fresh"]
        keeper.stdin.close()
        keeper.wait(30)
        assert _wait_gone(sshd, directory) == []
    finally:
        if keeper is not None and keeper.poll() is None:
            keeper.kill()
            keeper.wait()
        host.close()



@pytest.mark.parametrize("fault", ["directory removed", "runner killed"])
def test_a_module_after_a_fault_runs_the_ordinary_way_once(sshd, tmp_path, scripts, fault):
    """The remote tmp removed between tasks, or the runner killed: the next module's client
    finds no runner and runs the module itself, once, with the same result."""
    host = Host(sshd, tmp_path)
    keeper = None
    try:
        keeper, directory, sock = _start(host, tmp_path, scripts)
        client_text = _read(os.path.join(directory, "client.py"))
        spare = tmp_path / "client.py"  # where the client still is after the fault (it ships again in real use)
        spare.write_bytes(client_text)
        marker = tmp_path / "runs"
        command = f"echo run >> {marker}; {INTERPRETER} -I -S {spare} {sock} {INTERPRETER} {scripts['exit3']}"
        exit3 = scripts["exit3"]
        plain = host.run(f"/bin/sh -c {shlex.quote(f'{INTERPRETER} {exit3}')}")
        if fault == "directory removed":
            assert host.run(f"rm -rf {shlex.quote(directory)}").returncode == 0
        else:
            runners = [p for p in _runner_processes(sshd, directory) if "server.py" in _cmdline(p)]
            assert len(runners) == 1, runners
            os.kill(runners[0], 9)
        after = host.run(f"/bin/sh -c {shlex.quote(command)}")
        assert (after.returncode, normalized(after.stdout), after.stderr) == \
            (plain.returncode, normalized(plain.stdout), plain.stderr)
        assert marker.read_text() == "run\n"
        keeper.stdin.close()
        keeper.wait(30)
        assert _wait_gone(sshd, directory) == []
    finally:
        if keeper is not None and keeper.poll() is None:
            keeper.kill()
            keeper.wait()
        host.close()
