"""The remote runner's host side: installing its files, then keeping it for as long as its SSH
channel lasts.  Runs on a managed node, by the interpreter the modules name, with only the
standard library (docs/runner-ssh.md).

``INSTALL`` is run as ``PYTHON -I -S -c INSTALL REMOTE_TMP RUN KEY`` with the runner's files
packed on standard input: it makes the private directories ``REMOTE_TMP/ansible-accel-UID/RUN``
(mode 0700, checked with ``lstat``: a directory, the user's, not a link, nobody else's access)
and ``.../RUN/KEY`` (new, 0700), writes each file in it with ``O_EXCL | O_NOFOLLOW`` and mode
0600, and prints one JSON line: ``{"ok": true, "dir": ..., "client": ...}`` or ``{"ok": false,
"reason": ...}``.  Among the files may be ``client``, the native client program: it is made
executable (0700) and kept only if it runs here and answers its probe (this machine's
architecture and C library, a remote tmp that allows executing files); ``client`` in the answer
says which client the host's modules go through, ``native`` or ``python`` (``client.py``).

This file, shipped as ``remote.py``, is then run as ``PYTHON -I -S DIR/remote.py DIR IDLE``
through an SSH command whose standard input carries no data and ends when the controller's run
ends (the *keeper*, docs/runner-ssh.md).  It starts the runner (``server.py``, the local runner's
server) with the environment this command started with, a pipe as its lifeline, and watches:

- standard input at end-of-file (the controller's run ended, or the connection dropped);
- the runner's process ended (killed, or it could not start);
- the directory removed, or the socket replaced;
- no request for IDLE seconds (the runner's context switches stand still, and no module it
  started still runs).

It also takes the steps ansible-core runs around a module without pipelining, and runs modules
that come without an SSH command of their own (``X``: ``start_module``, ``_Relay``), on a socket of its
own (``STEPS``, 0600 in the 0700 directory, peers of its own uid only), which the controller
reaches through its ``ControlPersist`` connection (``ssh -O forward``): the remote tmp's
expansion, the task's directory made, a file written, the directory removed, each done here in
this process, or declined with nothing left undone that the ordinary command would not redo
(docs/runner-ssh.md#steps-by-the-keeper).  A request is one byte (its kind), one byte (how many
fields), and each field as four bytes of length (little-endian) and its bytes; the answer is
``0`` and one field (done, with its value) or ``1`` and one field (declined, and why).  It
writes ``steps`` once the socket listens.

Any of them ends the runner (its lifeline closed, then SIGKILL if it lingers), removes the
directory and ends this process, whose end closes the SSH channel.  On its standard output, which
the controller keeps, it writes ``ready`` once the runner listens, ``fallback: REASON`` for each
line the clients or the runner append to the socket's fallback file (a module handed over that
ran the ordinary way after all), ``modside: JSON`` for each module run's module-side counts
(``_runner_modside.flush``), and ``ended: WHY`` last.

One file, longer than most here for a reason: it is shipped to the host as is and run there
in isolated mode without ``site``, where nothing beside it is importable.
"""

import os
import select
import signal
import stat
import sys
import time

