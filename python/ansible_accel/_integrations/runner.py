"""The ``runner`` path: Python modules run on the controller's machine start warm.

ansible-core's ``local`` connection runs a module as ``/bin/sh -c '[ENV=...] PYTHON [SCRIPT]'``
(SCRIPT on standard input when pipelining).  Where that command is exactly such a run of an
AnsiBallZ module, the same shell command runs ``ansible-accel-run SOCKET PYTHON [SCRIPT]``
instead: the client hands its standard streams, environment, working directory and the rest to
a warm runner for PYTHON, whose forked child runs the script as that interpreter would have
(``_runner_server``).  The shell, its environment and its exit status are ansible-core's own;
``-vvv`` shows the command ansible-core built.  The seam is the ``subprocess.Popen`` call of
``local.Connection.exec_command``, for the one call that the path has planned.  The same seam
serves the commands ansible-core runs around a module (its temporary directory, the user's
home), which the worker does itself where it can (``local_commands``).

Counters: ``native`` per module handed to a runner; fallbacks by reason for each module run
that went the ordinary way: decided in the worker (become, async, not an AnsiBallZ module,
options on the interpreter, the runner still starting...) or, rarely, by the client or the
runner after the hand-over (counted by the controller from the runner directory).

Off with ``ANSIBLE_ACCEL_RUNNER=0`` (or ``false``/``no``/``off``), or ``runner = false`` in
the ``[callback_ansible_accel]`` section.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import threading
import types

from .. import _counters, _runner_pool
from .._activation import Patch, Unavailable, core_version
from .._patches import switched_off
from . import local_commands

PATH = "runner"
ENV = "ANSIBLE_ACCEL_RUNNER"
_PYTHON_NAME = re.compile(r"python[0-9.]*")
_ASSIGNMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=(.*)", re.S)
_PLAIN_WORDS = re.compile(r"[^\s'\"\\]+(?: [^\s'\"\\]+)*")

_original_exec_command = None
_pending = threading.local()
_folded = 0


def plan() -> list[Patch]:
    global _original_exec_command
    reason = switched_off(ENV)
    if reason:
        raise Unavailable(reason)
    try:
        from ansible.plugins.connection import local
    except ImportError as ex:
        raise Unavailable(f"ansible's local connection is not importable: {ex}") from None
    try:
        _runner_pool.prepare(core_version() or "")
    except Exception as ex:  # noqa: BLE001 - each reason the runners cannot be used here
        raise Unavailable(f"warm runners unavailable: {type(ex).__name__}: {ex}") from None
    _original_exec_command = vars(local.Connection)["exec_command"]
    _counters.pending(PATH, _fold_after_routing)
    return [
        Patch(local.Connection, "exec_command", _exec_command),
        Patch(local, "subprocess", _subprocess_view()),
    ]


def switch_off(reason: str) -> None:
    """The callback's ``runner = false``: modules go the ordinary way from here on."""
    from .._activation import switch_off_path

    switch_off_path(PATH, reason)


def _subprocess_view() -> types.ModuleType:
    """``subprocess`` as the local connection sees it: the real module, but the one planned
    ``Popen`` call runs the rewritten command."""
    view = types.ModuleType("subprocess", subprocess.__doc__)
    view.__dict__.update({k: v for k, v in vars(subprocess).items() if not k.startswith("__")})

    def popen(args, *rest, **kwargs):
        planned = getattr(_pending, "command", None)
        if planned is not None and args == planned[0]:
            _pending.command = None
            if callable(planned[1]) and not rest:
                return local_commands.popen_or_done(args, kwargs, planned[1])
            args = planned[1]
        return subprocess.Popen(args, *rest, **kwargs)

    view.Popen = popen
    return view


def _exec_command(self, cmd, in_data=None, sudoable=True):
    done_here = local_commands.route(self, cmd, in_data, sudoable)
    routed = (cmd, done_here) if done_here is not None else _route(self, cmd, in_data, sudoable)
    if routed is None:
        return _original_exec_command(self, cmd, in_data=in_data, sudoable=sudoable)
    _pending.command = routed
    try:
        return _original_exec_command(self, cmd, in_data=in_data, sudoable=sudoable)
    finally:
        _pending.command = None


