"""``ansible-accel-run`` (the extension's runner client) against a fake runner: the request it
sends and the fds it passes, when it runs the interpreter itself (and that it does so exactly
as the ordinary run would), and how it stands in for the module's process once started."""

from __future__ import annotations

import array
import dataclasses
import fcntl
import os
import re
import resource
import shutil
import signal
import socket
import stat
import struct
import subprocess
import tempfile
import termios
import threading
import time
from typing import Callable

import pytest

from ansible_accel import _native

TIMEOUT = 30
# A pid no process has (above any pid_max): the client finds no pidfd for it and never signals.
NO_SUCH_PID = 2**31 - 1
SH_RAN_7 = ("/bin/sh", "-c", "echo ran; exit 7")


@pytest.fixture(scope="module")
def client(tmp_path_factory) -> str:
    """The client program, written where only its owner can reach it."""
    where = tmp_path_factory.mktemp("client")
    os.chmod(where, 0o700)
    path = where / "ansible-accel-run"
    path.write_bytes(_native.runner_client_binary())
    os.chmod(path, 0o700)
    return str(path)


@pytest.fixture
def sock_path():
    """A socket path short enough for sun_path (pytest's tmp_path may not be)."""
    where = tempfile.mkdtemp(prefix="aar-")
    os.chmod(where, 0o700)
    yield os.path.join(where, "runner.sock")
    shutil.rmtree(where, ignore_errors=True)


@dataclasses.dataclass
class Request:
    argv: list[bytes]
    env: list[bytes]
    umask: int
    pgid: int
    blocked: int
    ignored: int
    rlimits: dict[int, tuple[int, int]]
    # For each fd received: (st_dev, st_ino, st_mode) and what /proc/self/fd shows for it.
    fds: list[tuple[tuple[int, int, int], str]]


def read_request(conn: socket.socket) -> Request:
    """Read one request as a runner does, with every fd that came with any part of it."""
    data, fds = b"", []
    while len(data) < 4 or len(data) < 4 + struct.unpack_from("<I", data)[0]:
        chunk, ancillary, flags, _ = conn.recvmsg(65536, socket.CMSG_SPACE(64 * 4))
        assert not flags & socket.MSG_CTRUNC
        for level, kind, payload in ancillary:
            assert (level, kind) == (socket.SOL_SOCKET, socket.SCM_RIGHTS)
            fds.extend(array.array("i", payload[: len(payload) - len(payload) % 4]))
        if not chunk:
            raise EOFError(f"request cut short after {len(data)} bytes")
        data += chunk
    seen = []
    for fd in fds:
        st = os.fstat(fd)
        seen.append(((st.st_dev, st.st_ino, stat.S_IFMT(st.st_mode)), os.readlink(f"/proc/self/fd/{fd}")))
        os.close(fd)
    return parse_request(data[4:], seen)


def parse_request(body: bytes, fds) -> Request:
    pos = 0

    def take(n: int) -> bytes:
        nonlocal pos
        chunk = body[pos : pos + n]
        assert len(chunk) == n, "request body too short"
        pos += n
        return chunk

    def num(fmt: str) -> int:
        return struct.unpack("<" + fmt, take(struct.calcsize(fmt)))[0]

    def strings() -> list[bytes]:
        return [take(num("I")) for _ in range(num("I"))]

    assert take(4) == b"AAR1"
    argv, env = strings(), strings()
    umask, pgid, blocked, ignored = num("I"), num("i"), num("Q"), num("Q")
    rlimits = {}
    for _ in range(num("I")):
        resource_, cur, max_ = num("I"), num("Q"), num("Q")
        rlimits[resource_] = (cur, max_)
    assert pos == len(body), "bytes left after the request"
    return Request(argv, env, umask, pgid, blocked, ignored, rlimits, fds)


class FakeRunner:
    """Serves `connections` connections in a thread: reads each request, then calls
    `reply(conn, request)`; `join()` raises what went wrong in the thread."""

    def __init__(self, path: str, reply: Callable[[socket.socket, Request], None], connections: int = 1):
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(path)
        self.listener.listen(4)
        self.reply, self.connections = reply, connections
        self.requests: list[Request] = []
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        try:
            for _ in range(self.connections):
                conn, _ = self.listener.accept()
                with conn:
                    request = read_request(conn)
                    self.requests.append(request)
                    self.reply(conn, request)
        except BaseException as exc:  # handed to the test by join()
            self.error = exc

    def join(self) -> list[Request]:
        self.thread.join(TIMEOUT)
        self.listener.close()
        assert not self.thread.is_alive(), "the fake runner is still waiting"
        if self.error is not None:
            raise self.error
        return self.requests