# Written so that interpreters older than the floor parse it (no syntax of 3.8 or later) and
# get the refusal, not a SyntaxError.
INSTALL = r"""
import json, os, stat, sys
def say(**kw):
    sys.stdout.write(json.dumps(kw) + "\n")
    raise SystemExit(0)
if sys.version_info < (3, 8):
    say(ok=False, reason="interpreter %d.%d is older than the runner supports (3.8)" % sys.version_info[:2])
data = sys.stdin.buffer.read()
try:
    uid, path = os.getuid(), os.path.expanduser(sys.argv[1])
    os.makedirs(path, 0o700, exist_ok=True)
    for part in ("ansible-accel-%d" % uid, sys.argv[2]):
        path = os.path.join(path, part)
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            pass
        info = os.lstat(path)
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != uid or info.st_mode & 0o077:
            say(ok=False, reason="not a private directory: " + path)
    rdir = os.path.join(path, sys.argv[3])
    if len(os.fsencode(os.path.join(rdir, "r.sock.4194304.tmp"))) > 107:
        say(ok=False, reason="the remote tmp's path is too long for the runner's socket", path=rdir)
    if os.path.lexists(rdir):
        for name in os.listdir(rdir):
            os.unlink(os.path.join(rdir, name))
        os.rmdir(rdir)
    os.mkdir(rdir, 0o700)
    pos, count = 4, int.from_bytes(data[:4], "little")
    for _ in range(count):
        size = int.from_bytes(data[pos:pos + 4], "little")
        name = data[pos + 4:pos + 4 + size].decode()
        pos += 4 + size
        size = int.from_bytes(data[pos:pos + 4], "little")
        fd = os.open(os.path.join(rdir, name), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data[pos + 4:pos + 4 + size])
        pos += 4 + size
    if pos != len(data):
        say(ok=False, reason="the runner's files arrived cut short")
except OSError as ex:
    say(ok=False, reason="the remote tmp is not usable: " + (ex.strerror or type(ex).__name__), path=str(ex.filename))
client, native = os.path.join(rdir, "client"), False
if os.path.exists(client):
    try:
        os.chmod(client, 0o700)
        out, (read, write) = b"", os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                os.close(read)
                os.dup2(write, 1)
                os.execv(client, [client, "--probe"])
            finally:
                os._exit(127)
        os.close(write)
        while True:
            chunk = os.read(read, 64)
            if not chunk:
                break
            out += chunk
        os.close(read)
        native = os.waitpid(pid, 0)[1] == 0 and out == b"ansible-accel-run 1\n"  # protocol version 1
    except OSError:
        pass
    if not native:
        os.unlink(client)
say(ok=True, dir=rdir, client="native" if native else "python")
"""

SOCKET = "r.sock"
STEPS = "s.sock"
PROBE = "r.probe"
POLL = 0.2  # seconds between two looks at the runner, its directory and its fallback file
LINGER = 10  # seconds the runner has to end once its lifeline is closed


def pack(files):
    """The runner's files as INSTALL reads them: count, then (name, data) each, sizes u32 LE."""
    out = len(files).to_bytes(4, "little")
    for name, data in files.items():
        encoded = name.encode()
        out += len(encoded).to_bytes(4, "little") + encoded + len(data).to_bytes(4, "little") + data
    return out


def _say(line):
    try:
        os.write(1, line.encode("utf-8", "replace") + b"\n")
    except OSError:
        pass  # the channel is gone: its end is being handled


def _switches(pid):
    """The runner's context switches: they grow with every request it takes."""
    try:
        with open(f"/proc/{pid}/status", "rb") as handle:
            for line in handle:
                if line.startswith(b"voluntary_ctxt_switches:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return None


def _has_children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children", "rb") as handle:
            return bool(handle.read().split())
    except OSError:
        pass
    for name in os.listdir("/proc"):  # a kernel without that file: look for them by parent
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                if name.isdigit() and int(handle.read().rsplit(b")", 1)[1].split()[1]) == pid:
                    return True
        except (OSError, ValueError, IndexError):
            continue
    return False


class _Lines:
    """Says the lines appended to one of the socket's files since the last look, each after
    ``prefix``: the fallback file, and the module-side counts file (``SOCKET.modside``, one JSON
    line per module run)."""

    def __init__(self, path, prefix):
        self.path, self.prefix, self.offset, self.partial = path, prefix, 0, b""

    def forward(self):
        try:
            with open(self.path, "rb") as handle:
                handle.seek(self.offset)
                data = handle.read()
        except OSError:
            return
        self.offset += len(data)
        *lines, self.partial = (self.partial + data).split(b"\n")
        for line in lines:
            if line.strip():
                _say(self.prefix + line.decode("utf-8", "replace"))


# --- the steps around a module, taken on the keeper's own socket ---------------------------------

STEP_LIMIT = 64 << 20  # the largest request the keeper reads (a file written: its bytes and path)


def _steps_listener(rdir):
    """The keeper's steps socket, listening (mode 0600), or None where it cannot be made."""
    import socket

    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        listener.bind(os.path.join(rdir, STEPS))
        listener.listen(16)
    except OSError:
        listener.close()
        return None
    finally:
        os.umask(old)
    listener.setblocking(False)
    return listener


def _read_exactly(conn, size):
    data = bytearray(size)
    view, got = memoryview(data), 0
    while got < size:
        count = conn.recv_into(view[got:], min(size - got, 1 << 20))
        if not count:
            raise EOFError("the request ended early")
        got += count
    return bytes(data)


def _field(value):
    return len(value).to_bytes(4, "little") + value


def serve_step(conn):
    """Take one request on ``conn`` (a connection of the steps socket) and answer it; True when
    ``conn`` is kept (a module started: its relay has it)."""
    import socket

    conn.setblocking(True)
    conn.settimeout(10)
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12)
    if int.from_bytes(creds[4:8], sys.byteorder) != os.getuid():
        return  # another user's process: closed without an answer
    conn.sendall(b"A1\n")
    head = _read_exactly(conn, 2)
    fields, total = [], 0
    for _ in range(head[1]):
        size = int.from_bytes(_read_exactly(conn, 4), "little")
        total += size
        if total > STEP_LIMIT:
            raise EOFError("the request is too large")
        fields.append(_read_exactly(conn, size))
    if head[:1] == b"X":
        return start_module(conn, fields)
    try:
        answer = b"0" + _field(take_step(head[:1], fields))
    except _Declined as ex:
        answer = b"1" + _field(str(ex).encode("utf-8", "replace"))
    except OSError as ex:
        answer = b"1" + _field((ex.strerror or type(ex).__name__).encode("utf-8", "replace"))
    conn.sendall(answer)
    return False


