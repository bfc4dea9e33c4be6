"""The ``remote_runner`` path: Python modules run over ansible-core's ``ssh`` connection start
warm, in a runner on the host (docs/runner-ssh.md).  On by default; ``ANSIBLE_ACCEL_REMOTE_RUNNER=0``
(or the callback's ``remote_runner = false``) switches it off.

The seam is ``ssh.Connection.exec_command``, before ansible-core wraps the command for SSH: a
command that is exactly ``/bin/sh -c '[NAME=VALUE...] PYTHON [SCRIPT][ && sleep 0]'`` running an
AnsiBallZ module becomes, in the same shell,
``if [ -S SOCK ]; then [NAME=VALUE...] CLIENT SOCK PYTHON [SCRIPT]; else [NAME=VALUE...] PYTHON
[SCRIPT]; fi[ && sleep 0]``, once a runner on that host listens on SOCK.  CLIENT is the native
client program, shipped with the runner and kept where it runs on the host (the controller's
architecture, a C library as old as glibc 2.17 or newer, a remote tmp that allows executing
files), else ``PYTHON -I -S DIR/client.py``; ``ANSIBLE_ACCEL_REMOTE_CLIENT=python`` keeps every
host to the latter.

Per (host, interpreter, ansible-core, start-up environment), the first module run that finds
no runner has its worker start one, and waits for it (a module that finds it starting waits
too; one that waits longer than ``START_WAIT`` goes the ordinary way, ``runner starting``): an SSH command
on the same connection installs the runner's files in ``REMOTE_TMP/ansible-accel-UID/run-ID/KEY``
(``_runner_remote.INSTALL``), then a second one, left running (the *keeper*, an ``ssh`` client
built by the connection itself), starts and watches the runner (``_runner_remote``).  The
keeper's standard input is the read end of a pipe whose write end only the controller and its
forked workers hold: when they are all gone, the runner's channel ends, and the runner with it.

The controller keeps, per host and key, a small state in a private local directory: the keeper's
pid and the runner's directory, the keeper's output (``ready``, fallback lines, why it ended),
or why the runner cannot start there (the host then goes the ordinary way for the rest of the
run, said once at ``-v``).
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import shlex
import socket
import subprocess
import threading
import time

from .. import _counters, _runner_pool, _runner_remote
from .._activation import Patch, Unavailable, core_version
from .._patches import switched_off
from . import runner as local_runner
from . import ssh_direct, ssh_keeper_steps, ssh_steps

PATH = "remote_runner"
ENV = "ANSIBLE_ACCEL_REMOTE_RUNNER"
IDLE_ENV = "ANSIBLE_ACCEL_REMOTE_RUNNER_IDLE"
CLIENT_ENV = "ANSIBLE_ACCEL_REMOTE_CLIENT"
IDLE = 300.0
PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The runner's files on the host, by the names the runner loads them with.
FILES = {"server.py": "_runner_server.py", "_runner_modside.py": "_runner_modside.py",
         "client.py": "_runner_remote_client.py", "remote.py": "_runner_remote.py"}
STARTING = "runner starting"


class _State:
    owner_pid: int | None = None
    local_dir: str | None = None  # per host and key: .keeper, .out, .err, .failed, .lock
    run_id = ""
    lifeline: tuple[int, int] | None = None
    original_exec_command = None
    original_transfer_data = None
    original_put_file = None
    original_fetch_file = None
    connection_class = None
    idle = IDLE


_transferred = threading.local()  # (remote path, AnsiBallZ script) this worker last wrote to the host


def plan() -> list[Patch]:
    reason = switched_off(ENV)
    if reason:
        raise Unavailable(reason)
    try:
        from ansible.plugins.action import ActionBase
        from ansible.plugins.connection import ssh
    except ImportError as ex:
        raise Unavailable(f"ansible's ssh connection is not importable: {ex}") from None
    try:
        _prepare()
    except OSError as ex:
        raise Unavailable(f"remote runners unavailable: {ex}") from None
    _State.original_exec_command = vars(ssh.Connection)["exec_command"]
    _State.original_transfer_data = vars(ActionBase)["_transfer_data"]
    _State.original_put_file = vars(ssh.Connection)["put_file"]
    _State.original_fetch_file = vars(ssh.Connection)["fetch_file"]
    _State.connection_class = ssh.Connection
    ssh_steps.Originals.fixup_perms2 = vars(ActionBase)["_fixup_perms2"]
    ssh_steps.Originals.make_tmp_path = vars(ActionBase)["_make_tmp_path"]
    return [Patch(ssh.Connection, "exec_command", _exec_command), Patch(ActionBase, "_transfer_data", _transfer_data),
            Patch(ActionBase, "_fixup_perms2", ssh_steps.fixup_perms2), Patch(ssh.Connection, "put_file", _put_file),
            Patch(ssh.Connection, "fetch_file", _fetch_file), Patch(ActionBase, "_make_tmp_path", ssh_steps.make_tmp_path)]


def runs_through_the_seam(connection) -> bool:
    """Whether ``connection`` is ansible-core's ``ssh`` connection (or a subclass) whose
    commands and transfers all reach this module's ``exec_command``, ``put_file`` and
    ``fetch_file``: only then can a step be kept back until its next remote operation."""
    cls = type(connection)
    return (_State.connection_class is not None and issubclass(cls, _State.connection_class)
            and getattr(cls, "exec_command", None) is _exec_command and getattr(cls, "put_file", None) is _put_file
            and getattr(cls, "fetch_file", None) is _fetch_file)


def last_transferred() -> tuple[str, bytes] | None:
    """(remote path, AnsiBallZ script) this worker last wrote to a host, or None."""
    return getattr(_transferred, "last", None)


def switch_off(reason: str) -> None:
    """The callback's ``remote_runner = false``: modules on SSH hosts go the ordinary way from
    here on (before any worker forks, so no runner was started)."""
    from .._activation import switch_off_path

    switch_off_path(PATH, reason)
    if _State.owner_pid == os.getpid():
        if _State.lifeline is not None:
            for fd in _State.lifeline:
                os.close(fd)
            _State.lifeline = None
        if _State.local_dir is not None:
            _remove_tree(_State.local_dir)


def _prepare() -> None:
    """In the controller, before any worker forks: the local state directory and the lifeline."""
    local_dir = _runner_pool.controller_dir("remote")
    with open(f"/proc/{os.getpid()}/stat", "rb") as handle:
        started = handle.read().rsplit(b")", 1)[1].split()[19].decode()
    identity = f"{socket.gethostname()}-{os.getpid()}-{started}-{core_version()}"
    _State.run_id = "run-" + hashlib.sha256(identity.encode()).hexdigest()[:12]
    _State.owner_pid, _State.local_dir = os.getpid(), local_dir
    _State.lifeline = os.pipe2(os.O_CLOEXEC)
    idle = os.environ.get(IDLE_ENV)
    _State.idle = float(idle) if idle else IDLE
    atexit.register(_at_exit)


def _remove_tree(path: str) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)


def _at_exit() -> None:
    """In the controller: let the runners end (their channels see end-of-file once every worker
    is gone too) and, when a stats file is to be written, wait for their keepers' last lines
    (up to ``LAST_LINES_WAIT`` seconds); then fold the fallbacks the hosts reported."""
    if os.getpid() != _State.owner_pid:
        return
    if _State.lifeline is not None:
        os.close(_State.lifeline[1])
        _State.lifeline = None
        if os.environ.get("ANSIBLE_ACCEL_STATS"):
            _await_keepers(time.monotonic() + LAST_LINES_WAIT)
    _fold_host_fallbacks()


# How long the controller's exit waits for the keepers' last lines (the fallbacks and module-side
# counts of the modules that ended last) when it writes a stats file.
LAST_LINES_WAIT = 5.0


def _await_keepers(deadline: float) -> None:
    if not _State.local_dir or not os.path.isdir(_State.local_dir):
        return
    for name in sorted(os.listdir(_State.local_dir)):
        if name.endswith(".keeper"):
            keeper = _read_lines(os.path.join(_State.local_dir, name))
            while len(keeper) == 3 and _keeper_alive(int(keeper[0]), keeper[1]) and time.monotonic() < deadline:
                time.sleep(0.01)


def module_side_entries() -> list:
    """The module-side counts the hosts' runners reported, one entry per module run (hosts
    where the runner's interpreter has this package, ``_runner_modside``)."""
    entries = []
    for name, line in _keeper_lines():
        if line.startswith("modside: "):
            try:
                entries.append(json.loads(line[len("modside: "):]))
            except ValueError:
                continue
    return entries