def refused(reason: bytes) -> bytes:
    return b"R" + struct.pack("<I", len(reason)) + reason


def started(pid: int) -> bytes:
    return b"S" + struct.pack("<i", pid)


def exited(status: int) -> bytes:
    return b"X" + struct.pack("<i", status)


def raw_status(returncode: int) -> int:
    """A Popen returncode back as the wait status the runner would send."""
    return -returncode if returncode < 0 else returncode << 8


def fallbacks(sock_path: str) -> bytes:
    with open(sock_path + ".fallbacks", "rb") as f:
        return f.read()


def run(argv, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, timeout=TIMEOUT, **kwargs)


def signal_bits(signals) -> int:
    return sum(1 << (int(sig) - 1) for sig in set(signals))


def proc_masks(status: bytes) -> tuple[int, int]:
    """SigBlk and SigIgn from a /proc/PID/status text."""
    blk = re.search(rb"^SigBlk:\s*([0-9a-f]+)$", status, re.M)
    ign = re.search(rb"^SigIgn:\s*([0-9a-f]+)$", status, re.M)
    return int(blk[1], 16), int(ign[1], 16)


def process_setup(blocked=(), ignored=(), close_stdin=False) -> Callable[[], None]:
    """A preexec_fn giving the started process this signal mask and these ignored signals."""

    def setup() -> None:
        signal.pthread_sigmask(signal.SIG_SETMASK, set(blocked))
        for sig in ignored:
            signal.signal(sig, signal.SIG_IGN)
        if close_stdin:
            os.close(0)

    return setup


def test_probe(client):
    done = run([client, "--probe"])
    assert (done.returncode, done.stdout, done.stderr) == (0, b"ansible-accel-run 1\n", b"")


def test_usage_without_interpreter(client, sock_path):
    done = run([client, sock_path])
    assert done.returncode == 2
    assert done.stderr.startswith(b"usage: ansible-accel-run SOCKET INTERPRETER")


def test_request_carries_the_process_state(client, sock_path):
    runner = FakeRunner(sock_path, lambda conn, _: conn.sendall(started(NO_SUCH_PID) + exited(0)))
    argv = [b"/usr/bin/python3", b"-c", b"", b"a b", b"\xff\xfe"]
    env = {"ZZ_FIRST": "1", "AA_SECOND": "x=y", "EMPTY": "", "PATH": os.environ["PATH"]}
    blocked = {signal.SIGUSR1, signal.SIGRTMIN + 2, signal.SIGWINCH}
    ignored = {signal.SIGHUP, signal.SIGUSR2}
    nofile = resource.getrlimit(resource.RLIMIT_NOFILE)
    core = resource.getrlimit(resource.RLIMIT_CORE)

    def setup() -> None:
        process_setup(blocked, ignored)()
        resource.setrlimit(resource.RLIMIT_NOFILE, (200, nofile[1]))
        resource.setrlimit(resource.RLIMIT_CORE, (0, core[1]))

    options = dict(env=env, umask=0o027, process_group=0, preexec_fn=setup)
    done = run([client.encode(), sock_path.encode(), *argv], **options)
    assert done.returncode == 0, done.stderr
    (request,) = runner.join()

    assert request.argv == argv
    assert request.env == [f"{k}={v}".encode() for k, v in env.items()]
    assert request.umask == 0o027
    assert request.pgid not in (0, os.getpgrp())  # its own group (test_process_group_is_the_clients)
    # What the kernel shows for a process started the same way (the client blocks its forwarded
    # signals while it talks to the runner; what it sends is the mask it received).
    expected_blocked, expected_ignored = proc_masks(run(["cat", "/proc/self/status"], **options).stdout)
    assert request.blocked == expected_blocked
    assert request.blocked & signal_bits(blocked) == signal_bits(blocked)
    assert not request.blocked & signal_bits([signal.SIGTERM, signal.SIGINT])
    # glibc keeps signals 32 and 33 for itself and answers no query about them: the client
    # cannot see (nor a program set) them, whatever a parent left in the kernel's mask.
    assert request.ignored == expected_ignored & ~signal_bits([32, 33])
    assert request.ignored & signal_bits(ignored) == signal_bits(ignored)
    unsigned = (1 << 64) - 1
    expected_limits = {r: tuple(v & unsigned for v in resource.getrlimit(r)) for r in range(16)}
    expected_limits[resource.RLIMIT_NOFILE] = (200, nofile[1] & unsigned)
    expected_limits[resource.RLIMIT_CORE] = (0, core[1] & unsigned)
    assert request.rlimits == expected_limits


