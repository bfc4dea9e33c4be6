"""Warm runners on the controller's machine: where they live, how they start, when they end.

The controller (the process that switched the accelerator on) prepares, before any worker
forks: a directory private to the user, the ``ansible-accel-run`` client program in it, and a
lifeline pipe whose write end only the controller and its forked workers hold.  A worker that
is about to start a Python module finds the runner for (interpreter, ansible-core, start-up
environment) by its socket, or starts it (one at a time, under a lock the runner then holds
for its life) and runs this module the ordinary way meanwhile.  A runner ends when the lifeline
reads end-of-file: the controller and all its workers are gone, however they ended.
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import re
import shutil
import stat
import subprocess
import tempfile
import zipfile

from ._private_dir import is_private_dir

RUNNER_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_runner_server.py")
MAX_RUNNERS = 8
START_AFTER = 2  # module runs that go the ordinary way before a runner is started for them
PROBE_MODULE = "ansible_accel_runner_probe"
_MAIN_CALL = b'\n\n\nif __name__ == "__main__":\n    _ansiballz_main(\n'
FALLBACKS_ROOM = 64 * 1024  # bytes kept for a runner's fallback lines: a thousand lines or so
_FALLOC_FL_KEEP_SIZE = 1


class _Pool:
    owner_pid: int | None = None
    base: str | None = None  # the private directory
    rundir: str | None = None  # this controller's sockets, probes and logs
    client: str | None = None
    lifeline: tuple[int, int] | None = None
    core_version = ""
    spawned: list = []  # Popen objects of runners this process started (never waited here)


def private_base() -> str:
    """``$XDG_RUNTIME_DIR/ansible-accel`` when that is the user's own, else
    ``<tmp>/ansible-accel-<uid>``."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and is_private_dir(runtime):
        return os.path.join(runtime, "ansible-accel")
    return os.path.join(tempfile.gettempdir(), f"ansible-accel-{os.getuid()}")


def ensure_private_dir(path: str) -> None:
    """Create ``path`` 0700, or check that it is a directory of ours that nobody else can use."""
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    if not is_private_dir(path):
        raise PermissionError(f"{path} is not a directory private to uid {os.getuid()} (mode 0700, owned, not a link)")


def prepare(core_version: str) -> None:
    """In the controller: the private directory, the client and the lifeline.  Raises with the
    reason when runners cannot be used here."""
    from . import _native

    binary = _native.runner_client_binary()
    if not binary:
        raise OSError("no runner client is built for this platform")
    base = private_base()
    ensure_private_dir(base)
    client = _install_client(base, binary)
    rundir = controller_dir("run")
    read_end, write_end = os.pipe2(os.O_CLOEXEC)
    _Pool.owner_pid, _Pool.base, _Pool.rundir, _Pool.client = os.getpid(), base, rundir, client
    _Pool.lifeline, _Pool.core_version = (read_end, write_end), core_version
    import atexit

    atexit.register(_at_exit)