def _keeper_lines():
    """(file name, line) of every keeper's output this controller kept, ended runners' too."""
    if not _State.local_dir or not os.path.isdir(_State.local_dir):
        return
    for name in sorted(os.listdir(_State.local_dir)):
        if name.endswith(".out") or ".out." in name:
            for line in _read_lines(os.path.join(_State.local_dir, name)):
                yield name, line


def _fold_host_fallbacks() -> None:
    """Modules handed to a runner that went the ordinary way on the host after all (the client
    found no runner, or the runner refused them): counted as fallbacks, taken off ``native``."""
    for _name, line in _keeper_lines():
        if line.startswith("fallback: "):
            _counters.fallback(PATH, "after hand-over: " + line[len("fallback: "):])
            _counters.native(PATH, -1)


def _read_lines(path: str) -> list[str]:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return [line.rstrip("\n") for line in handle]
    except OSError:
        return []


def _transfer_data(self, remote_path, data):
    script = data.encode(errors="surrogateescape") if isinstance(data, str) else data
    _transferred.last = (remote_path, script) if local_runner._is_ansiballz(script) else None
    return _State.original_transfer_data(self, remote_path, data)


def _in_use() -> bool:
    """Whether runners may be used here: prepared, and not in a controller whose run has ended
    (its lifeline closed)."""
    return _State.local_dir is not None and not (os.getpid() == _State.owner_pid and _State.lifeline is None)


