"""The steps ansible-core runs around a module without pipelining, taken by the host's keeper
(``remote_runner`` path; docs/runner-ssh.md#steps-by-the-keeper).  ``ANSIBLE_ACCEL_REMOTE_STEPS=0``
leaves them to SSH commands.

With ansible-core's defaults each module task runs, besides the module's own command, an SSH
command to expand the remote tmp (``echo ~USER``), one to make the task's directory
(``mkdtemp``), an ``sftp`` to write the script, and one to remove the directory.  Once a host
has a runner, its keeper (``_runner_remote``, a Python process on the host that lives as long
as the run) listens on a socket of its own, which the controller reaches through the host's
``ControlPersist`` connection (``ssh -O forward -L LOCAL:REMOTE``, made once per keeper: the
master forwards each local connection over the connection it already has).  Each of those
steps then goes to the keeper, which does it in its own process, instead of an SSH command:

- the expansion: the value the shell's tilde expansion gives (``$HOME`` for ``~``, the user's
  home directory for ``~USER``), answered as ``echo`` prints it;
- ``mkdtemp``: ``mkdir -p BASE`` and ``mkdir BASE/NAME`` under the umask 077, answered as the
  shell plugin's command prints it (``NAME=BASE/NAME``);
- the transfer: the file opened for writing, created or truncated, with the local file's mode
  (as ``sftp``'s ``put`` asks ``sftp-server``);
- the removal: ``rm -f -r DIR/`` of a directory (nothing to do if it is gone).

Only commands that are exactly what ansible-core's own ``sh`` shell plugin builds for those
steps (rebuilt here from the command's values and compared), with plain paths, are taken.  A
step the keeper declines (an error on the host, a value the shell would print otherwise) runs
as ansible-core's own command, which finds what the keeper left (a base directory made, a file
half written: as its own first steps would) and reports as ansible-core does.  A step whose
answer is lost after it was sent (the keeper killed, the connection dropped) runs again the same
way, but a ``mkdtemp``, which cannot run twice, fails the task as a dropped connection does.
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import socket
import subprocess

from .. import _counters, _runner_remote, _ssh_mux
from .._patches import switched_off
from .ssh_steps import USER_HOME, plain_path, split_command

PATH = "remote_runner"
ENV = "ANSIBLE_ACCEL_REMOTE_STEPS"  # 0: the steps run as SSH commands, as without the keeper
DONE = {b"E": "keeper: the remote tmp's expansion", b"M": "keeper: mkdtemp",
        b"W": "keeper: a file transferred", b"R": "keeper: the directory removed"}
APART = "keeper apart: "
FORWARDED = "keeper: forward made"
FILE_LIMIT = (64 << 20) - 4096  # the keeper reads requests of up to 64 MiB
TIMEOUT = 30.0
_SUB = re.compile(r'"(?:`\s*echo\s+([^`"\s]*)\s*`|\$\(\s*echo\s+([^)"\s]*)\s*\))"')


class Lost(Exception):
    """The keeper took a step and its answer did not come back."""


def _host_record(connection) -> str:
    from . import ssh_runner

    host = connection.get_option("host") or connection._play_context.remote_addr
    where = (host, connection.get_option("port"), connection.get_option("remote_user"))
    digest = hashlib.sha256(repr(where).encode("utf-8", "surrogateescape")).hexdigest()[:24]
    return os.path.join(ssh_runner._State.local_dir, "steps-" + digest)


def offer(connection, rdir: str) -> None:
    """A runner of this host is ready in ``rdir`` and its keeper listens for steps: forward a
    local socket to it through the host's ``ControlPersist`` master, unless the host has one."""
    record = _host_record(connection)
    if os.path.exists(record) or switched_off(ENV):
        return
    try:
        claim = os.open(record, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except OSError:
        return  # another worker forwards it
    local = os.path.join(os.path.dirname(record), "fwd-" + hashlib.sha256(rdir.encode()).hexdigest()[:16] + ".sock")
    try:
        if os.path.lexists(local):
            os.unlink(local)
        command = connection._build_command(connection.get_option("ssh_executable"), "ssh", "-O", "forward", "-L",
                                            f"{local}:{os.path.join(rdir, _runner_remote.STEPS)}", connection.host)
        done = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, timeout=TIMEOUT, check=False)
        if done.returncode == 0:
            line = local if os.path.exists(local) else "!its socket did not appear"
        else:
            line = "!" + (done.stderr.decode("utf-8", "replace").strip().splitlines() or [f"status {done.returncode}"])[-1]
    except (OSError, subprocess.SubprocessError) as ex:
        line = f"!{type(ex).__name__}"
    os.write(claim, (line + "\n").encode("utf-8", "surrogateescape"))
    os.close(claim)
    _counters.extra(PATH, FORWARDED if line == local else APART + "no forward made: " + line[1:][:200])


