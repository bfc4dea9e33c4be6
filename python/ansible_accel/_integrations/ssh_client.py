"""The ``ssh_client`` path: ansible-core's ``ssh`` commands on a host whose ControlPersist master
is already listening open their session in that master from the worker itself, as the ``ssh``
client process would, without starting one (docs/runner-ssh.md).  On by default;
``ANSIBLE_ACCEL_SSH_CLIENT=0`` switches it off.

The seam is the ``subprocess`` name of ansible-core's ``ssh`` connection module, through which
``_bare_run`` starts ``ssh``: a ``Popen`` of a plain ``ssh [OPTIONS] HOST COMMAND`` (no
``sshpass``, no password by shared memory, standard output and error pipes) becomes a
``_ssh_mux.Session`` when every one of its options is one that only configures (``-o``, ``-i``,
``-p``, ``-l``, ``-F``, ``-C``, ``-tt``...), what ``ssh -G`` makes of them (run once per command
line shape, per controller) leaves the client nothing of its own to do (no forwarding, no
verbose output, no ``-f``, no X11 or agent forwarding, ControlMaster ``auto`` or ``no``), no
``Match exec`` in the configuration would run a command, and the master answers.  Anything else,
and a master that does not answer or declines, is the ordinary ``ssh`` process, counted by
reason; the session then never started, so nothing runs twice.
"""

from __future__ import annotations

import atexit
import glob
import hashlib
import json
import os
import re
import subprocess
import types

from .. import _counters, _runner_pool, _ssh_mux
from .._activation import Patch, Unavailable
from .._patches import switched_off

PATH = "ssh_client"
ENV = "ANSIBLE_ACCEL_SSH_CLIENT"
# ssh's options: those taking a value, and those without one that only configure.
_WITH_VALUE = frozenset(b"bcEeFiIJlmoOpPQRSwWBDL")
_CONFIG_FLAGS = frozenset(b"46Cqt")
_CONFIG_VALUES = frozenset(b"bceFiJlmopS")
_VERSION = re.compile(rb"OpenSSH_(\d+)\.(\d+)")
_QUIET_LEVELS = frozenset({"QUIET", "SILENT", "FATAL", "ERROR"})


class _State:
    owner_pid: int | None = None
    cache_dir: str | None = None
    original_subprocess = None
    versions: dict[bytes, bool] = {}


def plan() -> list[Patch]:
    reason = switched_off(ENV)
    if reason:
        raise Unavailable(reason)
    try:
        from ansible.plugins.connection import ssh
    except ImportError as ex:
        raise Unavailable(f"ansible's ssh connection is not importable: {ex}") from None
    if getattr(ssh, "subprocess", None) is not subprocess:
        raise Unavailable("ansible's ssh connection does not start ssh through the subprocess module")
    try:
        _prepare()
    except OSError as ex:
        raise Unavailable(f"no private directory for what ssh -G says: {ex}") from None
    _State.original_subprocess = subprocess
    return [Patch(ssh, "subprocess", _proxy())]


def _prepare() -> None:
    """In the controller, before any worker forks: a private directory for what ``ssh -G``
    said about each command line shape, shared by the workers, removed at exit."""
    cache_dir = _runner_pool.controller_dir("ssh")
    _State.owner_pid, _State.cache_dir = os.getpid(), cache_dir
    atexit.register(_at_exit)


def _remove_tree(path: str) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)


def _at_exit() -> None:
    if _State.owner_pid == os.getpid() and _State.cache_dir:
        _remove_tree(_State.cache_dir)


def _proxy() -> types.ModuleType:
    """A stand-in for the ``subprocess`` module in ansible's ``ssh`` connection: everything is
    the module's, but ``Popen``."""
    proxy = types.ModuleType("subprocess")
    proxy.__dict__.update({k: v for k, v in vars(subprocess).items() if not k.startswith("__")})
    proxy.Popen = _popen
    return proxy


def _popen(args, *pargs, **kwargs):
    original = _State.original_subprocess.Popen
    try:
        plan, reason = _session_plan(args, pargs, kwargs)
    except Exception as ex:  # noqa: BLE001 - nothing has started: ssh runs as ever
        plan, reason = None, f"internal error: {type(ex).__name__}"
    if plan is None:
        if reason is not None:
            _counters.fallback(PATH, reason)
        return original(args, *pargs, **kwargs)
    from . import ssh_direct

    entry = ssh_direct.take(plan["command"])
    if entry is not None:
        run = ssh_direct.open_run(entry, plan["tty"], kwargs["stdin"], plan["closing_line"])
        if run is not None:
            return run
    try:
        session = _ssh_mux.Session(stdin=kwargs["stdin"], **plan)
    except _ssh_mux.Refused as ex:
        _counters.fallback(PATH, f"master: {ex.reason}")
        return original(args, *pargs, **kwargs)
    _counters.native(PATH)
    return session


