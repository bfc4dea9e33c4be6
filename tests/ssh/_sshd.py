"""A private OpenSSH server on this machine, for tests and benchmarks that reach "hosts" over SSH.

``Sshd`` starts Debian's ``/usr/sbin/sshd`` in the foreground on loopback addresses (127.0.0.1,
127.0.0.2, ... one per address asked for, so that host aliases on different addresses get SSH
connections and ControlPersist masters of their own, as distinct hosts would) on a free port,
with everything it needs in a private 0700 temporary directory: a generated host key, a
generated client key authorised for the current user, its configuration, pid file and log, a
``known_hosts`` file naming the host key for every address (host key checking stays on), and a
ControlPersist directory for the client side.  Nothing under ``/etc/ssh`` is read or changed,
and no system sshd is started.

Where this process may make a cgroup (cgroup v1 ``cpuacct``, as root), sshd runs in a cgroup of
its own: everything it starts for the hosts (its per-connection processes, shells, module interpreters,
anything that detaches) stays in it, so ``cpu()`` is their whole CPU time and ``stop()`` can end
every one of them.  Without one, ``stop()`` ends the server's descendants found by parent pid.

``stop()`` (also on leaving a ``with`` block, and at interpreter exit for a server left running)
ends the server, every process it started, and this controller's ControlPersist masters for it.

``ensure_openssh_server()`` installs the ``openssh-server`` package with ``apt-get`` when
``/usr/sbin/sshd`` is missing (we run as root on Debian); it is serialised by a lock file.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import errno
import fcntl
import os
import pwd
import shlex
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from typing import Self

SSHD = "/usr/sbin/sshd"
SSH_KEYGEN = shutil.which("ssh-keygen") or "/usr/bin/ssh-keygen"
SFTP_SERVER = "/usr/lib/openssh/sftp-server"
PRIVSEP_DIR = "/run/sshd"  # sshd's privilege separation directory, which the package's service makes
CGROUP_ROOT = "/sys/fs/cgroup/cpuacct"
APT_LOCK = "/tmp/ansible-accel-apt.lock"


class Unavailable(RuntimeError):
    """The test bed cannot run here (the reason is the message)."""


def ensure_openssh_server(timeout: float = 900) -> None:
    """Install Debian's ``openssh-server`` when ``/usr/sbin/sshd`` is missing."""
    if os.access(SSHD, os.X_OK):
        return
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        raise Unavailable(f"{SSHD} is missing and cannot be installed here (needs root and apt-get)")
    with open(APT_LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.access(SSHD, os.X_OK):  # installed by another test run meanwhile
            return
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        install = ["apt-get", "-o", "DPkg::Lock::Timeout=600", "install", "-y", "--no-install-recommends", "openssh-server"]
        done = subprocess.run(install, check=False, env=env, capture_output=True, text=True, timeout=timeout)
        if done.returncode != 0:  # an empty or stale package list: update it once and try again
            subprocess.run(["apt-get", "-o", "DPkg::Lock::Timeout=600", "update"], check=False, env=env, capture_output=True,
                           text=True, timeout=timeout)
            done = subprocess.run(install, check=False, env=env, capture_output=True, text=True, timeout=timeout)
        if done.returncode != 0 or not os.access(SSHD, os.X_OK):
            raise Unavailable(f"apt-get install openssh-server failed: {done.stdout[-2000:]}{done.stderr[-2000:]}")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _children_by_parent() -> dict[int, list[int]]:
    found: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as handle:
                    fields = handle.read().rsplit(")", 1)[1].split()
                found.setdefault(int(fields[1]), []).append(int(name))
            except (OSError, IndexError, ValueError):
                continue
    return found


def descendants(pid: int) -> list[int]:
    """Every living descendant of ``pid`` (by parent pid, at this moment)."""
    children, found, todo = _children_by_parent(), [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def command_line(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


@dataclasses.dataclass
class Alias:
    """One inventory host pointing at the server."""

    name: str
    address: str
    interpreter: str


class Sshd:
    """A private sshd on loopback; see the module's docstring."""

    def __init__(self, addresses: int = 1, user: str | None = None, base: str | None = None, cgroup: bool = True,
                 skip_bashrc: bool = True, detach: bool = False, config: tuple[str, ...] = ()):
        self.skip_bashrc = skip_bashrc
        self.extra_config = list(config)  # more sshd_config lines (e.g. "DisableForwarding yes")
        self.detach = detach  # sshd daemonises: not a child of this process (for a subreaper's accounting)
        self.pid: int | None = None
        ensure_openssh_server()
        if not os.path.isdir(PRIVSEP_DIR):
            os.makedirs(PRIVSEP_DIR, mode=0o755, exist_ok=True)
        self.user = user or pwd.getpwuid(os.geteuid()).pw_name
        self.addresses = [f"127.0.0.{i}" for i in range(1, addresses + 1)]
        self.dir = tempfile.mkdtemp(prefix="accel-sshd-", dir=base)
        os.chmod(self.dir, 0o700)
        self.host_key = os.path.join(self.dir, "host_ed25519")
        self.client_key = os.path.join(self.dir, "client_ed25519")
        self.known_hosts = os.path.join(self.dir, "known_hosts")
        self.authorized_keys = os.path.join(self.dir, "authorized_keys")
        self.config = os.path.join(self.dir, "sshd_config")
        self.pid_file = os.path.join(self.dir, "sshd.pid")
        self.log = os.path.join(self.dir, "sshd.log")
        self.control_dir = os.path.join(self.dir, "cp")  # the client's ControlPersist sockets
        os.mkdir(self.control_dir, 0o700)
        for key in (self.host_key, self.client_key):
            subprocess.run([SSH_KEYGEN, "-q", "-t", "ed25519", "-N", "", "-C", "accel-test", "-f", key], check=True)
        shutil.copyfile(self.client_key + ".pub", self.authorized_keys)
        os.chmod(self.authorized_keys, 0o600)
        self.process: subprocess.Popen | None = None
        self.cgroup: str | None = self._make_cgroup() if cgroup else None
        self.port = 0
        self._start()
        atexit.register(self.stop)

    # --- starting ------------------------------------------------------------------------

    def _make_cgroup(self) -> str | None:
        path = os.path.join(CGROUP_ROOT, f"accel-sshd-{os.getpid()}-{os.path.basename(self.dir)}")
        try:
            os.mkdir(path)
            return path
        except OSError:
            return None

    def _write_config(self) -> None:
        lines = [f"Port {self.port}"] + [f"ListenAddress {a}" for a in self.addresses] + [
            f"HostKey {self.host_key}",
            f"PidFile {self.pid_file}",
            f"AuthorizedKeysFile {self.authorized_keys}",
            f"AllowUsers {self.user}",
            "PermitRootLogin prohibit-password",
            "PubkeyAuthentication yes",
            "PasswordAuthentication no",
            "KbdInteractiveAuthentication no",
            "UsePAM no",
            "StrictModes no",  # the keys live under /tmp, not the user's home
            "UseDNS no",
            "PrintMotd no",
            "PrintLastLog no",
            # room for every alias's ControlPersist master and the channels multiplexed on it
            "MaxStartups 200:30:400",
            "MaxSessions 200",
            f"Subsystem sftp {SFTP_SERVER}",
            "LogLevel ERROR",
        ]
        if self.skip_bashrc:
            # Debian's bash reads ~/.bashrc for a command sshd starts when it is the first shell
            # level; this machine's root .bashrc runs `pyenv init` (about 0.12 s of CPU), which
            # a managed node's shell would not: every mode measured over this server would pay it
            # on each SSH command.  A shell starting at level 2 skips that file.
            lines.append("SetEnv SHLVL=1")
        with open(self.config, "w") as handle:
            handle.write("\n".join(lines + self.extra_config) + "\n")

    def _start(self) -> None:
        with open(self.host_key + ".pub") as handle:
            key_type, key_data = handle.read().split()[:2]
        for attempt in range(5):
            self.port = free_port()
            self._write_config()
            with open(self.known_hosts, "w") as handle:
                handle.writelines(f"[{address}]:{self.port} {key_type} {key_data}\n" for address in self.addresses)
            command = [SSHD, "-e", "-f", self.config] if self.detach else [SSHD, "-D", "-e", "-f", self.config]
            if self.cgroup:  # the shell puts itself in the cgroup, then becomes sshd
                command = ["/bin/sh", "-c", f'echo $$ > {shlex.quote(self.cgroup)}/cgroup.procs && exec "$@"', "sh", *command]
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.pid_file)
            with open(self.log, "ab") as log:
                self.process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                                start_new_session=True, close_fds=True)
            if self.detach:  # sshd forks, writes its pid file and the first process exits
                self.process.wait()
                self.process = None
                self.pid = self._read_pid()
            else:
                self.pid = self.process.pid
            if self.pid and self._wait_listening():
                return
            self._end_server()
        raise Unavailable(f"sshd did not start: {self.log_text()[-2000:]}")

    def _read_pid(self, timeout: float = 20) -> int | None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError, ValueError), open(self.pid_file) as handle:
                return int(handle.read().split()[0])
            time.sleep(0.05)
        return None

    def alive(self) -> bool:
        if self.process is not None:
            return self.process.poll() is None
        if not self.pid:
            return False
        try:
            with open(f"/proc/{self.pid}/stat") as handle:
                return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
        except OSError:
            return False

    def _wait_listening(self, timeout: float = 20) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.alive():
                return False
            if all(self._accepts(a) for a in self.addresses):
                return True
            time.sleep(0.05)
        return False

    def _accepts(self, address: str) -> bool:
        try:
            with socket.create_connection((address, self.port), timeout=1) as conn:
                conn.settimeout(5)
                return conn.recv(4).startswith(b"SSH-")
        except OSError:
            return False

    def log_text(self) -> str:
        try:
            with open(self.log, errors="replace") as handle:
                return handle.read()
        except OSError:
            return ""

    # --- what clients need ---------------------------------------------------------------

    def ssh_options(self) -> list[str]:
        """``ssh`` options for this server: its key, its known_hosts file, no other identity."""
        return ["-o", f"UserKnownHostsFile={self.known_hosts}", "-o", "StrictHostKeyChecking=yes",
                "-o", "GlobalKnownHostsFile=/dev/null", "-o", f"IdentityFile={self.client_key}",
                "-o", "IdentitiesOnly=yes", "-o", "PasswordAuthentication=no", "-o", "BatchMode=yes"]

    def ssh(self, command: str, address: str = "127.0.0.1", timeout: float = 60, **kwargs) -> subprocess.CompletedProcess:
        """Run ``command`` on the server with plain ``ssh`` (no ControlPersist)."""
        return subprocess.run(["ssh", *self.ssh_options(), "-p", str(self.port), f"{self.user}@{address}", command],
                              check=False, capture_output=True, text=True, timeout=timeout, **kwargs)

    def host_vars(self, address: str = "127.0.0.1") -> dict[str, str]:
        """Inventory variables of a host alias on ``address``."""
        return {
            "ansible_connection": "ssh",
            "ansible_host": address,
            "ansible_port": str(self.port),
            "ansible_user": self.user,
            "ansible_ssh_private_key_file": self.client_key,
            "ansible_ssh_common_args": " ".join(self.ssh_options()[:6]),
            "ansible_control_path_dir": self.control_dir,
        }

    def aliases(self, count: int, interpreters: list[str], prefix: str = "h") -> list[Alias]:
        """``count`` aliases, spread over the server's addresses, their interpreters taken in turn."""
        return [Alias(f"{prefix}{i:02d}", self.addresses[(i - 1) % len(self.addresses)],
                      interpreters[(i - 1) % len(interpreters)]) for i in range(1, count + 1)]

    def inventory(self, aliases: list[Alias], remote_tmp: str | None = None, group: str = "ssh") -> str:
        """An INI inventory of ``aliases`` (one group), every connection variable on each line."""
        lines = [f"[{group}]"]
        for alias in aliases:
            values = dict(self.host_vars(alias.address), ansible_python_interpreter=alias.interpreter)
            if remote_tmp:
                values["ansible_remote_tmp"] = remote_tmp
            lines.append(alias.name + "".join(f" {k}={_ini_quote(v)}" for k, v in values.items()))
        return "\n".join(lines) + "\n"

    # --- accounting and ending -----------------------------------------------------------

    def processes(self) -> list[int]:
        """The server and every process it started (its cgroup's, or its descendants)."""
        if self.cgroup:
            try:
                with open(os.path.join(self.cgroup, "cgroup.procs")) as handle:
                    return [int(line) for line in handle if line.strip()]
            except OSError:
                return []
        if not self.alive():
            return []
        return [self.pid, *descendants(self.pid)]

    def host_processes(self) -> list[int]:
        """Processes started for clients: all of ``processes()`` but the listening server."""
        return [pid for pid in self.processes() if pid != self.pid]

    def cpu(self) -> float | None:
        """CPU seconds of the server and everything it started so far (its cgroup's), or None."""
        if not self.cgroup:
            return None
        with open(os.path.join(self.cgroup, "cpuacct.usage")) as handle:
            return int(handle.read()) / 1e9

    def control_masters(self) -> list[int]:
        """This machine's ``ssh`` ControlPersist masters whose socket is in this server's directory."""
        found = []
        for name in os.listdir("/proc"):
            if name.isdigit():
                line = command_line(int(name))
                if line.startswith("ssh") and self.control_dir in line:
                    found.append(int(name))
        return found

    def _end_server(self) -> None:
        if self.pid and self.alive():
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
        if self.process is not None:
            self.process.wait()
        else:
            deadline = time.monotonic() + 10
            while self.alive() and time.monotonic() < deadline:
                time.sleep(0.02)

    def kill_host_processes(self, sig: int = signal.SIGKILL, timeout: float = 10) -> None:
        """End every process the server started for clients (the server itself keeps listening)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            pids = self.host_processes()
            if not pids:
                return
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, sig)
            time.sleep(0.05)

    def stop(self) -> None:
        """End the server, everything it started and this directory's ControlPersist masters."""
        if not self.pid and not os.path.isdir(self.dir):
            return
        for pid in self.control_masters():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        if self.alive():
            # Stop the listener first so it starts nothing more, then end what it started.
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGSTOP)
            tree = descendants(self.pid)
            for pid in tree:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        self._end_server()
        self.kill_host_processes()
        deadline = time.monotonic() + 10
        while self.control_masters() and time.monotonic() < deadline:
            time.sleep(0.05)
        for pid in self.control_masters():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if self.cgroup:
            for _ in range(100):
                try:
                    os.rmdir(self.cgroup)
                    break
                except OSError as error:
                    if error.errno == errno.ENOENT:
                        break
                    self.kill_host_processes(timeout=0.1)
                    time.sleep(0.05)
        shutil.rmtree(self.dir, ignore_errors=True)
        self.process = None
        self.pid = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def _ini_quote(value: str) -> str:
    return f"'{value}'" if (" " in value or "=" in value) else value


def interpreters() -> dict[str, str]:
    """Base Pythons to use as the hosts' interpreters: each test environment's, by version."""
    here = os.path.dirname(os.path.abspath(__file__))
    venvs = os.path.join(os.path.dirname(os.path.dirname(here)), ".venv")
    found = {}
    for name in ("py311", "py312", "py313"):
        version = f"3.{name[3:]}"
        path = os.path.join(venvs, name, "bin", f"python{version}")
        if os.path.exists(path):
            found[version] = os.path.realpath(path)
    return found


def ended(pid: int) -> bool:
    """``pid`` no longer runs (gone, or a zombie waiting for its parent)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True