class _Declined(Exception):
    pass


def take_step(kind, fields):
    """Do one step; its value (bytes), or raise ``_Declined`` or ``OSError`` (declined: the
    controller then runs ansible-core's own command, which redoes whatever was done here)."""
    if kind == b"E":  # echo ~ / echo ~USER, as the shell expands it
        word = os.fsdecode(fields[0])
        if word == "~":
            home = os.environ.get("HOME")
            if home is None:
                import pwd

                home = pwd.getpwuid(os.getuid()).pw_dir
        else:
            import pwd

            try:
                home = pwd.getpwnam(word[1:]).pw_dir
            except KeyError:
                raise _Declined("no such user") from None
        return os.fsencode(home)
    paths = [os.fsdecode(field) for field in fields[:1 if kind in b"WV" else 2]]
    if not all(path.startswith("/") for path in paths):
        raise _Declined("a relative path")
    if kind == b"M":  # ( umask 77 && mkdir -p BASE && mkdir BASE/NAME )
        base, made = paths
        old = os.umask(0o077)
        try:
            os.makedirs(base, exist_ok=True)
            os.mkdir(made)
        finally:
            os.umask(old)
        return b""
    if kind in b"WV":  # what sftp's put does: open for writing, created or truncated, with its mode
        data = fields[2] if kind == b"W" else _rebuild(fields[2])  # V: the bytes given by their parts
        fd = os.open(paths[0], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, int(fields[1]) & 0o777)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
        return b""
    if kind == b"R":  # rm -f -r DIR/
        target = paths[0].rstrip("/") or "/"
        try:
            info = os.lstat(target)
        except FileNotFoundError:
            return b""
        if target == "/" or not stat.S_ISDIR(info.st_mode):
            raise _Declined("not a directory")
        _remove_tree(target)
        return b""
    raise _Declined("an unknown step")


# --- modules run through the keeper, without an SSH command of their own -------------------------

_RDIR = []  # the runner's directory, once supervise() runs
_MEMBERS = {}  # SHA-256 digest: a zip member's bytes, as the controller sent them once
_MEMBERS_SIZE = [0]
MEMBERS_LIMIT = 64 << 20  # bytes of zip members kept, at most
RUNNER_LIMIT = 256  # modules running through the keeper at once
_relays = []


def _strings(items):
    return len(items).to_bytes(4, "little") + b"".join(_field(item) for item in items)


def _snapshot_parts(data):
    """(working directory, the request's part after argv up to the process group, the part
    after it, the terminal's settings or b"") of a snapshot the client printed (``client.py
    --snapshot``)."""
    if data[:4] != b"AAS1":
        raise _Declined("a snapshot of another format")
    parts, at = [], 4
    for _ in range(4):
        size = int.from_bytes(data[at:at + 4], "little")
        if at + 4 + size > len(data):
            raise _Declined("a snapshot cut short")
        parts.append(data[at + 4:at + 4 + size])
        at += 4 + size
    return parts