def _install_client(base: str, binary: bytes) -> str:
    digest = hashlib.sha256(binary).hexdigest()[:16]
    bindir = os.path.join(base, "bin")
    ensure_private_dir(bindir)
    path = os.path.join(bindir, f"ansible-accel-run-{digest}")
    checked = path + ".ok"
    if os.path.exists(checked) and _is_own_file(path):
        return path
    temporary = f"{path}.{os.getpid()}.tmp"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o700)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(binary)
        os.replace(temporary, path)
    except BaseException:
        _remove(temporary)  # a part written to a full disk would hold its space for good
        raise
    probe = subprocess.run([path, "--probe"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=10)
    if probe.returncode != 0 or not probe.stdout.startswith(b"ansible-accel-run 1"):
        raise OSError(f"the runner client does not run here ({probe.returncode}: {probe.stderr[:200]!r})")
    with open(checked, "w"):
        pass
    return path


def _is_own_file(path: str) -> bool:
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISREG(info.st_mode) and info.st_uid == os.getuid() and not info.st_mode & 0o022


def _remove_stale_rundirs(base: str, prefix: str) -> None:
    for name in os.listdir(base):
        match = re.fullmatch(re.escape(prefix) + r"-(\d+)", name)
        if match and not _alive(int(match[1])):
            shutil.rmtree(os.path.join(base, name), ignore_errors=True)


def controller_dir(prefix: str) -> str:
    """This controller's own private directory ``PREFIX-PID`` under the private base, made
    empty; those of controllers that are gone are removed first (a dead controller's with our
    reused pid too)."""
    base = private_base()
    ensure_private_dir(base)
    _remove_stale_rundirs(base, prefix)
    path = os.path.join(base, f"{prefix}-{os.getpid()}")
    if os.path.isdir(path):
        shutil.rmtree(path, ignore_errors=True)
    ensure_private_dir(path)
    return path


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _at_exit() -> None:
    if os.getpid() != _Pool.owner_pid:
        return
    if _Pool.lifeline is not None:
        os.close(_Pool.lifeline[1])  # the runners see end-of-file once every worker is gone too
        _Pool.lifeline = None


def ready() -> bool:
    return _Pool.rundir is not None and _Pool.client is not None and _Pool.lifeline is not None


# --- in a worker: the socket of a runner for this module ------------------------------------------


def significant_env(env: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if k.startswith(("PYTHON", "LC_")) or k in ("LANG", "TZ")}


def runner_key(interpreter: str, env: dict[str, str]) -> str:
    text = repr((interpreter, _Pool.core_version, sorted(significant_env(env).items())))
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()[:16]


def runner_socket(interpreter: str, env: dict[str, str], script: bytes) -> tuple[str | None, str | None]:
    """(socket path, None) when a runner serves this interpreter and environment; else
    (None, why), having started the runner when there was none."""
    try:
        return _runner_socket(interpreter, env, script)
    except OSError as ex:
        # The directory takes no more files or data (a full disk, no inode left, a quota), or
        # the runner's process cannot be made: this module goes the ordinary way; a later one
        # tries again.
        return None, f"runner could not start: {ex.strerror or type(ex).__name__}"


def _runner_socket(interpreter: str, env: dict[str, str], script: bytes) -> tuple[str | None, str | None]:
    rundir = _Pool.rundir
    if rundir is None or not is_private_dir(rundir):
        return None, "runner directory not private"
    key = runner_key(interpreter, env)
    sock = os.path.join(rundir, key + ".sock")
    if os.path.exists(sock):
        return sock, None
    if os.path.exists(sock + ".failed"):
        return None, "runner could not start"
    if not _seen_enough(sock):
        return None, "too few modules yet to start a runner"
    lock = os.open(sock + ".lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    try:
        import fcntl

        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return None, "runner starting"
        if os.path.exists(sock):
            return sock, None
        if sum(name.endswith(".lock") for name in os.listdir(rundir)) > MAX_RUNNERS:
            return None, "runner limit reached"
        _spawn(interpreter, env, script, sock, lock)
        return None, "runner starting"
    finally:
        os.close(lock)  # the runner holds its own copy for as long as it lives


def _seen_enough(sock: str) -> bool:
    """A runner costs about one module's start: it is started for the third module run of
    its kind, so a run with one or two such modules pays nothing for it."""
    for n in range(1, START_AFTER + 1):
        try:
            os.close(os.open(f"{sock}.seen{n}", os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600))
            return False
        except FileExistsError:
            continue
    return True


def _spawn(interpreter: str, env: dict[str, str], script: bytes, sock: str, lock: int) -> None:
    probe = sock[: -len(".sock")] + ".probe"
    try:
        _reserve(sock + ".fallbacks", FALLBACKS_ROOM)
        _write_private(probe, probe_script(script))
        _write_private(probe + ".env", b"\0".join(os.fsencode(k) + b"=" + os.fsencode(v) for k, v in env.items()))
        lifeline_read = _Pool.lifeline[0]
        log = sock[: -len(".sock")] + ".log"
        process = subprocess.Popen(
            [interpreter, RUNNER_SCRIPT, sock, str(lifeline_read), str(lock), probe, log],
            # Pipes, as a module's own standard streams are, so the runner's sys.std* objects are
            # made as theirs would be; nobody reads or writes the other ends.
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            pass_fds=(lifeline_read, lock), env=env, cwd="/", start_new_session=True,
        )
    except BaseException:
        for path in (probe, probe + ".env"):  # the runner removes them once it has read them
            _remove(path)
        raise
    for stream in (process.stdin, process.stdout, process.stderr):
        stream.close()
    _Pool.spawned.append(process)


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _reserve(path: str, size: int) -> None:
    """Create ``path`` (the runner's and its clients' fallback lines) with ``size`` bytes of
    the disk set aside beyond its end, so that the lines appended to it later are still
    written, and counted, when the disk has filled up meanwhile.  Where space cannot be set
    aside (not Linux, a file system without it, no space now), the file is only created."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    try:
        import ctypes

        fallocate = getattr(ctypes.CDLL(None, use_errno=True), "fallocate64", None)
        if fallocate is not None:
            fallocate.argtypes = (ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64)
            fallocate(fd, _FALLOC_FL_KEEP_SIZE, os.fstat(fd).st_size, size)
    except (OSError, AttributeError):
        pass
    finally:
        os.close(fd)


def _write_private(path: str, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)


def probe_script(script: bytes) -> bytes:
    """The wrapper of ``script`` (an AnsiBallZ module) on the same payload plus a stub module
    that stops the wrapper as soon as it starts."""
    at = script.rindex(_MAIN_CALL)
    head, call = script[:at], script[at + len(_MAIN_CALL):]
    args = {}
    for line in call.split(b"\n"):
        name, sep, value = line.partition(b"=")
        if sep and re.fullmatch(rb"[a-z_]+", name):
            args[name.decode()] = value
    payload = base64.b64decode(args["zip_data"].strip(b"',"))
    buffer = io.BytesIO(payload)
    with zipfile.ZipFile(buffer, "a") as archive:
        archive.writestr(f"{PROBE_MODULE}.py", 'raise SystemExit("ansible-accel-probe")\n')
    args.update(
        zip_data=repr(base64.b64encode(buffer.getvalue()).decode()).encode() + b",",
        ansible_module=b"'accelprobe',",
        module_fqn=repr(PROBE_MODULE).encode() + b",",
        params=b"'{\"ANSIBLE_MODULE_ARGS\": {}}',",
        extensions=b"{},",
        rlimit_nofile=b"0,",
    )
    lines = b"\n".join(k.encode() + b"=" + v for k, v in args.items())
    return head + _MAIN_CALL + lines + b"\n)\n"


def fallbacks_seen() -> list[str]:
    """Lines the clients and runners of this controller wrote when a module they were handed
    went the ordinary way after all (read by the controller when it counts)."""
    if _Pool.rundir is None or not os.path.isdir(_Pool.rundir):
        return []
    lines = []
    for name in sorted(os.listdir(_Pool.rundir)):
        if name.endswith(".fallbacks"):
            try:
                with open(os.path.join(_Pool.rundir, name), encoding="utf-8", errors="replace") as handle:
                    lines.extend(line.rstrip("\n") for line in handle if line.strip())
            except OSError:
                continue
    return lines


def client_path() -> str | None:
    return _Pool.client
