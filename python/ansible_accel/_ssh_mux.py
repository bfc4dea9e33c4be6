"""A command run through an ``ssh`` ControlMaster that is already listening, the way an ``ssh``
client process does it when it finds one (OpenSSH's ``PROTOCOL.mux``, passenger mode), from the
process that would have started that client.

``Session`` stands for the client process: it takes the same standard input, output and error
(``subprocess.Popen``'s arguments), hands them to the master, and ends as the client would (its
exit status, its closing line on standard error for a terminal session).  ``Refused`` is raised
where the client would give up on the master before it has said it opened a session (no master
answering, another protocol version, the master declined or went away): the client then goes on
by connecting to the host itself, and so does the caller, by running ``ssh``.  Nothing here reads
configuration: the caller gives what ``ssh -G`` said.
"""

from __future__ import annotations

import array
import io
import os
import socket
import struct
import threading

HELLO = 0x00000001
NEW_SESSION = 0x10000002
ALIVE_CHECK = 0x10000004
S_PERMISSION_DENIED = 0x80000002
S_FAILURE = 0x80000003
S_EXIT_MESSAGE = 0x80000004
S_ALIVE = 0x80000005
S_SESSION_OPENED = 0x80000006
S_TTY_ALLOC_FAIL = 0x80000008
VERSION = 4
NO_ESCAPE = 0xFFFFFFFF
EXIT_FAILED = 255  # what the client exits with when the master gives no exit status


class Refused(Exception):
    """No session was opened: ``reason`` says why in a few fixed words (what is counted),
    ``detail`` adds what was seen."""

    def __init__(self, reason: str, detail: str = ""):
        super().__init__(f"{reason} ({detail})" if detail else reason)
        self.reason = reason


def _u32(value: int) -> bytes:
    return struct.pack(">I", value)


def _string(value: bytes) -> bytes:
    return _u32(len(value)) + value


def recv_up_to(sock, size: int) -> bytes:
    """``size`` bytes from ``sock``, or fewer if the stream ends first."""
    chunks, need = [], size
    while need:
        chunk = sock.recv(need)
        if not chunk:
            break
        chunks.append(chunk)
        need -= len(chunk)
    return b"".join(chunks)


class _Wire:
    """Packets on the control socket: ``u32 length`` then the body."""

    def __init__(self, sock: socket.socket):
        self.sock = sock

    def send(self, *parts: bytes) -> None:
        body = b"".join(parts)
        self.sock.sendall(_u32(len(body)) + body)

    def _exactly(self, n: int) -> bytes | None:
        data = recv_up_to(self.sock, n)
        return data if len(data) == n else None

    def receive(self) -> bytes | None:
        """The next packet's body, or None at end of stream."""
        head = self._exactly(4)
        if head is None:
            return None
        (length,) = struct.unpack(">I", head)
        if length > 256 * 1024:
            raise OSError("oversized packet from the master")
        return self._exactly(length) if length else b""


def _words(body: bytes, count: int) -> tuple[int, ...]:
    if len(body) < 4 * count:
        raise OSError("short packet from the master")
    return struct.unpack_from(">" + "I" * count, body)


def _text(body: bytes, at: int) -> str:
    (length,) = struct.unpack_from(">I", body, at)
    return body[at + 4:at + 4 + length].decode("utf-8", "replace")


def _raw_mode(fd: int):
    """Put the terminal on ``fd`` in raw mode as the client does for a terminal session; the
    settings to put back, or None (not a terminal)."""
    import termios

    try:
        saved = termios.tcgetattr(fd)
    except termios.error:
        return None
    iflag, oflag, cflag, lflag, ispeed, ospeed, cc = saved
    iflag |= termios.IGNPAR
    iflag &= ~(termios.ISTRIP | termios.INLCR | termios.IGNCR | termios.ICRNL | termios.IXON | termios.IXANY
               | termios.IXOFF | getattr(termios, "IUCLC", 0))
    lflag &= ~(termios.ISIG | termios.ICANON | termios.ECHO | termios.ECHOE | termios.ECHOK | termios.ECHONL
               | getattr(termios, "IEXTEN", 0))
    oflag &= ~termios.OPOST
    cc = list(cc)
    cc[termios.VMIN] = 1
    cc[termios.VTIME] = 0
    try:
        termios.tcsetattr(fd, termios.TCSADRAIN, [iflag, oflag, cflag, lflag, ispeed, ospeed, cc])
    except termios.error:
        return None
    return saved


