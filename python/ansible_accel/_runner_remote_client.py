"""The runner's client for a host that has only a Python: ``PYTHON -I -S THIS SOCKET INTERPRETER [ARG...]``.

It does on a managed node what the native ``ansible-accel-run`` does on the controller's machine
(docs/runner.md, protocol version 1): it hands its standard streams and working directory (as
file descriptors), its argv, environment, umask, process group, signal mask, ignored signals and
resource limits to the warm runner listening on SOCKET, then stands in for the module's process:
it forwards signals to it, waits for its exit status and ends the same way.  Until the runner
says it started the module, any failure makes it exec ``INTERPRETER [ARG...]`` itself (the
ordinary way, once), the reason appended to ``SOCKET.fallbacks``.

Run by path (or from a descriptor its shell opened, ``/dev/fd/N``, which it closes) by whatever
interpreter the host's modules name (3.8 and later), in isolated mode
without ``site``: it imports only built-in and extension modules (``posix``, ``_signal``,
``_socket``, ``resource``), no pure-Python module of the standard library.

What the interpreter running this file changed in the process before this code runs is undone
or read around: the argv and environment sent (and exec'd on a fallback) are the ones the
process was started with, read from ``/proc/self/cmdline`` and ``/proc/self/environ`` (the
interpreter may have added ``LC_CTYPE`` coercing a C locale); the interpreter ignores SIGPIPE
and SIGXFSZ as it starts, whatever it inherited, so they are reported as not ignored and put
back to their defaults before a fallback's exec: sshd starts a command's shell with every
signal at its default, and the shell changes none.
"""

import _signal
import _socket
import posix
import sys

PROTOCOL = b"AAR1"
REPLY_HEAD = 5
RLIMIT_RESOURCES = 16
RLIM_INFINITY = 0xFFFFFFFFFFFFFFFF
FORWARDED = (_signal.SIGTERM, _signal.SIGHUP, _signal.SIGUSR1, _signal.SIGUSR2, _signal.SIGALRM, _signal.SIGINT,
             _signal.SIGQUIT)
SET_BY_INTERPRETER = (_signal.SIGPIPE, getattr(_signal, "SIGXFSZ", 0))
PROGRAM = "ansible-accel-run"
PROBE_LINE = b"ansible-accel-run 1\n"


class Refused(Exception):
    """The module goes the ordinary way; the message is the reason."""


def _u32(value):
    return value.to_bytes(4, "little")


def _strings(items):
    return _u32(len(items)) + b"".join(_u32(len(item)) + item for item in items)


def _started_with():
    """(the words after this file's path: SOCKET INTERPRETER [ARG...], the environment entries)
    as the process was started."""
    try:
        with open("/proc/self/cmdline", "rb") as handle:
            words = handle.read().split(b"\0")[:-1]
        with open("/proc/self/environ", "rb") as handle:
            environ = handle.read().split(b"\0")[:-1]
    except OSError:
        encoding, errors = sys.getfilesystemencoding(), sys.getfilesystemencodeerrors()
        words = [a.encode(encoding, errors) for a in sys.argv]
        environ = [k + b"=" + v for k, v in posix.environ.items()]
    # words: INTERPRETER_OF_THIS [OPTIONS...] THIS SOCKET INTERPRETER [ARG...]; sys.argv: THIS SOCKET ...
    tail = len(sys.argv) - 1
    return words[len(words) - tail:], environ


def _bitmap(signals):
    bits = 0
    for sig in signals:
        if 0 < int(sig) <= 64:
            bits |= 1 << (int(sig) - 1)
    return bits


def _ignored():
    found = []
    for sig in _signal.valid_signals():
        if sig in SET_BY_INTERPRETER:
            continue
        try:
            if _signal.getsignal(sig) == _signal.SIG_IGN:
                found.append(sig)
        except (OSError, ValueError):
            continue
    return found


def _limits():
    import resource

    entries = []
    for number in range(RLIMIT_RESOURCES):
        try:
            soft, hard = resource.getrlimit(number)
        except (OSError, ValueError):
            continue
        soft = RLIM_INFINITY if soft == resource.RLIM_INFINITY else soft
        hard = RLIM_INFINITY if hard == resource.RLIM_INFINITY else hard
        entries.append(_u32(number) + soft.to_bytes(8, "little") + hard.to_bytes(8, "little"))
    return entries


