"""Modules that reach the host's runner through its keeper, without an SSH command of their own
(``remote_runner`` path; docs/runner-ssh.md#modules-through-the-keeper).
``ANSIBLE_ACCEL_REMOTE_DIRECT=0`` leaves them to SSH commands.

A pipelined module's command, ``/bin/sh -c '[NAME=VALUE...] PYTHON[ && sleep 0]'``, costs the
host a channel of its own (sshd's process for it, the login shell, ``sh``, ``sleep``) and the
runner's client, to run a module the runner starts by a fork.  Once a host has a runner and its
keeper listens on its socket (which the controller reaches through the ``ControlPersist``
connection, ``ssh_keeper_steps``), such a module goes to the keeper instead: the keeper makes
the module's pipes, hands them to the runner with the process state a command of that shape
gets on this connection, and relays its standard streams and exit status.

The process state (working directory, environment in its order, umask, signal mask, ignored
signals, resource limits) is what the runner's client prints with ``--snapshot`` when run by a
command of the module's very shape (the same shell, assignments and interpreter) on the same
connection, twice: the shape goes the ordinary way if the two differ (a login shell whose
start-up files change the environment from one command to the next), if either printed anything
else or failed (``sleep`` not found, for one).  The keeper takes only a shell that is ``dash``
under a login shell that is ``bash`` or ``dash``: what they print of a module killed by a signal
names no pid or command, and the keeper has them print it (below).

A module without pipelining has no input and its command asks for a terminal (``-tt``): the
keeper then makes the kept ``chmod`` of the script first, and starts the module on a new
terminal of its own with the settings and window size of the shape's process state (taken by
commands with a terminal), named in ``SSH_TTY``; the worker's terminal is held in raw mode
meanwhile and the ssh client's closing line written as the client writes it.

The script on the module's standard input goes by its parts (``_by_parts``): the zip it carries
in base64 as its headers and members, the members the keeper holds from an earlier module named
by their SHA-256 digest; the keeper rebuilds the same bytes.

The seam is the ``Popen`` of the module's command in ansible-core's ``ssh`` connection
(``ssh_client``): ansible-core's own ``exec_command``, its retries and its reading of the
streams run as ever, on an object with ``Popen``'s interface.  Anything that declines before
the keeper started the module (no forward, a declining keeper or runner, a chmod that failed)
leaves the module to its SSH command, counted by reason; once the request is out, the module
is never run again: a connection lost then ends it with status 255 and nothing more on standard
error, as the ssh client's channel through a master that went away ends.
"""

from __future__ import annotations

import binascii
import hashlib
import io
import os
import re
import select
import shlex
import socket
import struct
import threading

from .. import _counters, _ssh_mux
from .._patches import switched_off

PATH = "remote_runner"
ENV = "ANSIBLE_ACCEL_REMOTE_DIRECT"
DONE = "keeper: a module run (no SSH command)"
BY_PARTS = "keeper: a module's input by its zip's parts"
BY_PARTS_FILE = "keeper: a module's script written from its zip's parts"
APART = "direct apart: "
SUFFIXES = ("", " && sleep 0")  # ansible-core 2.21 and later; 2.19
SHAPES = 16  # process states taken per runner, at most

_planned = threading.local()
NOT_KEPT = "a zip member not kept here"  # the keeper's words
MEMBER_MIN = 256  # a zip member's compressed bytes worth sending once per keeper
_ZIP_BASE64 = re.compile(rb"UEsDB[A-Za-z0-9+/]*={0,2}")  # base64 of a zip, from its first local header


class Planned:
    """What the ``Popen`` of a module's command needs to run it through the keeper."""

    def __init__(self, command: bytes, local: str, fields: list[bytes], stdin: bytes | None, sent, known_file: str,
                 terminal: bool):
        self.command, self.local, self.fields, self.stdin, self.sent, self.known_file = (
            command, local, fields, stdin, sent, known_file)
        self.terminal = terminal


class ByParts:
    """A module's standard input as frames that name the zip members the keeper holds:
    ``frames`` (without the end of input), ``refs`` (the digests named, 32 bytes each),
    ``new`` (the digests of members sent whole, which the keeper will hold)."""

    def __init__(self, frames: bytes, refs: bytes, new: list[bytes]):
        self.frames, self.refs, self.new = frames, refs, new


def _frame(kind: bytes, data: bytes) -> bytes:
    return kind + len(data).to_bytes(4, "little") + data


