"""A client of the runner protocol written in Python, for the tests: it hands the runner pipes
it made (or given fds) as the standard streams, so a test controls and reads each of them."""

from __future__ import annotations

import array
import os
import resource
import socket
import struct
import threading


def encode_request(argv: list[bytes], env: list[bytes], umask: int, pgid: int, blocked: int = 0,
                   ignored: int = 0, rlimits: list[tuple[int, int, int]] | None = None) -> bytes:
    def strings(items):
        return struct.pack("<I", len(items)) + b"".join(struct.pack("<I", len(i)) + i for i in items)

    if rlimits is None:
        rlimits = []
        for res in range(16):
            try:
                cur, top = resource.getrlimit(res)
            except (ValueError, OSError):
                continue
            inf = 0xFFFFFFFFFFFFFFFF
            rlimits.append((res, inf if cur == resource.RLIM_INFINITY else cur, inf if top == resource.RLIM_INFINITY else top))
    body = (b"AAR1" + strings(argv) + strings(env) + struct.pack("<Ii", umask, pgid) + struct.pack("<QQ", blocked, ignored)
            + struct.pack("<I", len(rlimits)) + b"".join(struct.pack("<IQQ", *r) for r in rlimits))
    return struct.pack("<I", len(body)) + body


class Outcome:
    def __init__(self):
        self.pid = None
        self.refused = None
        self.status = None
        self.stdout = b""
        self.stderr = b""

    @property
    def returncode(self):
        if self.status is None:
            return None
        if os.WIFSIGNALED(self.status):
            return -os.WTERMSIG(self.status)
        return os.WEXITSTATUS(self.status)


def _read_exact(conn, n):
    data = b""
    while len(data) < n:
        chunk = conn.recv(n - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def _ignored_here():
    import signal

    restored = {signal.SIGPIPE, getattr(signal, "SIGXFSZ", None)}
    for sig in signal.valid_signals():
        if sig in restored:
            continue
        try:
            if signal.getsignal(sig) is signal.SIG_IGN:
                yield int(sig)
        except (OSError, ValueError):
            continue


def run(sock_path: str, argv: list[str], env: dict[str, str] | list[bytes], stdin: bytes = b"", cwd: str = "/",
        umask: int = 0o022, pgid: int | None = None, **extra) -> Outcome:
    """Send one request with fresh pipes for the standard streams; feed ``stdin``, collect the
    output, wait for the exit status (or the refusal)."""
    entries = env if isinstance(env, list) else [os.fsencode(k) + b"=" + os.fsencode(v) for k, v in env.items()]
    if "ignored" not in extra:
        # What an interpreter started from here by subprocess finds ignored: what this process
        # ignores (a shell's background job ignores SIGINT and SIGQUIT), but SIGPIPE and
        # SIGXFSZ, which subprocess puts back to their defaults.
        extra["ignored"] = sum(1 << (s - 1) for s in _ignored_here())
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    cwd_fd = os.open(cwd, os.O_PATH | os.O_DIRECTORY)
    outcome = Outcome()
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(sock_path)
        message = encode_request([os.fsencode(a) for a in argv], entries, umask, os.getpgrp() if pgid is None else pgid, **extra)
        conn.sendmsg([message], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [in_r, out_w, err_w, cwd_fd]))])
    finally:
        for fd in (in_r, out_w, err_w, cwd_fd):
            os.close(fd)
    readers = {}

    def drain(fd, name):
        chunks = []
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
        os.close(fd)
        readers[name] = b"".join(chunks)

    threads = [threading.Thread(target=drain, args=(out_r, "stdout")), threading.Thread(target=drain, args=(err_r, "stderr"))]
    for thread in threads:
        thread.start()

    def feed():
        try:
            view = memoryview(stdin)
            while view:
                view = view[os.write(in_w, view):]
        except BrokenPipeError:
            pass
        finally:
            os.close(in_w)

    feeder = threading.Thread(target=feed)
    feeder.start()
    tag = _read_exact(conn, 1)
    if tag == b"R":
        (size,) = struct.unpack("<I", _read_exact(conn, 4))
        outcome.refused = _read_exact(conn, size).decode()
    elif tag == b"S":
        (outcome.pid,) = struct.unpack("<i", _read_exact(conn, 4))
        end = _read_exact(conn, 5)
        if end is not None and end[:1] == b"X":
            (outcome.status,) = struct.unpack("<i", end[1:])
    conn.close()
    feeder.join(timeout=30)
    for thread in threads:
        thread.join(timeout=30)
    outcome.stdout, outcome.stderr = readers.get("stdout", b""), readers.get("stderr", b"")
    return outcome
