"""The commands ansible-core runs around a module on the local machine, done in the worker.

Around each module run, ansible-core's action plugins run four small commands through the
connection: ``echo ~USER`` (the remote user's home), the ``mkdir`` of the task's temporary
directory, ``chmod u+rwx`` of it and of the module file, and its ``rm -f -r``.  The ``local``
connection runs each as ``/bin/sh -c '/bin/sh -c ...'``: two shells and the command, about 4 ms
of CPU apiece, more than a module costs through a warm runner.

Where a command is exactly one of those shapes, on paths that need no quoting, without
privilege escalation and with the system's ``sh`` as both shells, the worker makes the same
system calls the command would (``mkdir`` with mode 0777 under the command's umask, ``chmod``
with the old mode and the added bits, the same home lookup) and gives ansible-core the
command's exit status and output.  Anything else, and any error before the command has changed
anything, runs the shell command ansible-core built, which then fails or succeeds as it would
have: the rest of each command is idempotent (``mkdir -p`` of a directory that exists,
``chmod`` adding bits, ``rm -f -r``), so the shell's run gives ansible-core's result.

Counted as ``runner`` events: ``commands without a shell: KIND`` and ``commands through the
shell: KIND`` for a command of a known shape that needed the shell after all.
"""

from __future__ import annotations

import os
import pwd
import re
import shlex
import shutil
import stat
import subprocess
import typing as t

from .. import _counters

PATH = "runner"
_SAFE = r"/[A-Za-z0-9_.+/-]*"  # an absolute path that sh neither splits, expands nor globs
_SAFE_TEXT = re.compile(r"[A-Za-z0-9_.+/][A-Za-z0-9_.+/-]*")
_HOME = re.compile(r"echo ~([_.A-Za-z0-9][-_.A-Za-z0-9]*)?")
_MKDTEMP = re.compile(
    rf'\( umask ([0-7]{{1,3}}) && mkdir -p "` echo ({_SAFE}) `"&& mkdir "` echo ({_SAFE}) `" '
    rf'&& echo ([A-Za-z0-9_.-]+)="` echo ({_SAFE}) `" \)')
_CHMOD = re.compile(rf"chmod u\+([rwx]{{1,3}})((?: {_SAFE})+)")
_RM = re.compile(rf"rm -f -r ({_SAFE}) > /dev/null 2>&1")
_SLEEP = " && sleep 0"  # what ansible-core appends to some commands
_SHELLS = ("sh", "dash")
_BITS = {"r": stat.S_IRUSR, "w": stat.S_IWUSR, "x": stat.S_IXUSR}
# Where the commands must resolve on PATH for the worker to stand in for them.
_SYSTEM_DIRS = ("/usr/bin", "/bin")

Result = tuple[int, bytes, bytes]


class Finished:
    """What ``subprocess.Popen`` gives the local connection for a command already done: its
    ``communicate()`` returns the output and ``returncode`` the exit status."""

    def __init__(self, args, returncode: int, stdout: bytes, stderr: bytes):
        self.args = args
        self.returncode = returncode
        self._output = (stdout, stderr)
        self.stdin = self.stdout = self.stderr = None
        self.pid = None

    def communicate(self, input=None, timeout=None):
        return self._output

    def wait(self, timeout=None) -> int:
        return self.returncode

    def poll(self) -> int:
        return self.returncode

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        return None


def route(connection, cmd, in_data, sudoable) -> t.Callable[[dict], t.Any] | None:
    """A function that, given ``Popen``'s keyword arguments, does ``cmd`` and returns a
    ``Finished``, or returns None when the shell must run it; None when ``cmd`` is none of the
    commands this module does."""
    if not isinstance(cmd, str) or in_data is not None or (sudoable and getattr(connection, "become", None) is not None):
        return None
    inner = _inner_command(cmd)
    if inner is None:
        return None
    for kind, pattern, action in _KINDS:
        match = pattern.fullmatch(inner)
        if match is not None:
            return lambda kwargs: _run(kind, action, match, cmd, kwargs)
    return None


_EXECUTABLE = re.compile(r"[A-Za-z0-9_./+-]+")
_QUOTE_IN_QUOTES = "'\"'\"'"  # how shlex.quote writes a ' inside '...'


