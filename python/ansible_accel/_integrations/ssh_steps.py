"""Two of the steps ansible-core runs around a module, without pipelining, run inside the SSH
commands next to them (``remote_runner`` path; docs/runner-ssh.md#the-steps-around-a-module).

**chmod in the module's command.**  ``_execute_module`` makes the script it has just
transferred executable (``_fixup_perms2``: ``chmod u+rwx TMP SCRIPT``, an SSH command of its
own) and then runs it (another); nothing remote happens between the two.  When the module's run
goes to the host's runner, the ``chmod`` is kept back and runs as the first part of the module's
command, in the same shell, with its output discarded:

    /bin/sh -c 'chmod u+rwx TMP SCRIPT >/dev/null 2>&1 || { printf "%s\\n" TOKEN; exit 97; }; RUN'

A ``chmod`` that fails there stops the command before the module runs (TOKEN, a random word
of each command, as its last line, status 97); ``_fixup_perms2`` is then called as ansible-core
calls it, which runs the ``chmod`` again the ordinary way and raises what ansible-core raises
when it fails, and the module's command runs after it without the ``chmod``.  Any other remote
operation that comes while a ``chmod`` is kept back runs it the ordinary way first.

**mkdtemp in the remote tmp's expansion.**  ``_make_tmp_path`` runs ``echo ~USER`` (a remote
tmp under ``~``), builds the directory's path from its output, and runs ``mkdtemp``; nothing
remote happens between the two.  Its directory's name is chosen first (ansible-core's own
generator, whose value ``_make_tmp_path`` then gets), and once the host has given an expansion
in this run, the expansion and ansible-core's ``mkdtemp`` for that expansion run in one command;
the ``mkdtemp`` only if the host's expansion is still that one.  Each gets back its own status,
output and error output when ansible-core runs it; a ``mkdtemp`` that failed there runs again as
ansible-core's own command, which fails (or not) and reports as ansible-core does.
"""

from __future__ import annotations

import os
import re
import secrets
import shlex
import sys
import threading

from .. import _counters

PATH = "remote_runner"
FOLDED = "steps: chmod in the module's command"
APART = "steps apart: "
STOPPED = 97

_kept = threading.local()  # .chmod: (action, remote_paths, remote_user, execute, command) kept back


class Originals:
    fixup_perms2 = None
    make_tmp_path = None


def fixup_perms2(self, remote_paths, remote_user=None, execute=True):
    """``ActionBase._fixup_perms2``: kept back when it is the ``chmod`` of a module script about
    to run (see the module's docstring), else ansible-core's own."""
    why = _why_apart(self, remote_paths, execute)
    if why is not None:
        if why:
            _counters.extra(PATH, APART + why)
        return Originals.fixup_perms2(self, remote_paths, remote_user, execute)
    command = self._connection._shell.chmod(remote_paths, "u+rwx")
    _kept.chmod = (self, list(remote_paths), remote_user, execute, command)
    return remote_paths


def _why_apart(action, remote_paths, execute) -> str | None:
    """Why this ``_fixup_perms2`` runs the ordinary way: a reason to count, "" when it is no
    module task's ``chmod`` (nothing to count), None when it can be kept back."""
    from . import ssh_runner

    caller = sys._getframe(2).f_code
    if caller.co_name != "_execute_module" or not caller.co_filename.endswith(("action/__init__.py",)):
        return ""
    connection = action._connection
    if not ssh_runner.runs_through_the_seam(connection):
        return ""
    if getattr(connection, "become", None) is not None:
        return "become"
    shell = connection._shell
    if getattr(shell, "SHELL_FAMILY", None) != "sh" or getattr(shell, "_IS_WINDOWS", False):
        return "a shell other than sh"
    if not execute:
        return "not made executable"
    last = ssh_runner.last_transferred()
    paths = list(remote_paths)
    if last is None or len(paths) != 2 or paths[1] != last[0] or paths[0] != shell.tmpdir:
        return "other files than the module's script (old-style module, async or arguments file)"
    if not _plain_word(shell.chmod(paths, "u+rwx")):
        return "a chmod command the module's command cannot carry"
    return None


def _plain_word(command: str) -> bool:
    return "\n" not in command and "\0" not in command


def take():
    """The ``chmod`` kept back, if any, now no longer kept."""
    kept = getattr(_kept, "chmod", None)
    _kept.chmod = None
    return kept


def run_apart(kept) -> None:
    """ansible-core's ``_fixup_perms2`` for a ``chmod`` kept back: it runs the ordinary way (and
    raises what ansible-core raises if it fails)."""
    action, remote_paths, remote_user, execute, _command = kept
    Originals.fixup_perms2(action, remote_paths, remote_user, execute)