def _by_parts(payload: bytes, known: set[bytes]) -> ByParts | None:
    """``payload`` (an AnsiBallZ script) as frames in which the zip it carries in base64 is
    given by its parts, each member of ``MEMBER_MIN`` compressed bytes or more by its digest
    where the keeper holds it (``known``), else whole; None where the script carries no such
    zip (one base64 run that decodes to a zip and encodes back to the same bytes, whose local
    headers give each member's size)."""
    best = max(_ZIP_BASE64.finditer(payload), key=lambda m: m.end() - m.start(), default=None)
    if best is None or best.end() - best.start() < 4096:
        return None
    span = payload[best.start():best.end()]
    try:
        data = binascii.a2b_base64(span, strict_mode=True)
    except (binascii.Error, ValueError):
        return None
    pieces = _zip_pieces(data) if binascii.b2a_base64(data, newline=False) == span else None
    if pieces is None:
        return None
    frames, refs, new = [_frame(b"I", payload[:best.start()]), _frame(b"B", b"")], [], []
    for literal, digest, member in pieces:
        if literal:
            frames.append(_frame(b"Z", literal))
        if digest is None:
            continue
        if digest in known:
            frames.append(_frame(b"H", digest))
            refs.append(digest)
        else:
            frames.append(_frame(b"N", member))
            new.append(digest)
    frames += [_frame(b"b", b""), _frame(b"I", payload[best.end():])]
    return ByParts(b"".join(frames), b"".join(refs), new)


def _zip_pieces(data: bytes) -> list[tuple[bytes, bytes | None, bytes]] | None:
    """The zip's bytes as (literal bytes, then a member's digest or None, its compressed bytes),
    in order; None where a local header does not give its member's size (a data descriptor,
    ZIP64) or runs past the end."""
    pieces, at, literal_from = [], 0, 0
    while data.startswith(b"PK\x03\x04", at):
        if at + 30 > len(data):
            return None
        (flags,) = struct.unpack_from("<H", data, at + 6)
        (size,) = struct.unpack_from("<I", data, at + 18)
        name_length, extra_length = struct.unpack_from("<HH", data, at + 26)
        if flags & 0x08 or size == 0xFFFFFFFF:
            return None
        start = at + 30 + name_length + extra_length
        end = start + size
        if end > len(data):
            return None
        if size >= MEMBER_MIN:
            member = data[start:end]
            pieces.append((data[literal_from:start], hashlib.sha256(member).digest(), member))
            literal_from = end
        at = end
    pieces.append((data[literal_from:], None, b""))
    return pieces


def known_record(local: str) -> str:
    """The record of what the keeper behind the forward ``local`` holds (this run's)."""
    return local + ".known"