def _session_plan(args, pargs, kwargs) -> tuple[dict | None, str | None]:
    """The session to open for this ``Popen``, or (None, why not: None when it is not an
    ``ssh`` command at all)."""
    if pargs or not isinstance(args, list) or not args or not all(isinstance(a, bytes) for a in args):
        return None, None
    if os.path.basename(args[0]) != b"ssh":
        return None, None
    if set(kwargs) != {"stdin", "stdout", "stderr"} or kwargs["stdout"] != subprocess.PIPE or kwargs["stderr"] != subprocess.PIPE:
        return None, "other process settings (a password, passed descriptors)"
    stdin = kwargs["stdin"]
    if not (stdin == subprocess.PIPE or (isinstance(stdin, int) and stdin >= 0)):
        return None, "other process settings (a password, passed descriptors)"
    parsed = _parse(args)
    if isinstance(parsed, str):
        return None, parsed
    options, host, command = parsed
    learned = _learned(args[0], options, host)
    if isinstance(learned, str):
        return None, learned
    env = [entry for entry in _environ() if _sent(entry, learned["sendenv"])] + learned["setenv"]
    term = next((e[5:] for e in learned["setenv"] if e.startswith(b"TERM=") and len(e) > 5), None)
    if term is None:
        term = os.environb.get(b"TERM", b"")
    tty = learned["tty"]
    closing = b"Shared connection to %s closed.\r\n" % learned["host"] if tty and learned["closing"] else b""
    return {"control_path": learned["control_path"], "command": command, "tty": tty, "escape": learned["escape"],
            "term": term, "env": env, "closing_line": closing}, None


def _environ() -> list[bytes]:
    return [k + b"=" + v for k, v in os.environb.items()]


def _sent(entry: bytes, patterns: list[str]) -> bool:
    import fnmatch

    name = entry.split(b"=", 1)[0].decode("utf-8", "surrogateescape")
    return bool(name) and any(fnmatch.fnmatchcase(name, p) for p in patterns)


def _parse(args: list[bytes]):
    """(options, host, command) of ``ssh OPTIONS HOST COMMAND...``, or why it is not one the
    path takes."""
    at, options = 1, []
    while at < len(args) and args[at].startswith(b"-") and args[at] != b"-":
        word = args[at]
        if word == b"--":
            at += 1
            break
        letters = word[1:]
        i = 0
        while i < len(letters):
            letter = letters[i]
            if letter in _WITH_VALUE:
                if letter not in _CONFIG_VALUES:
                    return f"ssh option -{chr(letter)}"
                value = letters[i + 1:]
                if not value:
                    at += 1
                    if at >= len(args):
                        return "ssh command line not understood"
                    value = args[at]
                options += [b"-" + bytes([letter]), value]
                break
            if letter not in _CONFIG_FLAGS:
                return f"ssh option -{chr(letter)}"
            options.append(b"-" + bytes([letter]))
            i += 1
        at += 1
    if at + 1 >= len(args):
        return "ssh command line not understood"
    return options, args[at], b" ".join(args[at + 1:])


def _learned(ssh: bytes, options: list[bytes], host: bytes):
    """What ``ssh -G`` says of this command line, as the session needs it, or why the path
    does not take it; asked once per controller and command line shape."""
    key = hashlib.sha256(b"\0".join([ssh, *options, host])).hexdigest()[:32]
    path = os.path.join(_State.cache_dir or "", key)
    try:
        with open(path, encoding="utf-8") as handle:
            saved = json.load(handle)
    except (OSError, ValueError):
        saved = _ask(ssh, options, host)
        try:
            temp = f"{path}.{os.getpid()}"
            with open(temp, "w", encoding="utf-8") as handle:
                json.dump(saved, handle)
            os.replace(temp, path)
        except OSError:
            pass
    if isinstance(saved, str):
        return saved
    return {**saved, "host": saved["host"].encode("utf-8", "surrogateescape"),
            "setenv": [e.encode("utf-8", "surrogateescape") for e in saved["setenv"]]}