def _forwarded(connection) -> tuple[str | None, str | None]:
    """(the local socket that reaches the host's keeper, None) or (None, why there is none)."""
    try:
        with open(_host_record(connection), encoding="utf-8", errors="surrogateescape") as handle:
            line = handle.readline().rstrip("\n")
    except OSError:
        return None, "no keeper on the host yet"
    if not line:
        return None, "the keeper's forward is being made"
    if line.startswith("!"):
        return None, "no forward to the keeper"
    return line, None


def _forget(connection, local: str) -> None:
    """The keeper behind ``local`` is gone: the next runner found ready is forwarded anew."""
    try:
        with open(_host_record(connection), encoding="utf-8", errors="surrogateescape") as handle:
            if handle.readline().rstrip("\n") == local:
                os.unlink(_host_record(connection))
    except OSError:
        pass


def _why_not(connection) -> str | None:
    from . import ssh_runner

    if not ssh_runner.runs_through_the_seam(connection) or ssh_runner._State.local_dir is None or switched_off(ENV):
        return ""
    shell = connection._shell
    if getattr(shell, "SHELL_FAMILY", None) != "sh" or getattr(shell, "_IS_WINDOWS", False):
        return "a shell other than sh"
    if getattr(connection._play_context, "verbosity", 0) > 3:
        return "ssh's own debug output asked for (-vvvv)"
    return None


def greeted(local: str) -> socket.socket | None:
    """A connection to the keeper through the forward at ``local`` once the keeper greeted it
    (timeouts of ``TIMEOUT``), or None."""
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.settimeout(TIMEOUT)
    try:
        conn.connect(local)
        if _ssh_mux.recv_up_to(conn, 3) == b"A1\n":
            return conn
    except OSError:
        pass
    conn.close()
    return None


def request_frame(kind: bytes, fields: list[bytes]) -> bytes:
    """A request to the keeper: its kind, how many fields, each field with its length."""
    return kind + bytes([len(fields)]) + b"".join(len(f).to_bytes(4, "little") + f for f in fields)


def read_answer(conn) -> tuple[bytes, bytes]:
    """The keeper's answer (``0`` or ``1``, then a value), as (head, value); (b"", b"") when it
    did not come whole.  Raises ``OSError`` as the socket does."""
    head = _ssh_mux.recv_up_to(conn, 5)
    if len(head) != 5:
        return b"", b""
    size = int.from_bytes(head[1:5], "little")
    value = _ssh_mux.recv_up_to(conn, size)
    return (head, value) if len(value) == size else (b"", b"")


def _ask(connection, kind: bytes, fields: list[bytes]) -> bytes | None:
    """The keeper's value for one step, or None when it is not taken (counted); raises ``Lost``
    when the request went out and no answer came back."""
    local, why = _forwarded(connection)
    if local is None:
        _counters.extra(PATH, APART + why)
        return None
    conn = greeted(local)
    if conn is None:  # the keeper ended (its socket gone) or the forward did: nothing done
        _forget(connection, local)
        _counters.extra(PATH, APART + "the keeper did not answer")
        return None
    try:
        try:
            conn.sendall(request_frame(kind, fields))
            status, value = read_answer(conn)
        except OSError:
            status = b""
        if not status or status[:1] not in b"01":
            _forget(connection, local)
            raise Lost()
    finally:
        conn.close()
    if status[:1] == b"1":
        _counters.extra(PATH, APART + "declined on the host: " + value.decode("utf-8", "replace"))
        return None
    return value