def _route(connection, cmd, in_data, sudoable):
    """(the command as ansible-core built it, the command that runs it warm), or None when
    this is not a Python module run or it goes the ordinary way (then counted)."""
    if not isinstance(cmd, str):
        return None
    parsed = _parse_run(cmd, in_data)
    if parsed is None:
        kind = other_module_run(cmd, in_data)
        if kind is not None:
            become = sudoable and getattr(connection, "become", None) is not None
            _counters.fallback(PATH, "become" if become else kind)
        return None
    assignments, interpreter, script, args, suffix = parsed
    if args:  # an async task's start: async_wrapper.py and its arguments
        if not _is_ansiballz_file(script, name=_ASYNC_WRAPPER):
            _counters.fallback(PATH, ASYNC)
            return None
        is_module = True
    else:
        is_module = _is_ansiballz(in_data) if script is None else _is_ansiballz_file(script)
    if not is_module:
        if script is None and in_data is None:
            return None  # a bare interpreter (discovery and the like), not a module
        if _PYTHON_NAME.fullmatch(os.path.basename(interpreter)):
            _counters.fallback(PATH, "not an AnsiBallZ Python module (old-style, WANT_JSON or binary)")
        return None
    reason = _why_ordinary(connection, sudoable, interpreter)
    if reason is None:
        env = dict(os.environ)
        env.update(assignments)
        source = in_data if script is None else _read(script)
        if source is None:
            reason = "module script not readable"
        else:
            sock, reason = _runner_pool.runner_socket(interpreter, env, source)
    if reason is not None:
        _counters.fallback(PATH, reason)
        return None
    _counters.native(PATH)
    words = [_runner_pool.client_path(), sock, interpreter, *([script] if script is not None else []), *args]
    return cmd, _rewrite(cmd, assignments, words, suffix)


def _parse_run(cmd: str, in_data):
    """``([(name, value)...], interpreter, script or None, [arguments...], suffix)`` of a module
    command (no arguments) or of an async task's start; else None."""
    parsed = parse_module_command(cmd)
    if parsed is not None:
        assignments, interpreter, script, suffix = parsed
        return assignments, interpreter, script, (), suffix
    return parse_async_command(cmd, in_data)


def _why_ordinary(connection, sudoable, interpreter) -> str | None:
    from ansible import constants as C

    if sudoable and getattr(connection, "become", None) is not None:
        return "become"
    if C.DEFAULT_KEEP_REMOTE_FILES:
        return "ANSIBLE_KEEP_REMOTE_FILES"
    if not os.path.isabs(interpreter):
        return "interpreter not an absolute path"
    return None


_AND_SLEEP = ["&&", "sleep", "0"]  # appended by ansible-core 2.19
_MODULE_FILE = re.compile(r"AnsiballZ_.+\.py|async_wrapper\.py")
ASYNC = "async (async_wrapper starts the module)"
_ASYNC_WRAPPER = "async_wrapper.py"
OTHER_SHAPE = "a module command of another shape (arguments)"


def other_module_run(cmd: str, in_data) -> str | None:
    """For a command that is not ``INTERPRETER [SCRIPT]``: the fallback reason when it still runs
    a Python module (``async_wrapper``'s start, a module given arguments, a become wrapper
    around a module run), None when it runs none (``chmod``, ``rm`` and the other commands
    ansible-core runs around a module)."""
    words = _shell_words(cmd)
    if _is_ansiballz(in_data):
        return OTHER_SHAPE
    for i, word in enumerate(words[:-1]):
        if _PYTHON_NAME.fullmatch(os.path.basename(word)) and _MODULE_FILE.fullmatch(os.path.basename(words[i + 1])):
            return ASYNC if os.path.basename(words[i + 1]) == "async_wrapper.py" else OTHER_SHAPE
    return None


def _shell_words(cmd: str, depth: int = 3) -> list[str]:
    """The words of ``cmd`` and of the commands it runs through ``SHELL -c`` (a become wrapper
    nests them), as far as they split."""
    try:
        words = shlex.split(cmd)
    except ValueError:
        return []
    found = []
    for i, word in enumerate(words):
        if depth and i and words[i - 1] == "-c":
            found.extend(_shell_words(word, depth - 1))
        else:
            found.extend(shlex.split(word) if depth and ";" in word else [word])
    return found


def parse_module_command(cmd: str):
    """``([(name, value)...], interpreter, script or None, suffix)`` when ``cmd`` is exactly
    ``EXECUTABLE -c QUOTED`` whose inner command is ``[NAME=VALUE...] INTERPRETER [SCRIPT]``
    (then `` && sleep 0`` or nothing) as ansible-core's sh shell quotes it; else None."""
    split = _split_inner(cmd)
    if split is None:
        return None
    assignments, words, suffix = split
    if len(words) not in (1, 2) or any(w.startswith("-") for w in words[1:]):
        return None
    return assignments, words[0], (words[1] if len(words) == 2 else None), suffix