def test_process_group_is_the_clients(client, sock_path):
    runner = FakeRunner(sock_path, lambda conn, _: conn.sendall(started(NO_SUCH_PID) + exited(0)))
    proc = subprocess.Popen([client, sock_path, "/bin/true"], process_group=0)
    assert proc.wait(TIMEOUT) == 0
    (request,) = runner.join()
    assert request.pgid == proc.pid


def test_fds_are_the_standard_streams_and_cwd(client, sock_path, tmp_path):
    runner = FakeRunner(sock_path, lambda conn, _: conn.sendall(started(NO_SUCH_PID) + exited(0)))
    workdir = tmp_path / "work dir"
    workdir.mkdir()
    proc = subprocess.Popen(
        [client, sock_path, "/bin/true"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=workdir,
    )
    try:
        ends = [proc.stdin, proc.stdout, proc.stderr]
        expected = [os.fstat(end.fileno()) for end in ends]
        proc.communicate(timeout=TIMEOUT)
        assert proc.returncode == 0
    finally:
        proc.kill()
    (request,) = runner.join()
    assert len(request.fds) == 4
    for (ident, link), st in zip(request.fds[:3], expected):
        assert ident == (st.st_dev, st.st_ino, stat.S_IFIFO)
        assert link.startswith("pipe:")
    cwd = os.stat(workdir)
    assert request.fds[3] == ((cwd.st_dev, cwd.st_ino, stat.S_IFDIR), str(workdir))


def test_refusal_runs_the_interpreter_and_logs_the_reason(client, sock_path):
    runner = FakeRunner(sock_path, lambda conn, _: conn.sendall(refused(b"runner busy")))
    done = run([client, sock_path, *SH_RAN_7])
    assert (done.returncode, done.stdout, done.stderr) == (7, b"ran\n", b"")
    assert len(runner.join()) == 1
    assert fallbacks(sock_path) == b"runner busy\n"
    assert stat.S_IMODE(os.stat(sock_path + ".fallbacks").st_mode) == 0o600


def test_fallback_lines_are_appended_one_per_fallback(client, sock_path):
    reasons = iter([b"first", b"second\nline"])
    runner = FakeRunner(sock_path, lambda conn, _: conn.sendall(refused(next(reasons))), connections=2)
    for _ in range(2):
        assert run([client, sock_path, *SH_RAN_7]).returncode == 7
    runner.join()
    assert fallbacks(sock_path) == b"first\nsecond line\n"


def test_unreachable_runner_runs_the_interpreter(client, sock_path):
    done = run([client, sock_path, *SH_RAN_7])
    assert (done.returncode, done.stdout, done.stderr) == (7, b"ran\n", b"")
    assert fallbacks(sock_path) == b"runner not reachable: No such file or directory\n"


def test_runner_that_does_not_listen_runs_the_interpreter(client, sock_path):
    bound = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    bound.bind(sock_path)  # bound, never listening
    try:
        done = run([client, sock_path, *SH_RAN_7])
    finally:
        bound.close()
    assert (done.returncode, done.stdout) == (7, b"ran\n")
    assert fallbacks(sock_path) == b"runner not reachable: Connection refused\n"


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        (b"", b"runner closed the connection"),
        (b"S\x01\x00", b"runner closed the connection"),
        (b"R\x10\x00\x00\x00cut", b"runner closed the connection"),
        (b"Q\x00\x00\x00\x00", b"runner sent an invalid reply"),
        (exited(0), b"runner sent an invalid reply"),
        (b"R" + struct.pack("<I", 1 << 20), b"runner sent an invalid reply"),
    ],
    ids=["eof", "short-start", "short-reason", "unknown-tag", "exit-before-start", "huge-reason"],
)
def test_no_start_runs_the_interpreter(client, sock_path, reply, reason):
    runner = FakeRunner(sock_path, lambda conn, _: conn.sendall(reply))
    done = run([client, sock_path, *SH_RAN_7])
    assert (done.returncode, done.stdout, done.stderr) == (7, b"ran\n", b"")
    runner.join()
    assert fallbacks(sock_path) == reason + b"\n"