def _known(path: str) -> set[bytes]:
    """The digests of the zip members the keeper holds, as this run's controller sent them."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError:
        return set()
    return {data[at:at + 32] for at in range(0, len(data) - len(data) % 32, 32)}


def _note_known(path: str, digests: list[bytes]) -> None:
    if digests:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
            try:
                os.write(fd, b"".join(digests))
            finally:
                os.close(fd)
        except OSError:
            pass


def _forget_known(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def plan(connection, cmd: str, parsed, rdir: str, in_data, sudoable, routed: str) -> None:
    """The module of ``cmd`` goes to the runner in ``rdir`` by the command ``routed``: note
    what its ``Popen`` needs to run it through the keeper instead, or count why it cannot."""
    from . import ssh_keeper_steps

    _planned.entry = None
    if switched_off(ENV):
        return
    assignments, interpreter, script, suffix = parsed
    # ansible-core's ssh connection asks for a terminal (-tt) for a command without input
    terminal = in_data is None and bool(sudoable) and bool(connection.get_option("use_tty"))
    if not _popen_patched():
        why = "ssh_client switched off"
    elif in_data is None and not terminal:
        why = "neither input nor a terminal"
    elif suffix not in SUFFIXES:
        why = "not ansible-core's own shell command"
    else:
        why = ssh_keeper_steps._why_not(connection)
    if why is None:
        local, why = ssh_keeper_steps._forwarded(connection)
    if why is None:
        state, why = _process_state(connection, cmd, assignments, interpreter, suffix, rdir, terminal)
    if why is not None:
        if why:
            _counters.extra(PATH, APART + why)
        return
    executable = shlex.split(cmd)[0]
    argv = [interpreter, *([script] if script is not None else [])]
    known_file = known_record(local)
    sent = _by_parts(in_data, _known(known_file)) if in_data is not None else None
    refs = sent.refs if sent is not None else b""
    fields = [executable.encode(), suffix.encode(), state, refs, b"1" if terminal else b"", b"",
              *(os.fsencode(a) for a in argv)]
    _planned.entry = Planned(routed.encode("utf-8", "surrogateescape"), local, fields, in_data, sent, known_file,
                             terminal)


def _popen_patched() -> bool:
    from ansible.plugins.connection import ssh

    from . import ssh_client

    return getattr(getattr(ssh, "subprocess", None), "Popen", None) is ssh_client._popen


def with_chmod(routed: str, folded: str, paths: list[str]) -> None:
    """The module noted for ``routed`` is to run as ``folded`` (its command with a ``chmod
    u+rwx PATHS`` first, ``ssh_steps.fold``): the keeper makes that ``chmod`` before it starts
    the module, and declines if it fails (the folded command then runs, and stops there)."""
    entry = getattr(_planned, "entry", None)
    if entry is not None and entry.command == routed.encode("utf-8", "surrogateescape"):
        entry.command = folded.encode("utf-8", "surrogateescape")
        entry.fields[5] = b"\0".join(os.fsencode(p) for p in paths)


def take(command: bytes):
    """What ``plan`` noted for ``command`` (then forgotten), or None."""
    entry = getattr(_planned, "entry", None)
    _planned.entry = None
    return entry if entry is not None and entry.command == command else None


def open_run(entry, tty: bool, stdin, closing_line: bytes):
    """The module of ``entry`` started through the keeper (an object with ``Popen``'s
    interface), or None: its SSH command runs (counted).  ``tty``, ``stdin`` and
    ``closing_line`` are what the ssh client would have had: whether it asks for a terminal,
    its standard input (``subprocess.PIPE`` for the pipelined script, else a terminal's
    descriptor), the line it writes on standard error as a terminal's channel ends."""
    if tty != entry.terminal:
        why = "a terminal asked for" if tty else "no terminal asked for"
    elif not tty and stdin != -1:  # subprocess.PIPE
        why = "standard input not a pipe"
    elif tty and not (isinstance(stdin, int) and stdin >= 0):
        why = "standard input not a terminal"
    else:
        try:
            run = DirectRun(entry, stdin, closing_line)
        except _ssh_mux.Refused as ex:
            why = str(ex)
            if why.endswith(NOT_KEPT):  # the keeper is not the one the record was made for
                _forget_known(entry.known_file)
        else:
            _counters.extra(PATH, DONE)
            return run
    _counters.extra(PATH, APART + why)
    return None


# --- the process state of a command's shape ----------------------------------------------------------