def _put_file(self, in_path, out_path):
    ssh_steps.flush()
    if _in_use() and ssh_keeper_steps.put_file(self, in_path, out_path):
        return 0, b"", b""
    return _State.original_put_file(self, in_path, out_path)


def _fetch_file(self, in_path, out_path):
    ssh_steps.flush()
    return _State.original_fetch_file(self, in_path, out_path)


def _exec_command(self, cmd, in_data=None, sudoable=True):
    if _in_use():
        def run(command):
            return _State.original_exec_command(self, command, in_data=None, sudoable=False)

        if in_data is None and not sudoable:
            ssh_steps.flush()
            result = ssh_keeper_steps.command(self, cmd, in_data, sudoable)
            if result is not None:
                return result
        result = ssh_steps.tmp_exec(self, cmd, in_data, sudoable, run, _HomeState)
        if result is not None:
            return result
    kept = ssh_steps.take()
    if kept is not None and not _runs_script(cmd, in_data, kept[1][1]):
        ssh_steps.flush_kept(kept)
        kept = None
    try:
        routed = _route(self, cmd, in_data, sudoable)
    except BaseException:
        if kept is not None:
            ssh_steps.flush_kept(kept, "the module's run goes the ordinary way")
        raise
    if kept is not None:
        folded = ssh_steps.fold(kept, routed) if routed is not None else None
        if folded is None:
            ssh_steps.flush_kept(kept, "the module's run goes the ordinary way")
        else:
            ssh_direct.with_chmod(routed, folded[0], kept[1])
            result = _State.original_exec_command(self, folded[0], in_data=in_data, sudoable=sudoable)
            if not ssh_steps.stopped(result, folded[1]):
                _counters.extra(PATH, ssh_steps.FOLDED)
                return result
            _counters.extra(PATH, ssh_steps.APART + "chmod failed in the module's command")
            try:
                ssh_steps.run_apart(kept)  # ansible-core's own chmod, then the module
            except BaseException:
                _counters.native(PATH, -1)  # the module does not run
                raise
    if routed is not None:
        cmd = routed
    return _State.original_exec_command(self, cmd, in_data=in_data, sudoable=sudoable)


class _HomeState:
    """Per host, user and ``~WORD``: the expansion the host gave last in this run (a file in the
    local state directory), the value its next expansion is checked against on the host."""

    @staticmethod
    def _path(connection, word: str) -> str:
        host = connection.get_option("host") or connection._play_context.remote_addr
        where = (host, connection.get_option("port"), connection.get_option("remote_user"), word)
        digest = hashlib.sha256(repr(where).encode("utf-8", "surrogateescape")).hexdigest()
        return os.path.join(_State.local_dir, "home-" + digest[:24])

    @classmethod
    def read(cls, connection, word: str) -> str | None:
        lines = _read_lines(cls._path(connection, word))
        return lines[0] if lines and lines[0] else None

    @classmethod
    def write(cls, connection, word: str, value: str | None) -> None:
        path = cls._path(connection, word)
        try:
            if value is None or "\n" in value:
                os.unlink(path)
                return
            with open(f"{path}.{os.getpid()}", "w", encoding="utf-8", errors="surrogateescape") as handle:
                handle.write(value + "\n")
            os.replace(f"{path}.{os.getpid()}", path)
        except OSError:
            pass