def _cooked(fd: int, saved) -> None:
    import termios

    try:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)
    except termios.error:
        pass


class PopenLike:
    """What ``subprocess.Popen`` offers a caller of ``ssh`` that is the same for every stand-in
    for the process: ``poll()``, ``wait()``, ``communicate()``, ``returncode``, ``with``.  A
    subclass sets ``stdin`` (or leaves it None), ``stdout`` and ``stderr`` (pipes' read ends),
    sets ``returncode`` and then ``_done`` when its run ends, and has ``terminate``."""

    def __init__(self) -> None:
        self.returncode: int | None = None
        self.pid = None  # no process of its own
        self.stdin = None
        self._done = threading.Event()

    def poll(self) -> int | None:
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if not self._done.wait(timeout):
            import subprocess

            raise subprocess.TimeoutExpired("ssh", timeout)
        return self.returncode  # type: ignore[return-value]

    def communicate(self, input: bytes | None = None, timeout: float | None = None) -> tuple[bytes, bytes]:
        """As ``Popen.communicate``: ``input`` written to the standard input (a pipe), the output
        and error read to their end, the exit awaited."""
        import selectors
        import time

        deadline = None if timeout is None else time.monotonic() + timeout
        selector = selectors.DefaultSelector()
        output = {self.stdout: [], self.stderr: []}
        for stream in output:
            if not stream.closed:
                selector.register(stream, selectors.EVENT_READ)
        pending = memoryview(input or b"")
        if self.stdin is not None and not self.stdin.closed:
            self.stdin.flush()
            if pending:
                os.set_blocking(self.stdin.fileno(), False)
                selector.register(self.stdin, selectors.EVENT_WRITE)
            else:
                self.stdin.close()
        while selector.get_map():
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            events = selector.select(left)
            if not events and left == 0.0:
                import subprocess

                raise subprocess.TimeoutExpired("ssh", timeout)
            for key, _ in events:
                if key.fileobj is self.stdin:
                    try:
                        pending = pending[os.write(key.fd, pending[:65536]):]
                    except BrokenPipeError:
                        pending = pending[:0]
                    if not pending:
                        selector.unregister(self.stdin)
                        self.stdin.close()
                    continue
                chunk = os.read(key.fd, 65536)
                if chunk:
                    output[key.fileobj].append(chunk)
                else:
                    selector.unregister(key.fileobj)
        selector.close()
        self.wait(None if deadline is None else max(0.0, deadline - time.monotonic()))
        for stream in output:
            stream.close()
        return b"".join(output[self.stdout]), b"".join(output[self.stderr])

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        for stream in (self.stdin, self.stdout, self.stderr):
            if stream is not None:
                stream.close()
        self.wait()