def test_closed_standard_fd_runs_the_interpreter_with_it_closed(client, sock_path):
    runner_never_used = sock_path  # the fd check comes before anything is opened
    script = "[ -e /proc/$$/fd/0 ] && echo open || echo closed; exit 7"
    done = run([client, runner_never_used, "/bin/sh", "-c", script], preexec_fn=process_setup(close_stdin=True))
    assert (done.returncode, done.stdout) == (7, b"closed\n")
    assert fallbacks(sock_path) == b"standard fd 0 closed\n"


@pytest.mark.parametrize(
    ("blocked", "ignored"),
    [
        ((), ()),
        ((signal.SIGUSR1, signal.SIGRTMIN + 1), (signal.SIGHUP,)),
        ((signal.SIGTERM, signal.SIGINT), (signal.SIGQUIT, signal.SIGUSR2, signal.SIGALRM)),
    ],
    ids=["nothing", "unforwarded", "forwarded"],
)
def test_fallback_is_the_ordinary_run(client, sock_path, blocked, ignored):
    """The interpreter as the client execs it sees what it would see run directly: the same
    environment in the same order, signal mask, ignored signals and open fds."""
    env = {"Z_LAST_NAME_FIRST": "1", "A": "", "MIDDLE": "a=b c", "PATH": os.environ["PATH"]}
    options = dict(env=env, preexec_fn=process_setup(blocked, ignored), stdin=subprocess.DEVNULL)
    masks = ["/bin/grep", "-E", "^Sig(Blk|Ign)", "/proc/self/status"]
    for command in (["/usr/bin/env"], ["/bin/ls", "/proc/self/fd"], masks):
        direct = run(command, **options)
        through = run([client, sock_path, *command], **options)
        assert through.returncode == direct.returncode == 0
        assert through.stdout == direct.stdout
    assert run([client, sock_path, "/usr/bin/env"], **options).stdout.splitlines() == [
        f"{k}={v}".encode() for k, v in env.items()
    ]
    blk, ign = proc_masks(run([client, sock_path, *masks], **options).stdout)
    assert (blk, ign & signal_bits(ignored)) == (signal_bits(blocked), signal_bits(ignored))


def test_exec_failure_is_reported_as_a_shell_would(client, sock_path, tmp_path):
    done = run([client, sock_path, str(tmp_path / "no-python"), "x.py"])
    assert done.returncode == 127
    assert done.stderr == f"ansible-accel-run: cannot execute {tmp_path / 'no-python'}: No such file or directory\n".encode()
    not_executable = tmp_path / "python"
    not_executable.write_text("")
    done = run([client, sock_path, str(not_executable)])
    assert done.returncode == 126
    assert done.stderr == f"ansible-accel-run: cannot execute {not_executable}: Permission denied\n".encode()


def test_exit_code_is_the_modules(client, sock_path):
    runner = FakeRunner(sock_path, lambda conn, _: conn.sendall(started(NO_SUCH_PID) + exited(3 << 8)))
    done = run([client, sock_path, *SH_RAN_7])
    runner.join()
    assert (done.returncode, done.stdout, done.stderr) == (3, b"", b"")
    assert not os.path.exists(sock_path + ".fallbacks")


def test_replies_in_pieces_are_put_together(client, sock_path):
    def reply(conn, _):
        for piece in (b"S", struct.pack("<i", NO_SUCH_PID)[:2], struct.pack("<i", NO_SUCH_PID)[2:] + b"X\x00"):
            conn.sendall(piece)
            time.sleep(0.05)
        conn.sendall(b"\x05\x00\x00")

    runner = FakeRunner(sock_path, reply)
    done = run([client, sock_path, *SH_RAN_7])
    runner.join()
    assert done.returncode == 5