def _runs_script(cmd, in_data, script: str) -> bool:
    parsed = local_runner.parse_module_command(cmd) if isinstance(cmd, str) and in_data is None else None
    return parsed is not None and parsed[2] == script


def _route(connection, cmd, in_data, sudoable) -> str | None:
    """The command that runs this module through the host's runner, or None when it goes the
    ordinary way (counted when it is a module run)."""
    if not isinstance(cmd, str) or os.getpid() == _State.owner_pid and _State.lifeline is None:
        return None
    parsed = local_runner.parse_module_command(cmd)
    if parsed is not None:
        assignments, interpreter, script, _suffix = parsed
        source = _module_source(interpreter, script, in_data)
        if source is None:
            return None
    else:
        # An async task's start: async_wrapper.py, the AnsiBallZ script this worker has just
        # written to the host, given the module to start (which it starts fresh, as locally).
        started = local_runner.parse_async_command(cmd, in_data)
        last = getattr(_transferred, "last", None)
        if started is None or last is None or last[0] != started[2]:
            kind = local_runner.other_module_run(cmd, in_data)
            if kind is not None:
                become = sudoable and getattr(connection, "become", None) is not None
                _counters.fallback(PATH, "become" if become else kind)
            return None
        assignments, interpreter, source = started[0], started[1], last[1]
    reason = _why_ordinary(connection, sudoable, interpreter)
    if reason is None:
        runner, reason = _runner_for(connection, interpreter, dict(assignments), source)
    if reason is not None:
        _counters.fallback(PATH, reason)
        return None
    sock, client, steps = runner
    if steps:
        ssh_keeper_steps.offer(connection, os.path.dirname(sock))
    _counters.native(PATH)
    _counters.extra(PATH, f"{client} client")
    routed = rewrite_command(cmd, sock, native=client == "native")
    if parsed is not None and steps:
        ssh_direct.plan(connection, cmd, parsed, os.path.dirname(sock), in_data, sudoable, routed)
    return routed


def _module_source(interpreter: str, script: str | None, in_data) -> bytes | None:
    """The AnsiBallZ script of a module command (on standard input, or the file this worker has
    just written to the host), or None when it is none of those (counted when it is a Python
    module run)."""
    if script is None:
        if not local_runner._is_ansiballz(in_data):
            if in_data is not None and local_runner._PYTHON_NAME.fullmatch(os.path.basename(interpreter)):
                _counters.fallback(PATH, "not an AnsiBallZ Python module (old-style, WANT_JSON or binary)")
            return None
        return in_data
    if not os.path.basename(script).startswith("AnsiballZ_"):
        if local_runner._PYTHON_NAME.fullmatch(os.path.basename(interpreter)):
            _counters.fallback(PATH, "not an AnsiBallZ Python module (old-style, WANT_JSON or binary)")
        return None
    last = getattr(_transferred, "last", None)
    if last is None or last[0] != script:
        _counters.fallback(PATH, "module script not written by this worker")
        return None
    return last[1]


def _why_ordinary(connection, sudoable, interpreter) -> str | None:
    """The local runner's reasons, and one of SSH's own."""
    reason = local_runner._why_ordinary(connection, sudoable, interpreter)
    if reason is None and connection.get_option("password"):
        return "password authentication"  # its ssh commands need the password fed to them
    return reason


CLIENT_FD = 9


def rewrite_command(cmd: str, sock: str, native: bool = False) -> str:
    """``cmd`` with the interpreter run through the host's client while SOCK exists and the
    client opens, in the same shell: ``if [ -S SOCK ] && { command exec 9<CLIENT; } 2>/dev/null;
    then [NAME=VALUE...] /dev/fd/9 SOCK PYTHON [SCRIPT]; else [NAME=VALUE...] PYTHON [SCRIPT];
    fi`` with the native client (``PYTHON -I -S /dev/fd/9`` instead of ``/dev/fd/9`` with the
    Python one).  The client is opened by the shell before the interpreter is chosen: a runner
    directory removed at that very moment makes the module run the ordinary way, never an
    interpreter that cannot find its script; either client closes descriptor 9 as it starts."""
    executable = shlex.split(cmd)[0]
    assignments, interpreter, script, args, suffix = local_runner._parse_run(cmd, None)
    rest = [*([script] if script is not None else []), *args]
    client = os.path.join(os.path.dirname(sock), "client" if native else "client.py")
    start = [f"/dev/fd/{CLIENT_FD}"] if native else [interpreter, "-I", "-S", f"/dev/fd/{CLIENT_FD}"]
    warm = local_runner._join(assignments, [*start, sock, interpreter, *rest])
    plain = local_runner._join(assignments, [interpreter, *rest])
    opened = f"{{ command exec {CLIENT_FD}<{shlex.quote(client)}; }} 2>/dev/null"
    inner = f"if [ -S {shlex.quote(sock)} ] && {opened}; then {warm}; else {plain}; fi{suffix}"
    return f"{executable} -c {shlex.quote(inner)}"