def _environ_of(middle):
    count, at, entries = int.from_bytes(middle[:4], "little"), 4, []
    for _ in range(count):
        size = int.from_bytes(middle[at:at + 4], "little")
        entries.append(middle[at + 4:at + 4 + size])
        at += 4 + size
    return entries


class _Parts:
    """Bytes given by their parts (frames ``B``, ``Z``, ``N``, ``H``, ``b``; docs on
    ``_Relay``): a zip in base64 whose members this keeper may hold from before."""

    def __init__(self):
        self.zip = bytearray()

    def take(self, kind, chunk):
        """The bytes this part adds to what is rebuilt (the zip's base64 at its end)."""
        if kind == b"B":
            self.zip = bytearray()
        elif kind in b"ZN":
            self.zip += chunk
            if kind == b"N":
                _keep_member(chunk)
        elif kind == b"H":
            self.zip += _MEMBERS[chunk]
        elif kind == b"b":
            import binascii

            done, self.zip = bytes(self.zip), bytearray()
            return binascii.b2a_base64(done, newline=False)
        return b""


def _rebuild(frames):
    """The bytes of a whole run of frames (``I`` and the parts of a zip), or ``_Declined`` when
    one names a member not held here."""
    out, parts, at = bytearray(), _Parts(), 0
    while at + 5 <= len(frames):
        kind, size = frames[at:at + 1], int.from_bytes(frames[at + 1:at + 5], "little")
        chunk, at = frames[at + 5:at + 5 + size], at + 5 + size
        if kind == b"H" and chunk not in _MEMBERS:
            raise _Declined(NOT_KEPT)
        out += chunk if kind == b"I" else parts.take(kind, chunk)
    return bytes(out)


NOT_KEPT = "a zip member not kept here"


def _keep_member(data):
    import hashlib

    if _MEMBERS_SIZE[0] + len(data) <= MEMBERS_LIMIT:
        _MEMBERS[hashlib.sha256(data).digest()] = data
        _MEMBERS_SIZE[0] += len(data)


def _set_terminal(slave, settings):
    """The snapshot's terminal settings (``client._terminal``) on the new terminal."""
    import fcntl
    import termios

    flags = [int.from_bytes(settings[at:at + 4], "little") for at in range(0, 24, 4)]
    chars = [bytes([c]) for c in settings[32:]]
    termios.tcsetattr(slave, termios.TCSANOW, [*flags, chars])
    fcntl.ioctl(slave, termios.TIOCSWINSZ, settings[24:32])


def _with_tty(middle, name):
    """The environment part of a request with ``SSH_TTY`` naming this module's terminal."""
    entries = [b"SSH_TTY=" + os.fsencode(name) if e.startswith(b"SSH_TTY=") else e for e in _environ_of(middle)]
    return _strings(entries) + middle[-4:]


def _module_request(fields):
    """The fields of an ``X`` request checked: (shell, suffix, argv, terminal, the snapshot's
    parts), the kept ``chmod`` made; raises ``_Declined`` (nothing ran)."""
    if len(fields) < 7:
        raise _Declined("a request without a module")
    shell, suffix, refs, argv = os.fsdecode(fields[0]), os.fsdecode(fields[1]), fields[3], fields[6:]
    terminal = fields[4] == b"1"
    if any(refs[at:at + 32] not in _MEMBERS for at in range(0, len(refs), 32)):
        raise _Declined(NOT_KEPT)
    if not shell.startswith("/") or os.path.basename(os.path.realpath(shell)) != "dash":
        raise _Declined("a shell other than dash")
    if os.path.basename(os.path.realpath(_login_shell())) not in ("bash", "dash"):
        raise _Declined("a login shell other than bash or dash")
    if len(_relays) >= RUNNER_LIMIT:
        raise _Declined("too many modules running through the keeper")
    parts = _snapshot_parts(fields[2])
    if terminal and len(parts[3]) < 32:
        raise _Declined("no terminal in the process state")
    for path in fields[5].split(b"\0") if fields[5] else ():  # chmod u+rwx PATH..., as the command's
        try:
            os.chmod(path, stat.S_IMODE(os.stat(path).st_mode) | 0o700)
        except OSError as ex:
            raise _Declined("chmod: " + (ex.strerror or type(ex).__name__)) from None
    return shell, suffix, argv, terminal, parts