def _ask(ssh: bytes, options: list[bytes], host: bytes) -> dict | str:
    if not _supported_version(ssh):
        return "not OpenSSH's client program of a known version"
    commands = _config_commands(options)
    if commands:
        return commands
    try:
        done = _State.original_subprocess.run([ssh, *options, b"-G", host], stdin=subprocess.DEVNULL, capture_output=True,
                                              timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return "ssh -G failed"
    if done.returncode != 0:
        return "ssh -G failed"
    config: dict[str, list[str]] = {}
    for line in done.stdout.decode("utf-8", "surrogateescape").splitlines():
        name, _, value = line.partition(" ")
        config.setdefault(name.lower(), []).append(value)

    def one(name: str) -> str:
        return (config.get(name) or [""])[0]

    for name in ("localforward", "remoteforward", "dynamicforward"):
        if name in config:
            return "forwardings asked for"
    if one("controlmaster") not in ("auto", "false"):
        return f"ControlMaster {one('controlmaster')}"
    control_path = one("controlpath")
    if not control_path or control_path == "none":
        return "no ControlPath"
    expected = {"sessiontype": "default", "stdinnull": "no", "forkafterauthentication": "no", "forwardx11": "no",
                "forwardagent": "no", "tunnel": "false"}
    for name, value in expected.items():
        if one(name) not in (value, ""):
            return f"{name} {one(name)}"
    request = one("requesttty")
    if request not in ("force", "auto", "false"):
        return f"RequestTTY {request}"
    level = one("loglevel")
    if level not in _QUIET_LEVELS and level != "INFO":
        return f"LogLevel {level}"
    escape = one("escapechar")
    if escape == "none":
        escape_value = _ssh_mux.NO_ESCAPE
    elif len(escape) == 1:
        escape_value = ord(escape)
    else:
        return f"EscapeChar {escape}"
    patterns = config.get("sendenv", [])
    if any(c in p for p in patterns for c in "[]\\"):
        return "SendEnv pattern with brackets"
    return {"control_path": control_path, "tty": request == "force", "closing": level == "INFO", "escape": escape_value,
            "host": one("hostname"), "sendenv": patterns, "setenv": config.get("setenv", [])}


def _supported_version(ssh: bytes) -> bool:
    """Whether ``ssh`` is OpenSSH's client program itself (not a script standing for it, which
    may do more each time it runs) of a version whose mux request this module makes."""
    known = _State.versions.get(ssh)
    if known is None:
        import shutil

        try:
            found = shutil.which(os.fsdecode(ssh))
            with open(found or os.fsdecode(ssh), "rb") as handle:
                if handle.read(4) != b"\x7fELF":
                    _State.versions[ssh] = False
                    return False
            done = _State.original_subprocess.run([ssh, b"-V"], stdin=subprocess.DEVNULL, capture_output=True, timeout=30,
                                                  check=False)
            match = _VERSION.search(done.stderr)
            known = bool(match) and (8, 7) <= (int(match[1]), int(match[2])) < (11, 0)
        except (OSError, TypeError, subprocess.SubprocessError):
            known = False
        _State.versions[ssh] = known
    return known


_MATCH_EXEC = re.compile(rb"(?im)^\s*match\b[^\n]*\bexec\b")
_INCLUDE = re.compile(rb"(?im)^\s*include\s+(.+)$")


def _config_commands(options: list[bytes]) -> str | None:
    """Why the configuration ``ssh`` reads would run a command of its own on every start
    (``Match exec``), or None."""
    user_file = None
    for i in range(0, len(options) - 1):
        if options[i] == b"-F":
            user_file = os.fsdecode(options[i + 1])
    files = [user_file or os.path.expanduser("~/.ssh/config"), "/etc/ssh/ssh_config"]
    seen: set[str] = set()
    while files:
        name = files.pop()
        if name in seen or name == "none":
            continue
        seen.add(name)
        try:
            with open(name, "rb") as handle:
                text = handle.read()
        except OSError:
            continue
        if _MATCH_EXEC.search(text):
            return "ssh configuration runs commands (Match exec)"
        base = os.path.dirname(name) if name.startswith("/etc/") else os.path.expanduser("~/.ssh")
        for line in _INCLUDE.findall(text):
            for pattern in os.fsdecode(line).split():
                pattern = os.path.expanduser(pattern.strip('"'))
                files.extend(glob.glob(pattern if os.path.isabs(pattern) else os.path.join(base, pattern)))
    return None