def test_death_by_signal_is_the_modules(client, sock_path):
    runner = FakeRunner(sock_path, lambda conn, _: conn.sendall(started(NO_SUCH_PID) + exited(signal.SIGTERM)))
    done = run([client, sock_path, *SH_RAN_7])
    runner.join()
    assert (done.returncode, done.stdout) == (-signal.SIGTERM, b"")


def test_runner_ending_early_waits_for_the_module(client, sock_path):
    children = []

    def reply(conn, _):
        children.append(subprocess.Popen(["sleep", "0.3"]))
        conn.sendall(started(children[0].pid))

    runner = FakeRunner(sock_path, reply)
    begin = time.monotonic()
    done = run([client, sock_path, *SH_RAN_7])
    elapsed = time.monotonic() - begin
    runner.join()
    (child,) = children
    try:
        assert child.poll() == 0, "the client returned before the module's process ended"
        assert elapsed >= 0.3
        assert done.returncode == 1
        assert done.stdout == b""
        assert done.stderr == b"ansible-accel-run: the runner ended before the module's exit status was known\n"
    finally:
        child.kill()
        child.wait()
    assert not os.path.exists(sock_path + ".fallbacks")


def _default_signals() -> None:
    """The forwarded signals' default actions, whatever the test session received ignored
    (one started by ``nohup`` or in the background of a shell ignores SIGHUP, SIGINT, SIGQUIT)."""
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2, signal.SIGALRM, signal.SIGINT,
                signal.SIGQUIT):
        signal.signal(sig, signal.SIG_DFL)


class ModuleProcess:
    """A fake runner whose module's process is a real `sleep 30`: it reports `S` with its pid,
    and `X` with its wait status once it ends."""

    def __init__(self, sock_path: str):
        self.started = threading.Event()
        self.child: subprocess.Popen | None = None
        self.runner = FakeRunner(sock_path, self._reply)

    def _reply(self, conn, _request) -> None:
        # No core file when SIGQUIT ends it.
        self.child = subprocess.Popen(["/bin/sh", "-c", "ulimit -c 0; exec sleep 30"], preexec_fn=_default_signals)
        conn.sendall(started(self.child.pid))
        self.started.set()
        conn.sendall(exited(raw_status(self.child.wait(TIMEOUT))))

    def wait_started(self) -> None:
        assert self.started.wait(TIMEOUT)

    def close(self) -> None:
        if self.child is not None and self.child.poll() is None:
            self.child.kill()
        self.runner.join()


@pytest.mark.parametrize(
    "sig",
    [signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2, signal.SIGALRM, signal.SIGINT, signal.SIGQUIT],
    ids=lambda sig: sig.name,
)
def test_signal_sent_to_the_client_reaches_the_module(client, sock_path, sig):
    module = ModuleProcess(sock_path)
    proc = subprocess.Popen([client, sock_path, *SH_RAN_7], stdout=subprocess.PIPE, preexec_fn=_default_signals)
    try:
        module.wait_started()
        proc.send_signal(sig)
        out, _ = proc.communicate(timeout=TIMEOUT)
    finally:
        proc.kill()
        module.close()
    assert module.child.returncode == -sig, "the module's process did not die of the signal"
    assert (proc.returncode, out) == (-sig, b"")


def test_terminal_interrupt_is_not_forwarded_again(client, sock_path):
    """^C on the client's terminal reaches its whole foreground process group, the module's
    process included (the runner puts it there); the client must not send it a second time.
    Here the module's process is elsewhere, so it sees only what the client forwards."""
    module = ModuleProcess(sock_path)
    master, slave = os.openpty()

    def take_terminal() -> None:
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    proc = subprocess.Popen(
        [client, sock_path, *SH_RAN_7], stdin=slave, stdout=slave, stderr=slave,
        start_new_session=True, preexec_fn=take_terminal,
    )
    try:
        module.wait_started()
        assert os.tcgetpgrp(master) == proc.pid
        os.write(master, b"\x03")
        time.sleep(0.3)
        assert module.child.poll() is None, "the terminal's SIGINT was forwarded"
        assert proc.poll() is None, "the client died of the terminal's SIGINT"
        proc.send_signal(signal.SIGTERM)
        proc.wait(TIMEOUT)
    finally:
        proc.kill()
        module.close()
        os.close(master)
        os.close(slave)
    assert module.child.returncode == -signal.SIGTERM
    assert proc.returncode == -signal.SIGTERM