def _hand_to_runner(runner, body: bytes, fds: list) -> None:
    """Send the runner the request ``body`` with the descriptors ``fds``; return once it
    started the module, or raise ``_Declined`` with why it did not."""
    import socket

    try:
        runner.connect(os.path.join(_RDIR[0], SOCKET))
        request = len(body).to_bytes(4, "little") + body
        rights = b"".join(fd.to_bytes(4, sys.byteorder, signed=True) for fd in fds)
        sent = runner.sendmsg([request], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, rights)])
        if sent < len(request):
            runner.sendall(request[sent:])
        head = _read_exactly(runner, 5)
        reason = _read_exactly(runner, min(int.from_bytes(head[1:], "little"), 65536)) if head[:1] == b"R" else b""
    except (OSError, EOFError) as ex:
        raise _Declined("the runner did not answer: " + (getattr(ex, "strerror", None) or type(ex).__name__)) from None
    if head[:1] == b"R":
        raise _Declined("the runner: " + reason.decode("utf-8", "replace"))
    if head[:1] != b"S":
        raise _Declined("the runner sent an invalid reply")


def start_module(conn, fields):
    """``X``: SHELL, SUFFIX, SNAPSHOT, REFS, TERMINAL, CHMOD, then the module's argv.  Run the module
    through the runner as the command ``SHELL -c '[NAME=VALUE...] PYTHON [SCRIPT]SUFFIX'`` would
    run it, with the process state of SNAPSHOT (what the client printed for a command of that
    shape on this connection) and three new pipes, or with TERMINAL (``1``) a new terminal with
    the snapshot's settings, as sshd makes for ``ssh -tt``, its name in ``SSH_TTY``; CHMOD
    names files (separated by NUL) to ``chmod u+rwx`` first, as the module's command would,
    declining if that fails; answer ``0`` once the runner started it (its output and exit
    status follow as frames, ``_Relay``) or ``1`` and why not (nothing ran).  REFS are
    the SHA-256 digests (32 bytes each) of the kept zip members its standard input names
    (``_Relay``): one this keeper does not hold declines it.  True: the connection is the
    relay's."""
    import socket

    try:
        shell, suffix, argv, terminal, (cwd, middle, tail, settings) = _module_request(fields)
        runner = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    except _Declined as ex:
        conn.sendall(b"1" + _field(str(ex).encode("utf-8", "replace")))
        return False
    ours, theirs = [], []
    try:
        try:
            theirs.append(os.open(cwd, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC))
        except OSError as ex:
            raise _Declined("no working directory: " + (ex.strerror or "")) from None
        conn.settimeout(None)
        if terminal:
            master, slave = os.openpty()
            ours += [None, master, None, slave]  # the slave is kept for the shell's last words
            theirs[:0] = [slave] * 3
            _set_terminal(slave, settings)
            middle = _with_tty(middle, os.ttyname(slave))
        else:
            stdin_r, stdin_w = os.pipe2(os.O_CLOEXEC)
            theirs.insert(0, stdin_r)
            ours.append(stdin_w)
            for _ in range(2):  # standard output and error
                read_end, write_end = os.pipe2(os.O_CLOEXEC)
                theirs.insert(-1, write_end)
                ours.append(read_end)
        _hand_to_runner(runner, b"AAR1" + _strings(argv) + middle + (0).to_bytes(4, "little") + tail, theirs)
    except (_Declined, OSError) as ex:
        runner.close()
        for fd in set(ours + theirs) - {None}:
            os.close(fd)
        why = str(ex) if isinstance(ex, _Declined) else (ex.strerror or type(ex).__name__)
        conn.sendall(b"1" + _field(why.encode("utf-8", "replace")))
        return False
    for fd in set(theirs) - set(ours):
        os.close(fd)
    relay = _Relay(conn, runner, ours, (shell, suffix), _environ_of(middle))
    try:
        conn.sendall(b"0" + _field(b""))
    except OSError:
        relay.controller_gone()
    _relays.append(relay)
    relay.start()
    return True


