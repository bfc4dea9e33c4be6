"""A module task's ``chmod`` run in the module's own SSH command (``remote_runner`` path, no
pipelining; docs/runner-ssh.md#the-steps-around-a-module).

Without pipelining, ansible-core's ``_execute_module`` makes the script it has just transferred
executable (``_fixup_perms2``: ``chmod u+rwx TMP SCRIPT``, an SSH command of its own) and then
runs it (another).  Nothing remote happens between the two.  When the module's run goes to the
host's runner, the ``chmod`` is kept back and runs as the first part of the module's command, in
the same shell, with its output discarded:

    /bin/sh -c 'chmod u+rwx TMP SCRIPT >/dev/null 2>&1 || { printf "%s\\n" TOKEN; exit 97; }; RUN'

A ``chmod`` that fails there stops the command before the module runs (TOKEN, a random word
of each command, as its last line, status 97); ``_fixup_perms2`` is then called as ansible-core
calls it, which runs the ``chmod`` again the ordinary way and raises what ansible-core raises
when it fails, and the module's command runs after it without the ``chmod``.  Any other remote
operation that comes while a ``chmod`` is kept back runs it the ordinary way first.
"""

from __future__ import annotations

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
    if not isinstance(connection, ssh_runner.ssh_connection_class()):
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