def _process_state(connection, cmd, assignments, interpreter, suffix, rdir, terminal) -> tuple[bytes | None, str | None]:
    """(the snapshot for this shape on this runner's connection, None) or (None, why not)."""
    from . import ssh_runner

    local_dir = ssh_runner._State.local_dir
    executable = shlex.split(cmd)[0]
    shape = repr((rdir, executable, assignments, interpreter, suffix, terminal)).encode("utf-8", "surrogateescape")
    record = os.path.join(local_dir, "shape-" + hashlib.sha256(shape).hexdigest()[:24])
    try:
        with open(record, "rb") as handle:
            data = handle.read()
    except FileNotFoundError:
        data = None
    except OSError as ex:
        return None, f"its process state unreadable ({ex.strerror})"
    if data is not None:
        if not data:
            return None, "its process state being taken"
        if data.startswith(b"!"):
            return None, data[1:].decode("utf-8", "replace")
        return data, None
    taken = os.path.join(local_dir, "shapes-" + hashlib.sha256(rdir.encode("utf-8", "surrogateescape")).hexdigest()[:24])
    try:
        claim = os.open(record, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except OSError:
        return None, "its process state being taken"
    try:
        with open(taken, "ab") as handle:
            count = handle.tell()
            handle.write(b".")
        if count >= SHAPES:
            state, why = None, f"more than {SHAPES} command shapes on one runner"
        else:
            state, why = _snapshot_twice(connection, executable, assignments, interpreter, suffix, rdir, terminal)
        os.write(claim, state if state is not None else b"!" + why.encode("utf-8", "replace"))
    finally:
        os.close(claim)
    return state, why


def _snapshot_twice(connection, executable, assignments, interpreter, suffix, rdir, terminal) -> tuple[bytes | None, str | None]:
    from . import runner as local_runner
    from . import ssh_runner

    inner = local_runner._join(assignments, [interpreter, "-I", "-S", os.path.join(rdir, "client.py"), "--snapshot"])
    command = f"{executable} -c {shlex.quote(inner + suffix)}"
    seen = []
    for _ in range(2):
        # sudoable: with a terminal as the module's command has one (this command never uses become)
        rc, stdout, stderr = ssh_runner._State.original_exec_command(connection, command, in_data=None, sudoable=terminal)
        try:
            state = bytes.fromhex(stdout.decode("ascii"))
        except ValueError:
            state = b""
        if rc != 0 or not _quiet(stderr, terminal) or not _well_formed(state, terminal):
            return None, f"the host's command printed or failed around the interpreter (status {rc})"
        seen.append(state)
    if _comparable(seen[0]) != _comparable(seen[1]):
        return None, "the host's commands start with process states that differ"
    return seen[0], None


def _comparable(state: bytes) -> list:
    """A snapshot's parts, its environment as entries with ``SSH_TTY``'s value left out: each
    command's terminal has a name of its own (the keeper names the module's)."""
    parts, at = [], 4
    for _ in range(4):
        size = int.from_bytes(state[at:at + 4], "little")
        parts.append(state[at + 4:at + 4 + size])
        at += 4 + size
    middle, entries, at = parts[1], [], 4
    for _ in range(int.from_bytes(middle[:4], "little")):
        size = int.from_bytes(middle[at:at + 4], "little")
        entry = middle[at + 4:at + 4 + size]
        entries.append(b"SSH_TTY=" if entry.startswith(b"SSH_TTY=") else entry)
        at += 4 + size
    return [parts[0], entries, middle[at:], parts[2], parts[3]]


_CLOSING = re.compile(rb"Shared connection to [^\r\n]* closed\.\r\n")


def _quiet(stderr: bytes, terminal: bool) -> bool:
    """Nothing on standard error but, on a terminal's channel, the ssh client's closing line."""
    return not stderr or terminal and _CLOSING.fullmatch(stderr) is not None


def _well_formed(data: bytes, terminal: bool) -> bool:
    if not data.startswith(b"AAS1"):
        return False
    at, sizes = 4, []
    for _ in range(4):
        if at + 4 > len(data):
            return False
        sizes.append(int.from_bytes(data[at:at + 4], "little"))
        at += 4 + sizes[-1]
    return at == len(data) and (sizes[3] >= 32) == terminal


# --- the module's run ---------------------------------------------------------------------------------


class DirectRun(_ssh_mux.PopenLike):
    """A module started by the host's keeper, with ``Popen``'s interface as ansible-core's
    ``ssh`` connection uses it: ``stdin`` (a pipe whose bytes go to the module's standard input),
    ``stdout``, ``stderr``, ``poll``, ``wait``, ``returncode``, ``terminate``.  With a terminal,
    ``stdin`` is the caller's terminal, held in raw mode while the module runs, as the ssh
    client holds its own; nothing is read from it (ansible-core sends nothing there)."""

    def __init__(self, entry: Planned, stdin, closing_line: bytes):
        from . import ssh_keeper_steps

        local, fields = entry.local, entry.fields
        sock = ssh_keeper_steps.greeted(local)
        if sock is None:
            raise _ssh_mux.Refused("the keeper did not answer")
        try:
            sock.sendall(ssh_keeper_steps.request_frame(b"X", fields))
            sock.settimeout(None)
            try:
                head, value = ssh_keeper_steps.read_answer(sock)
            except OSError:
                head, value = b"", b""
        except BaseException:
            sock.close()
            raise
        if head[:1] == b"1":
            sock.close()
            raise _ssh_mux.Refused("declined on the host: " + value.decode("utf-8", "replace"))
        super().__init__()
        stdin_r, held = None, None
        if entry.terminal:
            held = os.dup(stdin)
            saved = _ssh_mux._raw_mode(held)
        else:
            stdin_r, stdin_w = os.pipe2(os.O_CLOEXEC)
            self.stdin = io.open(stdin_w, "wb", -1)
        out_r, out_w = os.pipe2(os.O_CLOEXEC)
        err_r, err_w = os.pipe2(os.O_CLOEXEC)
        self.stdout = io.open(out_r, "rb", -1)
        self.stderr = io.open(err_r, "rb", -1)
        self._sock = sock
        started = head[:1] == b"0"  # anything else: the request went out, and what came of it is not known
        if started and entry.sent is not None:
            _note_known(entry.known_file, entry.sent.new)
        self._relay = _Relay(sock, stdin_r, out_w, err_w, started, entry)
        self._relay.closing_line = closing_line if entry.terminal else b""
        self._relay.terminal = (held, saved) if held is not None else None
        threading.Thread(target=self._follow, name="ansible-accel module relay", daemon=True).start()

    def _follow(self) -> None:
        status = _ssh_mux.EXIT_FAILED
        try:
            status = self._relay.run()
        finally:
            self.returncode = status
            self._done.set()

    def terminate(self) -> None:
        """As the ssh client leaves on SIGTERM: the keeper closes the module's pipes, as sshd
        closes a channel's; the run ends with 255."""
        if not self._done.is_set():
            self._relay.stopped = True
            try:
                self._sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    kill = terminate


class _Relay:
    """The controller's end of a module's frames (``_runner_remote._Relay``): standard input from
    its pipe to the keeper, standard output and error from the keeper to theirs; the exit
    status."""

    def __init__(self, sock, stdin_r, out_w, err_w, started, entry: Planned):
        self.sock, self.stdin, self.stopped, self.started = sock, stdin_r, False, started
        # Standard input given by its parts once what the caller wrote is the script they
        # were made from; else as written.
        self.expected, self.sent, self.written = entry.stdin, entry.sent, bytearray()
        self.closing_line, self.terminal = b"", None  # set by DirectRun for a terminal
        self.outputs = {b"O": out_w, b"e": err_w}
        self.pending = {out_w: bytearray(), err_w: bytearray()}
        for fd in (out_w, err_w):
            os.set_blocking(fd, False)

    def run(self) -> int:
        status = None
        inbuf = bytearray()
        try:
            while self.started and status is None:
                readable = [self.sock] + ([self.stdin] if self.stdin is not None else [])
                writable = [fd for fd, data in self.pending.items() if data]
                ready, can_write, _ = select.select(readable, writable, [])
                for fd in can_write:
                    self._drain(fd)
                if self.stdin is not None and self.stdin in ready:
                    self._forward_stdin()
                if self.sock in ready:
                    data = self.sock.recv(1 << 16)
                    if not data:
                        break
                    inbuf += data
                    status = self._frames(inbuf)
            for fd, data in self.pending.items():
                if data:
                    os.set_blocking(fd, True)
                    self._drain(fd)
        except OSError:
            status = None
        finally:
            self.sock.close()
            if self.stdin is not None:
                os.close(self.stdin)
            if self.terminal is not None:
                held, saved = self.terminal
                if saved is not None:
                    _ssh_mux._cooked(held, saved)
                os.close(held)
            if self.closing_line:
                try:
                    os.write(self.outputs[b"e"], self.closing_line)
                except OSError:
                    pass
            for fd in self.outputs.values():
                os.close(fd)
        return _ssh_mux.EXIT_FAILED if status is None or self.stopped else status & 0xFF

    def _drain(self, fd: int) -> None:
        data = self.pending[fd]
        while data:
            try:
                del data[:os.write(fd, data[:1 << 16])]
            except BlockingIOError:
                return
            except BrokenPipeError:  # the caller closed its end: the rest is dropped
                data.clear()

    def _forward_stdin(self) -> None:
        data = os.read(self.stdin, 1 << 16)
        if self.sent is not None:
            self.written += data
            if data and self.expected.startswith(self.written):
                return
            if not data and self.written == self.expected:
                _counters.extra(PATH, BY_PARTS)
                self.sock.sendall(self.sent.frames + _frame(b"E", b""))
                self._end_stdin()
                return
            held, self.sent = bytes(self.written), None  # not the script: as written, from here on
            if held:
                self.sock.sendall(_frame(b"I", held))
            if data:
                return
        elif data:
            self.sock.sendall(_frame(b"I", data))
            return
        self.sock.sendall(_frame(b"E", b""))
        self._end_stdin()

    def _end_stdin(self) -> None:
        os.close(self.stdin)
        self.stdin = None

    def _frames(self, inbuf: bytearray) -> int | None:
        """Take the whole frames in ``inbuf``: the exit status once it came, else None."""
        while len(inbuf) >= 5:
            size = int.from_bytes(inbuf[1:5], "little")
            if len(inbuf) < 5 + size:
                return None
            kind, data = bytes(inbuf[:1]), bytes(inbuf[5:5 + size])
            del inbuf[:5 + size]
            if kind == b"X" and size == 4:
                return int.from_bytes(data, "little")
            fd = self.outputs.get(kind)
            if fd is not None:
                self.pending[fd] += data
                self._drain(fd)
        return None