class _Relay:
    """One module's streams between its pipes and the controller's connection: frames of one
    byte of kind, four of length (little-endian) and the data.  From the controller: ``I``
    (standard input), ``E`` (its end), and standard input that holds a zip in base64 given
    by its parts: ``B`` (a zip begins), ``Z`` (its bytes), ``N`` (a member's bytes, kept
    here by their digest for later modules), ``H`` (a kept member, by its digest), ``b`` (the
    zip ends: its base64 goes to standard input).  To it: ``O`` (standard output), ``e``
    (standard error),
    then ``X`` and the command's exit status (four bytes) once the module ended and its output
    pipes reached their end, as sshd sends them: a module killed by a signal gives 128 + its
    number and the shell's line about it, as the command would (``_shell_says``).  The
    controller going away closes the module's pipes, as sshd closes a channel's; the module
    then runs on to its end as it would there.  On a terminal, everything the module and the
    shell print is standard output, read from the terminal until the module ended and then
    what is left in it; nothing reaches the module's input (ansible-core sends none)."""

    def __init__(self, conn, runner, fds, shell, environ):
        self.conn, self.runner, self.shell, self.environ = conn, runner, shell, environ
        self.stdin, out, err, *kept = fds
        self.terminal = kept[0] if kept else None  # the terminal's slave, kept for the shell's last words
        self.said = None  # (status, b"") once the shell's last words went to the terminal
        self.outputs = {out: b"O", err: b"e"} if err is not None else {out: b"O"}
        self.pending, self.eof, self.inbuf, self.status, self.open = bytearray(), False, bytearray(), None, True
        self.parts = _Parts()

    def start(self):
        import socket
        import threading

        self.waitall = socket.MSG_WAITALL
        if self.stdin is not None:
            os.set_blocking(self.stdin, False)
        threading.Thread(target=self.run, name="module relay", daemon=True).start()

    def controller_gone(self):
        self.open = False
        self._close_stdin()
        for fd in list(self.outputs):
            os.close(fd)
        self.outputs.clear()

    def _close_stdin(self):
        if self.stdin is not None:
            os.close(self.stdin)
            self.stdin, self.pending = None, bytearray()

    def _send(self, kind, data):
        if self.open:
            try:
                self.conn.sendall(kind + len(data).to_bytes(4, "little") + data)
            except OSError:
                self.controller_gone()

    def _from_controller(self):
        try:
            data = self.conn.recv(1 << 16)
        except OSError:
            data = b""
        if not data:
            self.controller_gone()
            return
        self.inbuf += data
        while len(self.inbuf) >= 5:
            size = int.from_bytes(self.inbuf[1:5], "little")
            if len(self.inbuf) < 5 + size:
                break
            kind, chunk = self.inbuf[:1], bytes(self.inbuf[5:5 + size])
            del self.inbuf[:5 + size]
            if kind == b"I" and self.stdin is not None:
                self.pending += chunk
            elif kind == b"E":
                self.eof = True
            elif kind in b"BZNHb":
                rebuilt = self.parts.take(kind, chunk)
                if self.stdin is not None:
                    self.pending += rebuilt

    def _feed(self):
        try:
            written = os.write(self.stdin, self.pending[:1 << 16])
            del self.pending[:written]
        except BlockingIOError:
            pass
        except OSError:  # the module closed its standard input: the rest is dropped, as sshd drops it
            self._close_stdin()

    def run(self):
        try:
            self._loop()
        finally:
            _relays.remove(self)
            self.runner.close()
            for fd in list(self.outputs):
                os.close(fd)
            if self.terminal is not None:
                os.close(self.terminal)
            self._close_stdin()
            self.conn.close()

    def _loop(self):
        while self.outputs or self.status is None:
            if self.stdin is not None and self.eof and not self.pending:
                self._close_stdin()
            readable = list(self.outputs) + ([self.conn] if self.open else []) + \
                ([self.runner] if self.status is None else [])
            writable = [self.stdin] if self.stdin is not None and self.pending else []
            try:
                ready, can_write, _ = select.select(readable, writable, [])
            except InterruptedError:
                continue
            if can_write:
                self._feed()
            for item in ready:
                if item is self.conn:
                    self._from_controller()
                elif item is self.runner:
                    head = self.runner.recv(5, self.waitall)
                    self.status = int.from_bytes(head[1:5], "little", signed=True) if len(head) == 5 and \
                        head[:1] == b"X" else -1
                elif item in self.outputs:
                    try:
                        data = os.read(item, 1 << 16)
                    except OSError:  # a terminal whose every slave is closed
                        data = b""
                    if data:
                        self._send(self.outputs[item], data)
                    else:
                        os.close(item)
                        del self.outputs[item]
            if self.terminal is not None and self.status is not None:
                self._end_terminal()
        rc, said = self.said or self._exit_status()
        if said:
            self._send(b"e", said)
        self._send(b"X", rc.to_bytes(4, "little"))

    def _end_terminal(self):
        """The module ended: the shell's last words written to the terminal (which turns them
        as it turns the module's output), then what the terminal holds, to its end."""
        rc, said = self._exit_status()
        self.said = (rc, b"")
        try:
            if said:
                os.write(self.terminal, said)
        except OSError:
            pass
        os.close(self.terminal)
        self.terminal = None
        for fd in list(self.outputs):
            os.set_blocking(fd, False)
            while True:
                try:
                    data = os.read(fd, 1 << 16)
                except OSError:  # drained (EAGAIN: a process the module started holds it), or ended (EIO)
                    break
                if not data:
                    break
                self._send(self.outputs[fd], data)
            os.close(fd)
            del self.outputs[fd]

    def _exit_status(self):
        status = self.status
        if status == -1:  # as the client ends when the runner is gone before telling
            return 1, b"ansible-accel-run: the runner ended before the module's exit status was known\n"
        if os.WIFEXITED(status):
            return os.WEXITSTATUS(status), b""
        sig = os.WTERMSIG(status)
        said = _shell_says(*self.shell, sig, self.environ)
        if said.endswith(b"\n") and os.WCOREDUMP(status):
            said = said[:-1] + b" (core dumped)\n"
        return 128 + sig, said