class Session(PopenLike):
    """A running command in a master's session, with ``subprocess.Popen``'s interface as far
    as a caller of ``Popen`` for ``ssh`` uses it: ``stdin``, ``stdout``, ``stderr``,
    ``poll()``, ``wait()``, ``communicate()``, ``returncode``, ``terminate()``, ``kill()``, and
    ``with``.

    ``stdin`` is a file descriptor (kept open here for the session's life, as the client keeps
    its standard input) or ``subprocess.PIPE``; ``stdout`` and ``stderr`` must be
    ``subprocess.PIPE``.  ``closing_line`` is what the client writes on its standard error as the
    session ends (``b""`` for nothing)."""

    def __init__(self, control_path: str, *, command: bytes, tty: bool, escape: int, term: bytes, env: list[bytes],
                 stdin, closing_line: bytes, timeout: float = 30.0):
        super().__init__()
        self._closing_line = closing_line
        self._tty = tty
        self._terminated = False
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        ours: list[int] = []  # the client's ends of its standard streams, held until it ends
        theirs: list[int] = []  # the caller's ends
        try:
            sock.settimeout(timeout)
            try:
                sock.connect(control_path)
            except OSError as ex:
                raise Refused("no master listening", str(ex.strerror or ex)) from None
            wire = _Wire(sock)
            self._hello(wire)
            self._alive(wire)
            if stdin == -1:  # subprocess.PIPE
                read_end, write_end = os.pipe2(os.O_CLOEXEC)
                ours.append(read_end)
                theirs.append(write_end)
            else:
                ours.append(os.dup(stdin))
            for _ in range(2):
                read_end, write_end = os.pipe2(os.O_CLOEXEC)
                ours.append(write_end)
                theirs.append(read_end)
            # From the request on, the client waits as long as the master takes, as ssh does:
            # a session the master opens late must not find that ssh was started after all.
            sock.settimeout(None)
            self._session = self._open(wire, command, tty, escape, term, env, ours)
        except Refused:
            sock.close()
            for fd in ours + theirs:
                os.close(fd)
            raise
        except OSError as ex:
            sock.close()
            for fd in ours + theirs:
                os.close(fd)
            raise Refused("the master did not answer", str(ex.strerror or ex)) from None
        if stdin == -1:
            self.stdin = io.open(theirs.pop(0), "wb", -1)
        self.stdout = io.open(theirs[0], "rb", -1)
        self.stderr = io.open(theirs[1], "rb", -1)
        self._sock = sock
        self._ours = ours
        self._saved_tty = _raw_mode(ours[0]) if tty else None
        try:
            threading.Thread(target=self._follow, name="ansible-accel ssh session", daemon=True).start()
        except RuntimeError:  # no thread to be had: the session ends as when the client is killed
            self._terminated = True
            sock.shutdown(socket.SHUT_RDWR)
            self._follow()

    @staticmethod
    def _hello(wire: _Wire) -> None:
        wire.send(_u32(HELLO), _u32(VERSION))
        body = wire.receive()
        if body is None:
            raise Refused("the master closed the connection")
        kind, version = _words(body, 2)
        if kind != HELLO or version != VERSION:
            raise Refused("the master speaks another protocol", f"0x{kind:08x} version {version}")

    @staticmethod
    def _alive(wire: _Wire) -> None:
        wire.send(_u32(ALIVE_CHECK), _u32(0))
        body = wire.receive()
        if body is None:
            raise Refused("the master closed the connection")
        kind, request = _words(body, 2)
        if kind != S_ALIVE or request != 0:
            raise Refused("the master failed its alive check", f"0x{kind:08x}")

    @staticmethod
    def _open(wire: _Wire, command: bytes, tty: bool, escape: int, term: bytes, env: list[bytes], fds: list[int]) -> int:
        wire.send(_u32(NEW_SESSION), _u32(1), _string(b""), _u32(int(tty)), _u32(0), _u32(0), _u32(0), _u32(escape),
                  _string(term), _string(command), *(_string(entry) for entry in env))
        for fd in fds:
            wire.sock.sendmsg([b"\0"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [fd]))])
        body = wire.receive()
        if body is None:
            raise Refused("the master closed the connection")
        kind, request = _words(body, 2)
        if request != 1:
            raise Refused("the master answered another request", str(request))
        if kind == S_SESSION_OPENED:
            return _words(body, 3)[2]
        if kind in (S_PERMISSION_DENIED, S_FAILURE):
            raise Refused("the master declined the session", _text(body, 8))
        raise Refused("unexpected answer from the master", f"0x{kind:08x}")

    def _follow(self) -> None:
        """Until the master closes the control connection: its exit status and, on a terminal
        session, the terminal's settings put back; then the client's ending."""
        status = None
        wire = _Wire(self._sock)
        try:
            while True:
                body = wire.receive()
                if body is None:
                    break
                kind, session = _words(body, 2)
                if session != self._session:
                    break
                if kind == S_TTY_ALLOC_FAIL:
                    if self._saved_tty is not None:
                        _cooked(self._ours[0], self._saved_tty)
                        self._saved_tty = None
                elif kind == S_EXIT_MESSAGE and status is None:
                    status = _words(body, 3)[2]
                else:
                    break
        except OSError:
            pass
        finally:
            self._sock.close()
            if self._saved_tty is not None:
                _cooked(self._ours[0], self._saved_tty)
            if status is None or self._terminated:
                status = EXIT_FAILED
            if self._closing_line:
                try:
                    os.write(self._ours[2], self._closing_line)
                except OSError:
                    pass
            for fd in self._ours:
                os.close(fd)
            self.returncode = status & 0xFF
            self._done.set()

    def terminate(self) -> None:
        """As the client does on SIGTERM: it leaves the session (the master then ends it) and
        exits with 255."""
        if not self._done.is_set():
            self._terminated = True
            try:
                self._sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    kill = terminate