def _parse(shell, cmd: str):
    """(kind, fields, how the command's result is made from the keeper's value) when ``cmd`` is
    one of the steps, else None."""
    split = split_command(cmd)
    if split is None:
        return None
    body = split[1]
    if body.startswith("echo "):
        word = body[5:]
        if USER_HOME.fullmatch(word) and shell.expand_user(word) == body:
            return b"E", [word.encode()], lambda value: (0, value + b"\n", b"") if plain_path(os.fsdecode(value)) else None
        return None
    if body.startswith("rm -f -r "):
        try:
            path = shlex.split(body)[3]
        except (ValueError, IndexError):
            return None
        if plain_path(path) and shell.remove(path, recurse=True) == body:
            return b"R", [path.encode()], lambda _value: (0, b"", b"")
        return None
    found = [a or b for a, b in _SUB.findall(body)]
    if len(found) >= 2 and plain_path(found[0]) and plain_path(found[1]):
        base, made = found[0], found[1]
        name = os.path.basename(made)
        if name and shell.join_path(base, name) == made and \
                shell.mkdtemp(basefile=name, system=False, tmpdir=base) == body:
            return b"M", [base.encode(), made.encode()], lambda _value: (0, f"{name}={made}\n".encode(), b"")
    return None


def command(connection, cmd, in_data, sudoable):
    """(rc, stdout, stderr) of ``cmd`` as the host's keeper took it, or None: it runs as it
    comes."""
    if in_data is not None or sudoable or not isinstance(cmd, str) or _why_not(connection) is not None:
        return None
    parsed = _parse(connection._shell, cmd)
    if parsed is None:
        return None
    kind, fields, answer = parsed
    try:
        value = _ask(connection, kind, fields)
    except Lost:
        if kind != b"M":
            _counters.extra(PATH, APART + "the keeper's answer was lost")
            return None
        from ansible.errors import AnsibleConnectionFailure

        raise AnsibleConnectionFailure("the connection to the host was lost while its temporary directory was made"
                                       " (by ansible-accel's keeper)") from None
    result = answer(value) if value is not None else None
    if value is not None and result is None:
        _counters.extra(PATH, APART + "a value the shell would print otherwise")
    if result is not None:
        _counters.extra(PATH, DONE[kind])
        _display(connection, DONE[kind])
    return result


def put_file(connection, in_path, out_path) -> bool:
    """Whether the keeper wrote ``in_path`` to ``out_path`` on the host as ``sftp`` would; False:
    ansible-core's own transfer runs."""
    why = _why_not(connection)
    if why is None:
        try:
            method = connection.get_option("ssh_transfer_method")
        except KeyError:
            method = None
        if method not in (None, "smart", "sftp"):
            why = f"transfer method {method}"
    if why is None and (not isinstance(out_path, str) or not plain_path(out_path)):
        why = "not a plain path"
    data = None
    if why is None:
        try:
            with open(in_path, "rb") as handle:
                info = os.fstat(handle.fileno())
                if info.st_size > FILE_LIMIT:
                    why = "a file over 64 MiB"
                else:
                    data = handle.read(FILE_LIMIT + 1)
        except (OSError, TypeError, ValueError):
            why = ""  # ansible-core's own transfer says what is wrong with it
    if why is not None or data is None or len(data) > FILE_LIMIT:
        if why:
            _counters.extra(PATH, APART + why)
        return False
    head = [out_path.encode(), str(info.st_mode & 0o777).encode()]
    try:
        value = _write_by_parts(connection, head, data)
        if value is None:
            value = _ask(connection, b"W", [*head, data])
    except Lost:
        _counters.extra(PATH, APART + "the keeper's answer was lost")
        return False
    if value is None:
        return False
    _counters.extra(PATH, DONE[b"W"])
    _display(connection, DONE[b"W"], f"PUT {in_path} TO {out_path}")
    return True


def _write_by_parts(connection, head: list[bytes], data: bytes) -> bytes | None:
    """An AnsiBallZ script written by the keeper from its parts, naming the zip members the
    keeper holds (``ssh_direct``): the keeper's value, or None (then it goes whole)."""
    from . import runner as local_runner
    from . import ssh_direct

    local, _why = _forwarded(connection)
    if local is None or switched_off(ssh_direct.ENV) or not local_runner._is_ansiballz(data):
        return None
    record = ssh_direct.known_record(local)
    sent = ssh_direct._by_parts(data, ssh_direct._known(record))
    if sent is None:
        return None
    value = _ask(connection, b"V", [*head, sent.frames])
    if value is None:
        ssh_direct._forget_known(record)  # the keeper may not be the one the record was made for
        return None
    ssh_direct._note_known(record, sent.new)
    _counters.extra(PATH, ssh_direct.BY_PARTS_FILE)
    return value


def _display(connection, what: str, first: str | None = None) -> None:
    from ansible.utils.display import Display

    host = connection.get_option("host") or connection._play_context.remote_addr
    if first is not None:
        Display().vvv(first, host=host)
    Display().vvv(f"ansible-accel: {what} (no SSH command)", host=host)