# --- the runner of a host: found, or started ------------------------------------------------------


def _host_key(connection, interpreter: str, assignments: dict[str, str]) -> tuple[str, str]:
    """(the key of the runner's directory on the host, the key of its local state).  Both name
    the host alias too: two aliases of one machine (or hosts sharing a home directory) have
    runners of their own, as they have SSH connections of their own."""
    significant = sorted(_runner_pool.significant_env(assignments).items())
    host = connection.get_option("host") or connection._play_context.remote_addr
    where = (host, connection.get_option("port"), connection.get_option("remote_user"))
    key = hashlib.sha256(repr((interpreter, core_version(), significant, where)).encode("utf-8", "surrogateescape"))
    return key.hexdigest()[:12], key.hexdigest()[:24]


def _runner_for(connection, interpreter, assignments, source) -> tuple[tuple[str, str, bool] | None, str | None]:
    """((socket path on the host, ``native`` or ``python``: its client, whether its keeper takes
    steps), None) when a runner there
    is ready, having waited for its start when it was starting or there was none (started then);
    else (None, why)."""
    remote_key, key = _host_key(connection, interpreter, assignments)
    state = os.path.join(_State.local_dir, key)
    failed = _read_lines(state + ".failed")
    if failed:
        return None, f"runner could not start on the host: {failed[0]}"
    keeper = _read_lines(state + ".keeper")
    found, detail = _look(state, keeper)
    if found == "ready":
        return detail, None
    if found == "starting":
        return _await(state, STARTING, "waited for the runner's start")
    if found == "never ready":  # it ended without listening: the host cannot run it
        _mark_failed(connection, state, "the runner did not start", f"{detail} {' '.join(_read_lines(state + '.err'))}")
        return None, "runner could not start on the host: the runner did not start"
    import fcntl

    lock = os.open(state + ".lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    try:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return _await(state, STARTING, "waited for the runner's start")
        if _read_lines(state + ".keeper") != keeper:  # started by another worker meanwhile
            return _await(state, STARTING, "waited for the runner's start")
        try:
            reason = _start(connection, interpreter, source, remote_key, state, generation=bool(keeper))
        except Exception as ex:  # noqa: BLE001 - the module goes the ordinary way; a later one tries again
            # The connection failed (the module's own command reports that as ansible-core
            # would), or a local file could not be written.
            return None, f"runner could not start: {type(ex).__name__}"
    finally:
        os.close(lock)
    if reason is not None:
        return None, f"runner could not start on the host: {reason}"
    if found == "ended":
        return _await(state, f"runner ended ({detail}), starting again", f"runner ended ({detail}), started again")
    return _await(state, STARTING, "waited for the runner's start")


# How long a module waits for its host's runner to start (install, keeper, imports) before it goes
# the ordinary way; a start usually takes well under a second.
START_WAIT = 10.0


def _look(state: str, keeper: list[str]) -> tuple[str, object]:
    """What the state files say of the runner of ``state``: ``ready`` (socket, client, steps),
    ``starting``, ``ended`` (why), ``never ready`` (why: it ended without listening) or
    ``none``."""
    if len(keeper) != 3:
        return "none", None
    pid, rdir, client = keeper
    out = _read_lines(state + ".out")
    if _keeper_alive(int(pid), rdir) and not any(line.startswith("ended: ") for line in out):
        if "ready" in out:
            return "ready", (os.path.join(rdir, _runner_remote.SOCKET), client, "steps" in out)
        return "starting", None
    ended = next((line[len("ended: "):] for line in reversed(out) if line.startswith("ended: ")), "its channel ended")
    if "ready" not in out:
        return "never ready", next((line[len("failed: "):] for line in out if line.startswith("failed: ")), ended)
    return "ended", ended


def _await(state: str, reason: str, event: str) -> tuple[tuple[str, str, bool] | None, str | None]:
    """The runner of ``state`` once it is ready (``event`` counted), or (None, ``reason``) if it
    is not within ``START_WAIT`` seconds or stops starting: the module then goes the ordinary
    way, as it would have without waiting.  Waiting costs no CPU worth counting (a look every
    10 ms); a fresh interpreter costs a module start of 0.25-0.4 s on the host."""
    deadline = time.monotonic() + START_WAIT
    while time.monotonic() < deadline:
        found, detail = _look(state, _read_lines(state + ".keeper"))
        if found == "ready":
            _counters.extra(PATH, event)
            return detail, None
        if found not in ("starting", "none"):  # none: the worker starting it has not written its state yet
            break
        time.sleep(0.01)
    return None, reason


def _keeper_alive(pid: int, rdir: str) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            if handle.read().rsplit(b")", 1)[1].split()[0] == b"Z":
                return False
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return os.fsencode(rdir) in handle.read()
    except (OSError, IndexError):
        return False


def _mark_failed(connection, state: str, reason: str, detail: str = "") -> None:
    """The host goes the ordinary way for the rest of the run: said once at ``-v``."""
    with open(state + ".failed", "w") as handle:
        handle.write(reason + "\n")
    from ansible.utils.display import Display

    host = connection.get_option("host") or connection._play_context.remote_addr
    Display().v(f"ansible-accel: no remote runner on {host}, its modules run the ordinary way: {reason}"
                + (f" ({detail.strip()[-300:]})" if detail.strip() else ""))


def _start(connection, interpreter, source, remote_key, state, generation) -> str | None:
    """Install the runner's files on the host and start its keeper; None, or why it cannot."""
    files = {name: _read_package_file(path) for name, path in FILES.items()}
    files[_runner_remote.PROBE] = _runner_pool.probe_script(source)
    if os.environ.get(CLIENT_ENV, "native") != "python":
        from .. import _native

        binary = _native.runner_client_binary()
        if binary:  # the installer keeps it where it runs
            files["client"] = binary
    try:
        remote_tmp = connection._shell.get_option("remote_tmp")
    except (AttributeError, KeyError):
        remote_tmp = "~/.ansible/tmp"
    if generation:  # a new directory for a new runner: the one that ended may still be going away
        remote_key += f"-{sum(name.startswith(os.path.basename(state) + '.out.') for name in os.listdir(_State.local_dir)) + 1}"
    install = shlex.join([interpreter, "-I", "-S", "-c", _runner_remote.INSTALL, remote_tmp, _State.run_id, remote_key])
    rc, stdout, stderr = _State.original_exec_command(connection, install, in_data=_runner_remote.pack(files), sudoable=False)
    try:
        answer = json.loads(stdout.decode("utf-8", "replace").strip().splitlines()[-1])
    except (ValueError, IndexError):
        answer = {"ok": False, "reason": f"the installer failed (status {rc})"}
    if not answer.get("ok"):
        why = answer.get("reason", "unknown")
        _mark_failed(connection, state, why, f"{answer.get('path', '')} {stderr.decode('utf-8', 'replace')[-200:]}")
        return why
    rdir, client = answer["dir"], answer.get("client", "python")
    command = shlex.join([interpreter, "-I", "-S", os.path.join(rdir, "remote.py"), rdir, f"{_State.idle:g}"])
    ssh_command = connection._build_command(connection.get_option("ssh_executable"), "ssh", connection.host, command)
    if generation:  # the ended runner's output stays, to be counted
        for suffix in (".out", ".err"):
            if os.path.exists(state + suffix):
                os.replace(state + suffix, f"{state}{suffix}.{time.monotonic_ns()}")
    with open(state + ".out", "wb") as out, open(state + ".err", "wb") as err:
        keeper = subprocess.Popen(ssh_command, stdin=_State.lifeline[0], stdout=out, stderr=err, start_new_session=True,
                                  close_fds=True)
    # Its command line, by which it is known (a reused pid is not it), shows once its exec is
    # done, which can be after Popen returns.
    deadline = time.monotonic() + 2.0
    while not _keeper_alive(keeper.pid, rdir) and keeper.poll() is None and time.monotonic() < deadline:
        time.sleep(0.002)
    with open(state + ".keeper.tmp", "w") as handle:
        handle.write(f"{keeper.pid}\n{rdir}\n{client}\n")
    os.replace(state + ".keeper.tmp", state + ".keeper")
    return None


def _read_package_file(name: str) -> bytes:
    with open(os.path.join(PACKAGE, name), "rb") as handle:
        return handle.read()