def _read_exact(conn, size):
    data = b""
    while len(data) < size:
        chunk = conn.recv(size - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def encode_request(argv, environ, umask, pgid, blocked, ignored, limits):
    body = (PROTOCOL + _strings(argv) + _strings(environ) + _u32(umask) + pgid.to_bytes(4, "little", signed=True)
            + blocked.to_bytes(8, "little") + ignored.to_bytes(8, "little") + _u32(len(limits)) + b"".join(limits))
    return _u32(len(body)) + body


def hand_over(sock_path, argv, environ, original_mask):
    """Send the request; the connection and the module's pid once the runner started it."""
    for fd in (0, 1, 2):
        try:
            posix.fstat(fd)
        except OSError:
            raise Refused(f"standard fd {fd} closed") from None
    try:
        cwd = posix.open(".", posix.O_PATH | posix.O_DIRECTORY | posix.O_CLOEXEC)
    except OSError:
        raise Refused("no working directory") from None
    conn = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        try:
            conn.connect(sock_path)
        except OSError as error:
            raise Refused(f"runner not reachable: {error.strerror or error}") from None
        umask = posix.umask(0o077)
        posix.umask(umask)
        request = encode_request(argv, environ, umask, posix.getpgrp(), _bitmap(original_mask), _bitmap(_ignored()),
                                 _limits())
        fds = b"".join(fd.to_bytes(4, sys.byteorder, signed=True) for fd in (0, 1, 2, cwd))
        try:
            sent = conn.sendmsg([request], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, fds)])
            if sent < len(request):
                conn.sendall(request[sent:])
        except OSError as error:
            raise Refused(f"request not sent: {error.strerror or error}") from None
        head = _read_exact(conn, REPLY_HEAD)
        if head is None:
            raise Refused("runner closed the connection")
        value = int.from_bytes(head[1:], "little", signed=True)
        if head[:1] == b"S":
            return conn, value
        if head[:1] == b"R" and 0 <= value <= 65536:
            reason = _read_exact(conn, value)
            if reason is None:
                raise Refused("runner closed the connection")
            raise Refused(reason.decode("utf-8", "replace"))
        raise Refused("runner sent an invalid reply")
    except BaseException:
        conn.close()
        raise
    finally:
        posix.close(cwd)


def fall_back(sock_path, argv, environ, original_mask, reason):
    """Run the module the ordinary way: exec the interpreter as this process was started."""
    line = reason.replace("\n", " ").replace("\r", " ").encode("utf-8", "replace") + b"\n"
    try:
        fd = posix.open(sock_path + b".fallbacks", posix.O_WRONLY | posix.O_APPEND | posix.O_CREAT | posix.O_NOFOLLOW
                        | posix.O_CLOEXEC, 0o600)
        try:
            posix.write(fd, line)
        finally:
            posix.close(fd)
    except OSError:
        pass
    for sig in SET_BY_INTERPRETER:
        if sig:
            _signal.signal(sig, _signal.SIG_DFL)
    env = {}
    for entry in environ:
        name, _, value = entry.partition(b"=")
        env.setdefault(name, value)
    _signal.pthread_sigmask(_signal.SIG_SETMASK, original_mask)
    try:
        posix.execve(argv[0], argv, env)
    except OSError as error:
        message = f"{PROGRAM}: cannot execute {argv[0].decode('utf-8', 'replace')}: {error.strerror}\n"
        posix.write(2, message.encode("utf-8", "replace"))
        posix._exit(126 if error.errno == 13 else 127)