def split_shell_c(cmd: str) -> tuple[str, str] | None:
    """(EXECUTABLE, COMMAND) when ``cmd`` is exactly ``EXECUTABLE -c QUOTED`` as ansible-core
    writes it (``shlex.quote`` of COMMAND, EXECUTABLE a plain word); else None.  The same
    answer as splitting ``cmd`` with ``shlex`` and quoting the parts again, without its cost."""
    at = cmd.find(" -c ")
    if at <= 0 or not _EXECUTABLE.fullmatch(cmd, 0, at):
        return None
    quoted = cmd[at + 4:]
    if len(quoted) >= 2 and quoted[0] == quoted[-1] == "'":
        inner = quoted[1:-1].replace(_QUOTE_IN_QUOTES, "'")
    else:
        inner = quoted
    return (cmd[:at], inner) if shlex.quote(inner) == quoted else None


def _inner_command(cmd: str) -> str | None:
    """The command ``SH -c QUOTED`` runs, without ansible-core's `` && sleep 0``, when SH is
    the system's ``sh``; else None."""
    split = split_shell_c(cmd)
    if split is None or not (os.path.isabs(split[0]) and os.path.basename(split[0]) in _SHELLS):
        return None
    return split[1].removesuffix(_SLEEP)


def _run(kind: str, action, match, cmd: str, kwargs: dict):
    executable = kwargs.get("executable")
    if not (kwargs.get("shell") and executable and os.path.isabs(executable)
            and os.path.basename(executable) in _SHELLS and kwargs.get("env") is None):
        _counters.extra(PATH, f"commands through the shell: {kind}")
        return None
    done = action(match)
    if done is None:
        _counters.extra(PATH, f"commands through the shell: {kind}")
        return None
    _counters.extra(PATH, f"commands without a shell: {kind}")
    return Finished(cmd, *done)


_found: dict[tuple[str, str | None], bool] = {}


def _system_command(name: str) -> bool:
    """Whether ``name`` found on the worker's PATH, as the shell would find it, is the system's."""
    key = (name, os.environ.get("PATH"))
    if key not in _found:
        found = shutil.which(name)
        _found[key] = found is not None and os.path.dirname(found) in _SYSTEM_DIRS
    return _found[key]


def _home(match) -> Result | None:
    user = match[1]
    if user:
        try:
            home = pwd.getpwnam(user).pw_dir
        except (KeyError, OSError):
            return None  # the shell leaves ~USER as it is
    else:
        home = os.environ.get("HOME", "")
    if not _SAFE_TEXT.fullmatch(home):
        return None
    return 0, os.fsencode(home) + b"\n", b""


def _mkdtemp(match) -> Result | None:
    umask, parent, directory, name, echoed = int(match[1], 8), match[2], match[3], match[4], match[5]
    if not (os.path.isdir(parent) and _system_command("mkdir")):
        return None  # the parents to make, or an error to report: the shell's
    previous = os.umask(umask)
    try:
        os.mkdir(directory, 0o777)
    except OSError:
        return None  # nothing was made: the shell's mkdir reports it
    finally:
        os.umask(previous)
    return 0, f"{name}={echoed}\n".encode(), b""


def _chmod(match) -> Result | None:
    bits = 0
    for letter in match[1]:
        bits |= _BITS[letter]
    if not _system_command("chmod"):
        return None
    try:
        for path in match[2].split():
            mode = stat.S_IMODE(os.stat(path).st_mode)
            os.chmod(path, mode | bits)
    except OSError:
        return None  # the shell's chmod adds the same bits again and reports the error
    return 0, b"", b""


def _rm(match) -> Result | None:
    path = match[1]
    bare = path.rstrip("/")
    if not bare or os.path.islink(bare) or not _system_command("rm"):
        return None
    if not os.path.lexists(path):
        return 0, b"", b""
    if not os.path.isdir(path) or os.path.realpath(path) == "/":
        return None
    try:
        shutil.rmtree(path)
    except OSError:
        return None  # the shell's rm removes what is left and gives its exit status
    return 0, b"", b""


_KINDS = (
    ("home", _HOME, _home),
    ("mkdtemp", _MKDTEMP, _mkdtemp),
    ("chmod", _CHMOD, _chmod),
    ("rm", _RM, _rm),
)


def popen_or_done(args, kwargs: dict, planned):
    """The local connection's ``Popen`` for a planned command: done here when it can be."""
    done = planned(kwargs)
    return done if done is not None else subprocess.Popen(args, **kwargs)