def _login_shell():
    import pwd

    return pwd.getpwuid(os.getuid()).pw_shell or "/bin/sh"


def _shell_says(shell, suffix, sig, environ):
    """What the command ``SHELL -c 'PROGRAM[SUFFIX]'`` started by sshd through the user's login
    shell prints on its standard error when PROGRAM is killed by ``sig`` (without a core dump),
    in the module's environment (its locale names the signal): found by running that, with a
    PROGRAM that kills itself so."""
    import shlex
    import subprocess

    env = {}
    for entry in environ:
        name, _, value = entry.partition(b"=")
        env.setdefault(name, value)
    program = f"{shell} -c {shlex.quote(f'kill -{sig} $$')}"
    login = _login_shell()

    def no_core():
        import resource

        resource.setrlimit(resource.RLIMIT_CORE, (0, resource.getrlimit(resource.RLIMIT_CORE)[1]))

    try:
        done = subprocess.run([os.path.basename(login), "-c", f"{shell} -c {shlex.quote(program + suffix)}"],
                              executable=login, env=env, cwd="/", stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, preexec_fn=no_core, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return b""
    return done.stderr


def _remove_tree(path):
    with os.scandir(path) as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                _remove_tree(entry.path)
            else:
                os.unlink(entry.path)
    os.rmdir(path)


def _take_steps(listener):
    """Every request waiting on the steps socket; whether there was any."""
    took = False
    while True:
        try:
            conn, _ = listener.accept()
        except (BlockingIOError, InterruptedError):
            return took
        except OSError:
            return took
        took = True
        kept = False
        try:
            kept = serve_step(conn)
        except (OSError, EOFError):
            pass  # the controller sees no answer: it treats the step as unknown
        finally:
            if not kept:
                conn.close()


def _start_runner(rdir):
    with open("/proc/self/environ", "rb") as handle:
        env_bytes = handle.read().rstrip(b"\0")
    fd = os.open(os.path.join(rdir, PROBE + ".env"), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    os.write(fd, env_bytes)
    os.close(fd)
    # The environment this command started with: this interpreter coerced a C locale in its own
    # (LC_CTYPE); the runner's interpreter must do that itself, as the modules' do.
    env = dict(e.split(b"=", 1) for e in env_bytes.split(b"\0") if b"=" in e)
    lock = os.open(os.path.join(rdir, "r.lock"), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    lifeline_read, lifeline_write = os.pipe()
    argv = [sys.executable, os.path.join(rdir, "server.py"), os.path.join(rdir, SOCKET), str(lifeline_read),
            str(lock), os.path.join(rdir, PROBE), os.path.join(rdir, "r.log")]
    pid = os.fork()
    if pid == 0:
        try:
            os.close(lifeline_write)
            os.set_inheritable(lifeline_read, True)
            os.set_inheritable(lock, True)
            for sig in (signal.SIGPIPE, signal.SIGXFSZ):  # as sshd started this command
                signal.signal(sig, signal.SIG_DFL)
            os.execve(sys.executable, argv, env)
        finally:
            os._exit(127)
    os.close(lifeline_read)
    os.close(lock)
    return pid, lifeline_write


def _ended(pid):
    """Why the runner's process ended, or None while it runs."""
    try:
        done, status = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return "the runner's process ended"
    if done == 0:
        return None
    if os.WIFSIGNALED(status):
        return f"the runner was killed (signal {os.WTERMSIG(status)})"
    return f"the runner ended (status {os.WEXITSTATUS(status)})"


def supervise(rdir, idle):
    _RDIR[:] = [rdir]
    sock = os.path.join(rdir, SOCKET)
    own = os.lstat(rdir).st_ino
    stop = []
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda number, _frame: stop.append(f"signal {number}"))
    listener = _steps_listener(rdir)
    if listener is not None:
        _say("steps")
    pid, lifeline = _start_runner(rdir)
    fallbacks, counts = _Lines(sock + ".fallbacks", "fallback: "), _Lines(sock + ".modside", "modside: ")
    ready_inode, why = None, None
    switches, quiet_since = _switches(pid), time.monotonic()
    watched = [0] if listener is None else [0, listener]
    last_look = 0.0
    while why is None:
        try:
            readable, _, _ = select.select(watched, [], [], POLL)
        except InterruptedError:
            readable = []
        if stop:
            why = stop[0]
            break
        if 0 in readable and not os.read(0, 4096):
            why = "the channel ended"
            break
        if listener is not None and listener in readable and _take_steps(listener):
            quiet_since = time.monotonic()
            if quiet_since - last_look < POLL:
                continue  # the rest is looked at every POLL seconds, steps or not
        last_look = time.monotonic()
        fallbacks.forward()
        counts.forward()
        why = _ended(pid)
        if why is not None:
            pid = None
            break
        try:
            if os.lstat(rdir).st_ino != own:
                why = "its directory was replaced"
            elif ready_inode is None and os.path.exists(sock):
                ready_inode = os.stat(sock).st_ino
                _say("ready")
            elif ready_inode is not None and os.stat(sock).st_ino != ready_inode:
                why = "its socket was removed"
        except OSError:
            why = "its directory was removed"
        now, seen = time.monotonic(), _switches(pid)
        if seen != switches:
            switches, quiet_since = seen, now
        elif now - quiet_since > idle:
            if _has_children(pid):  # a module still runs: its client waits for its end
                quiet_since = now
            else:
                why = f"idle for {idle:g} s"
    os.close(lifeline)
    if pid is not None:
        deadline = time.monotonic() + LINGER
        while _ended(pid) is None and time.monotonic() < deadline:
            time.sleep(0.02)
        if _ended(pid) is None:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
    fallbacks.forward()
    counts.forward()
    try:
        with open(sock + ".failed", "rb") as handle:
            _say("failed: " + handle.read().decode("utf-8", "replace").strip().replace("\n", " "))
    except OSError:
        pass
    _say("ended: " + why)  # before the directory goes: a worker reading this starts another runner
    _remove(rdir, own)


def _remove(rdir, own):
    """Remove the runner's directory (flat: its files and sockets), if it is still this one."""
    try:
        if os.lstat(rdir).st_ino != own:
            return
        for name in os.listdir(rdir):
            try:
                os.unlink(os.path.join(rdir, name))
            except OSError:
                pass
        os.rmdir(rdir)
    except OSError:
        pass


def main():
    rdir, idle = sys.argv[1], float(sys.argv[2])
    os.chdir("/")
    supervise(rdir, idle)


if __name__ == "__main__":
    main()