def parse_async_command(cmd: str, in_data=None):
    """``([(name, value)...], interpreter, script, [arguments...], suffix)`` when ``cmd`` is
    ansible-core's start of an ``async`` task, exactly: ``EXECUTABLE -c QUOTED`` whose inner
    command is ``[NAME=VALUE...] INTERPRETER /DIR/async_wrapper.py JID LIMIT`` and then the
    arguments of one of the wrapper's two shapes (the module in the wrapper's directory), nothing
    on standard input; else None.  The shapes:

    - ``PRESERVE MODULE INTERPRETER MODULE [ARGS_FILE]`` (the wrapped module's own command last;
      ansible-core 2.20 and later);
    - ``MODULE ARGS_FILE|_ [-preserve_tmp]`` (2.19)."""
    if in_data is not None:
        return None
    split = _split_inner(cmd)
    if split is None:
        return None
    assignments, words, suffix = split
    if len(words) < 6 or os.path.basename(words[1]) != _ASYNC_WRAPPER:
        return None
    interpreter, script, _jid, limit, *rest = words
    here = os.path.dirname(script)
    if not os.path.isabs(script) or not limit.isdigit():
        return None
    if len(rest) in (4, 5):
        preserve, module, module_interpreter, module_again = rest[:4]
        fits = (preserve in ("true", "false") and module_interpreter == interpreter and module_again == module
                and os.path.dirname(module) == here)
    elif len(rest) in (2, 3):
        module, args_file = rest[:2]
        fits = (os.path.dirname(module) == here and (args_file == "_" or os.path.dirname(args_file) == here)
                and rest[2:] in ([], ["-preserve_tmp"]))
    else:
        fits = False
    return (assignments, interpreter, script, words[2:], suffix) if fits else None


def _split_inner(cmd: str):
    """``([(name, value)...], [word...], suffix)`` of ``EXECUTABLE -c QUOTED`` whose inner
    command is assignments then words, as ansible-core's sh shell quotes them; else None."""
    outer = local_commands.split_shell_c(cmd)
    if outer is None:
        return None
    inner = outer[1]
    if _PLAIN_WORDS.fullmatch(inner):
        words = inner.split(" ")  # what shlex gives for words without quotes, escapes or runs of blanks
    else:
        try:
            words = shlex.split(inner)
        except ValueError:
            return None
    if not words:
        return None
    suffix = ""
    if words[-3:] == _AND_SLEEP:
        words, suffix = words[:-3], " && sleep 0"
    assignments = []
    while words and (match := _ASSIGNMENT.fullmatch(words[0])):
        assignments.append((match[1], match[2]))
        words.pop(0)
    if not words or _join(assignments, words) + suffix != inner:
        return None
    return assignments, words, suffix


def _join(assignments, words) -> str:
    return " ".join([*(f"{k}={shlex.quote(v)}" for k, v in assignments), *(shlex.quote(w) for w in words)])


def _rewrite(cmd: str, assignments, words: list[str], suffix: str) -> str:
    """``cmd`` with its inner command made ``[NAME=VALUE...] WORDS...`` (then ``suffix``), quoted
    as ansible-core's sh shell quotes it, in the same shell: the interpreter run through the
    client is ``CLIENT SOCKET INTERPRETER [SCRIPT] [ARGUMENTS...]``."""
    executable = shlex.split(cmd)[0]
    return f"{executable} -c {shlex.quote(_join(assignments, words) + suffix)}"


_MARK = b"_ANSIBALLZ_WRAPPER = True"


def _is_ansiballz(data) -> bool:
    return isinstance(data, bytes) and data.startswith(b"#!") and _MARK in data[:8192]


def _is_ansiballz_file(path: str, name: str | None = None) -> bool:
    """``path`` is an AnsiBallZ script (named ``AnsiballZ_*``, or exactly ``name``)."""
    base = os.path.basename(path)
    if not (base == name if name is not None else base.startswith("AnsiballZ_")):
        return False
    try:
        with open(path, "rb") as handle:
            return _is_ansiballz(handle.read(8192))
    except OSError:
        return False


def _read(path: str) -> bytes | None:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError:
        return None


def _fold_after_routing() -> int:
    """In the controller: the modules handed to a runner that went the ordinary way after all
    (written by the client or the runner), counted as fallbacks and taken off ``native``."""
    global _folded
    if os.getpid() != _runner_pool._Pool.owner_pid:
        return 0
    lines = _runner_pool.fallbacks_seen()
    new = lines[_folded:]
    _folded = len(lines)
    bucket = _counters._fallback[PATH]  # called under the counters' lock (a pending count)
    for line in new:
        bucket[f"after hand-over: {line}"] += 1
    return -len(new)