def flush() -> None:
    """Before any other remote operation: the ``chmod`` kept back runs the ordinary way."""
    kept = take()
    if kept is not None:
        flush_kept(kept)


def flush_kept(kept, why: str = "another remote operation came first") -> None:
    _counters.extra(PATH, APART + why)
    run_apart(kept)


def fold(kept, cmd: str) -> tuple[str, bytes] | None:
    """``cmd`` (``EXECUTABLE -c INNER``) with the kept ``chmod`` run first, and the token that
    marks its stop; None when ``cmd`` is of no shape to carry it."""
    words = shlex.split(cmd)
    if len(words) != 3 or words[1] != "-c":
        return None
    token = "ansible-accel-chmod-" + secrets.token_hex(16)
    inner = f"{kept[4]} >/dev/null 2>&1 || {{ printf '%s\\n' {token}; exit {STOPPED}; }}; {words[2]}"
    return f"{words[0]} -c {shlex.quote(inner)}", token.encode()


def stopped(result, token: bytes) -> bool:
    """Whether the folded command stopped at its ``chmod`` (the module did not run)."""
    rc, stdout, _stderr = result
    if rc != STOPPED or not isinstance(stdout, bytes):
        return False
    lines = stdout.rstrip(b"\r\n").split(b"\n")
    return lines[-1].rstrip(b"\r") == token


# --- the remote tmp's expansion and the task's directory in one command ---------------------------

FOLDED_TMP = "steps: mkdtemp in the expansion's command"
TMP_APART = "mkdtemp apart: "
USER_HOME = re.compile(r"~(?:[_.A-Za-z0-9][-_.A-Za-z0-9]*)?")
_PLAIN_PATH = re.compile(r"/[-_.+A-Za-z0-9/]*")
_tmp = threading.local()  # .pending: what make_tmp_path keeps while ansible-core's runs
_AND_SLEEP = " && sleep 0"


class _PendingTmp:
    __slots__ = ("action", "basefile", "remote_tmp", "made")

    def __init__(self, action, basefile, remote_tmp):
        self.action, self.basefile, self.remote_tmp = action, basefile, remote_tmp
        self.made = None  # (the mkdtemp command, its result) once run in the expansion's command


def make_tmp_path(self, remote_user=None):
    """``ActionBase._make_tmp_path``: ansible-core's own, with its directory's name chosen first,
    so that its ``mkdtemp`` can run in the command that expands the remote tmp (``tmp_exec``)."""
    why = _why_tmp_apart(self)
    if why is not None:
        if why:
            _counters.extra(PATH, TMP_APART + why)
        return Originals.make_tmp_path(self, remote_user)
    shell = self._connection._shell
    basefile = shell._generate_temp_dir_name()
    _tmp.pending = _PendingTmp(self, basefile, self.get_shell_option("remote_tmp", default="~/.ansible/tmp"))
    shell._generate_temp_dir_name = lambda: basefile  # the name ansible-core's own call gets
    try:
        return Originals.make_tmp_path(self, remote_user)
    finally:
        _tmp.pending = None
        vars(shell).pop("_generate_temp_dir_name", None)


def _why_tmp_apart(action) -> str | None:
    from . import ssh_runner

    connection = action._connection
    if not ssh_runner.runs_through_the_seam(connection) or getattr(connection, "_remote_is_local", False):
        return ""
    remote_tmp = action.get_shell_option("remote_tmp", default="~/.ansible/tmp")
    if not isinstance(remote_tmp, str) or not remote_tmp.startswith("~"):
        return ""  # nothing to expand: the mkdtemp is the directory's only command
    if getattr(connection, "become", None) is not None:
        return "become"
    shell = connection._shell
    if getattr(shell, "SHELL_FAMILY", None) != "sh" or getattr(shell, "_IS_WINDOWS", False):
        return "a shell other than sh"
    try:
        retries = int(connection.get_option("reconnection_retries") or 0)
    except (KeyError, TypeError, ValueError):
        retries = 1
    if retries:  # a command sent again after a dropped connection would make the directory twice
        return "reconnection retries"
    return None