def _running(pid):
    """The module's process has not ended (a zombie not reaped yet by its parent has)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):
        pass
    try:
        posix.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def wait_for_module(conn, pid, original_mask):
    """Stand in for the module's process until it ends; never falls back.

    The forwarded signals stay blocked and are taken with ``sigwaitinfo``, which tells who sent
    each: a SIGINT or SIGQUIT the kernel sent for a terminal reached the terminal's whole
    foreground process group, the module's process included when it shares the terminal, and
    is not sent again.  A thread reads the runner's reply and wakes this one with a signal of
    its own."""
    import _thread

    wake = _signal.SIGRTMIN + 1
    forwarded = set(FORWARDED) - set(_ignored()) - set(original_mask)
    waited = forwarded | {wake}
    _signal.pthread_sigmask(_signal.SIG_BLOCK, waited)
    main_thread = _thread.get_ident()
    reply = []

    def read_reply():
        try:
            head = _read_exact(conn, REPLY_HEAD)
        except OSError:
            head = None
        reply.append(head)
        _signal.pthread_kill(main_thread, wake)

    _thread.start_new_thread(read_reply, ())
    while not reply:
        _forward(_signal.sigwaitinfo(waited), pid, wake)
    head = reply[0]
    if head is not None and head[:1] == b"X":
        end_as(int.from_bytes(head[1:], "little", signed=True))
    # The runner is gone before reporting: wait for the module's process all the same.
    while pid > 0 and _running(pid):
        info = _signal.sigtimedwait(forwarded, 0.01) if forwarded else None
        if info is not None:
            _forward(info, pid, wake)
        elif not forwarded:
            import time

            time.sleep(0.01)
    posix.write(2, f"{PROGRAM}: the runner ended before the module's exit status was known\n".encode())
    posix._exit(1)


SI_KERNEL = 0x80


def _forward(info, pid, wake):
    sig = info.si_signo
    if sig == wake or pid <= 0:
        return
    if sig in (_signal.SIGINT, _signal.SIGQUIT) and info.si_code == SI_KERNEL:
        return  # a terminal's: it reached the module's process already where that can be
    try:
        posix.kill(pid, sig)
    except OSError:
        pass


def end_as(status):
    if posix.WIFEXITED(status):
        posix._exit(posix.WEXITSTATUS(status))
    if posix.WIFSIGNALED(status):
        sig = posix.WTERMSIG(status)
        try:
            import resource

            hard = resource.getrlimit(resource.RLIMIT_CORE)[1]
            resource.setrlimit(resource.RLIMIT_CORE, (0, hard))
        except (ImportError, OSError, ValueError):
            pass
        _signal.signal(sig, _signal.SIG_DFL)
        _signal.pthread_sigmask(_signal.SIG_UNBLOCK, [sig])
        posix.kill(posix.getpid(), sig)
        posix._exit(128 + sig)
    posix._exit(1)


SNAPSHOT = b"AAS1"


def _terminal():
    """The terminal's settings on standard input (six flags and speeds, then its window size as
    the kernel gives it and its control characters), or b"" when it is not a terminal."""
    try:
        import fcntl
        import termios

        iflag, oflag, cflag, lflag, ispeed, ospeed, cc = termios.tcgetattr(0)
    except Exception:  # noqa: BLE001 - not a terminal (termios.error), or no termios here
        return b""
    try:
        window = fcntl.ioctl(0, termios.TIOCGWINSZ, bytes(8))
    except OSError:
        window = bytes(8)
    chars = bytes(c[0] if isinstance(c, bytes) else c for c in cc)
    return b"".join(_u32(v) for v in (iflag, oflag, cflag, lflag, ispeed, ospeed)) + window + chars


def snapshot():
    """``--snapshot``: what this process would hand the runner besides its argv and descriptors
    (its working directory's path, environment, umask, signal mask, ignored signals, resource
    limits and terminal), printed on standard output in hexadecimal for the controller, which hands it to the
    keeper with each module that reaches the host without an SSH command of its own
    (``_runner_remote``).  The request's pieces are kept as the runner reads them: the part
    after argv up to the process group, and the part after it."""
    _words, environ = _started_with()
    umask = posix.umask(0o077)
    posix.umask(umask)
    blocked = _signal.pthread_sigmask(_signal.SIG_BLOCK, [])
    limits = _limits()
    middle = _strings(environ) + _u32(umask)
    tail = (_bitmap(blocked).to_bytes(8, "little") + _bitmap(_ignored()).to_bytes(8, "little") + _u32(len(limits))
            + b"".join(limits))
    parts = (posix.getcwdb(), middle, tail, _terminal())
    # In hexadecimal: a command with a terminal would have it change line ends.
    view = memoryview((SNAPSHOT + b"".join(_u32(len(part)) + part for part in parts)).hex().encode())
    while view:
        view = view[posix.write(1, view):]
    return 0


def main():
    if sys.argv[1:] == ["--probe"]:  # what the protocol's probe line says: this client, version 1
        posix.write(1, PROBE_LINE)
        return 0
    if sys.argv[1:] == ["--snapshot"]:
        return snapshot()
    if len(sys.argv) < 3:
        posix.write(2, f"usage: {PROGRAM} SOCKET INTERPRETER [ARG...]\n".encode())
        return 2
    words, environ = _started_with()
    sock_path, argv = words[0], words[1:]
    if sys.argv[0].startswith("/dev/fd/"):
        # Run from a descriptor its shell opened (the remote runner's command): the interpreter
        # has read this file; the module, run here or the ordinary way, must not inherit it.
        try:
            posix.close(int(sys.argv[0][len("/dev/fd/"):]))
        except (ValueError, OSError):
            pass
    original = _signal.pthread_sigmask(_signal.SIG_BLOCK, FORWARDED)
    try:
        conn, pid = hand_over(sock_path, argv, environ, original)
    except Refused as refused:
        fall_back(sock_path, argv, environ, original, str(refused))
    wait_for_module(conn, pid, original)
    return 1


if __name__ == "__main__":
    sys.exit(main())