def tmp_exec(connection, cmd, in_data, sudoable, run, home_state):
    """While ``make_tmp_path`` runs: the expansion of the remote tmp (``echo ~USER``) run with
    ansible-core's ``mkdtemp`` of the directory after it, in one command, when the expansion is
    the one seen before on this host; then that ``mkdtemp``'s own result when ansible-core asks
    for it.  None for any other command (it runs as it comes)."""
    pending = getattr(_tmp, "pending", None)
    if pending is None or in_data is not None or sudoable or not isinstance(cmd, str):
        return None
    if pending.made is not None:
        made, pending.made = pending.made, None
        if cmd == made[0]:
            _counters.extra(PATH, FOLDED_TMP)
            return made[1]
        # Cannot happen (the mkdtemp ran only for the expansion ansible-core got); the command
        # that came runs as it comes.
        return None
    split = split_command(cmd)
    if split is None:
        return None
    executable, body, suffix = split
    shell, inner = connection._shell, body + suffix
    word = body[5:] if body.startswith("echo ") else ""
    if not USER_HOME.fullmatch(word) or shell.expand_user(word) != body:
        return None
    guess = home_state.read(connection, word)
    base = _base(pending.remote_tmp, guess) if guess else None
    if base is None:
        _counters.extra(PATH, TMP_APART + ("the expansion not known yet" if not guess else "not a plain path"))
        result = run(cmd)
        home_state.write(connection, word, _fragment(result))
        return result
    made_inner = shell.mkdtemp(basefile=pending.basefile, system=False, tmpdir=base) + suffix
    token = "ansible-accel-tmp-" + secrets.token_hex(16)
    folded = (f"{inner}; printf '%s E %s\\n' {token} \"$?\"; printf '%s\\n' {token} >&2; "
              f"[ \"$({shell.expand_user(word)})\" = {shlex.quote(guess)} ] || exit 0; "
              f"printf '%s M\\n' {token}; {made_inner}")
    rc, stdout, stderr = run(f"{executable} -c {shlex.quote(folded)}")
    expanded, made = _split(token.encode(), rc, stdout, stderr)
    if made is not None and made[0] == 0:
        pending.made = (f"{executable} -c {shlex.quote(made_inner)}", made)
    elif made is not None:
        _counters.extra(PATH, TMP_APART + "failed in the expansion's command")
    # A mkdtemp that failed here is not given back: ansible-core's own runs then, as a command of
    # its own (what the user's shell start files print, in its error, is then that command's);
    # it finds what this one left (a base directory made: as the first step of its own run).
    home_state.write(connection, word, _fragment(expanded))
    return expanded


def split_command(cmd) -> tuple[str, str, str] | None:
    """(EXECUTABLE, BODY, SUFFIX) of a command as ``_low_level_execute_command`` hands it to the
    connection, ``EXECUTABLE -c 'BODY[ && sleep 0]'`` (SUFFIX the `` && sleep 0`` or ""), or None
    for a command of another shape."""
    if not isinstance(cmd, str):
        return None
    try:
        words = shlex.split(cmd)
    except ValueError:
        return None
    if len(words) != 3 or words[1] != "-c" or cmd != f"{words[0]} -c {shlex.quote(words[2])}":
        return None
    inner = words[2]
    suffix = _AND_SLEEP if inner.endswith(_AND_SLEEP) else ""  # appended to every command by ansible-core 2.19
    return words[0], inner[:len(inner) - len(suffix)], suffix


def plain_path(path: str) -> bool:
    """An absolute path the shell's ``echo`` gives back as it is, without ``..``."""
    return bool(_PLAIN_PATH.fullmatch(path)) and ".." not in path.split("/")


def _base(remote_tmp: str, home: str) -> str | None:
    """The remote tmp as ``_remote_expand_user`` makes it from ``home``, or None when ``home``
    is not a plain absolute path (one the shell's ``echo`` gives back as it is)."""
    if not plain_path(home):
        return None
    parts = remote_tmp.split("/", 1)
    base = os.path.join(home, parts[1]) if len(parts) > 1 else home
    if not _PLAIN_PATH.fullmatch(base) or ".." in os.path.dirname(base).split("/"):
        return None
    return base


def _fragment(result) -> str | None:
    """What ansible-core takes of an expansion's output: its last line, stripped."""
    rc, stdout, _stderr = result
    if rc != 0 or not isinstance(stdout, bytes):
        return None
    lines = stdout.decode("utf-8", "replace").strip().splitlines()
    return lines[-1] if lines else None


def _split(token: bytes, rc, stdout, stderr):
    """(the expansion's result, the mkdtemp's result or None when it did not run) of a folded
    command's ``rc``, ``stdout`` and ``stderr``."""
    mark = stdout.find(token + b" E ")
    if mark < 0:  # the shell ended before the expansion did: that is the expansion's result
        return (rc, stdout, stderr), None
    end = stdout.find(b"\n", mark)
    expanded_rc = int(stdout[mark + len(token) + 3:end])
    rest = stdout[end + 1:]
    err = stderr.find(token + b"\n")
    expanded_err, made_err = (stderr[:err], stderr[err + len(token) + 1:]) if err >= 0 else (stderr, b"")
    expanded = (expanded_rc, stdout[:mark], expanded_err)
    if not rest.startswith(token + b" M\n"):
        return expanded, None
    return expanded, (rc, rest[len(token) + 3:], made_err)
