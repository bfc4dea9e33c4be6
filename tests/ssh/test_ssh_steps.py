"""The module's command that carries its ``chmod`` (``ssh_steps``), without a host: what runs
when the ``chmod`` fails there (ansible-core's own ``_fixup_perms2``, then the module's command
alone), when it raises (the module does not run, and is not counted as run), when another
remote operation comes first, and how a stop is told apart from a module's output."""

from __future__ import annotations

import os
import re
import shlex

import pytest
from ansible_accel import _counters
from ansible_accel._integrations import ssh_runner, ssh_steps

SCRIPT = "/t/ansible-tmp-1-2-3/AnsiballZ_ping.py"
MODULE = f"/bin/sh -c '/usr/bin/python3 {SCRIPT} && sleep 0'"
ROUTED = f"/bin/sh -c 'if [ -S /r/s ]; then /r/client /r/s /usr/bin/python3 {SCRIPT}; fi && sleep 0'"
KEPT = ("action", ["/t/ansible-tmp-1-2-3/", SCRIPT], "root", True, f"chmod u+rwx /t/ansible-tmp-1-2-3/ {SCRIPT}")


@pytest.fixture
def host(monkeypatch):
    """A fake host: the commands sent, the ``chmod`` made to fail or not in the module's command."""
    state = {"sent": [], "chmod_fails": False, "fixups": []}

    def exec_command(connection, cmd, in_data=None, sudoable=True):
        state["sent"].append(cmd)
        token = re.search(r"ansible-accel-chmod-[0-9a-f]{32}", cmd)
        if token and state["chmod_fails"]:
            return ssh_steps.STOPPED, f"{token.group(0)}\r\n".encode(), b"Shared connection to h closed.\r\n"
        return 0, b'\r\n{"ping": "pong"}\r\n', b""

    def fixup_perms2(action, remote_paths, remote_user=None, execute=True):
        state["fixups"].append((action, remote_paths))
        if state.get("fixup_raises"):
            raise RuntimeError("Failed to set permissions on remote files")
        return remote_paths

    monkeypatch.setattr(ssh_runner._State, "original_exec_command", exec_command)
    monkeypatch.setattr(ssh_steps.Originals, "fixup_perms2", fixup_perms2)
    monkeypatch.setattr(ssh_runner, "_route", lambda c, cmd, i, s: ROUTED if cmd == MODULE else None)
    _counters.reset()
    yield state
    ssh_steps.take()
    _counters.reset()


def _events():
    return _counters.snapshot().get("remote_runner", {}).get("events", {})


def test_the_chmod_runs_first_in_the_module_command(host):
    ssh_steps._kept.chmod = KEPT
    assert ssh_runner._exec_command(object(), MODULE) == (0, b'\r\n{"ping": "pong"}\r\n', b"")
    [sent] = host["sent"]
    inner = sent.split(" -c ", 1)[1]
    assert inner.startswith("'chmod u+rwx /t/ansible-tmp-1-2-3/ /t/ansible-tmp-1-2-3/AnsiballZ_ping.py >/dev/null 2>&1 || {")
    assert sent.endswith("if [ -S /r/s ]; then /r/client /r/s /usr/bin/python3 " + SCRIPT + "; fi && sleep 0'")
    assert host["fixups"] == [] and _events() == {ssh_steps.FOLDED: 1}


def test_a_chmod_that_fails_there_runs_again_the_ordinary_way_then_the_module(host):
    host["chmod_fails"] = True
    ssh_steps._kept.chmod = KEPT
    assert ssh_runner._exec_command(object(), MODULE) == (0, b'\r\n{"ping": "pong"}\r\n', b"")
    assert host["fixups"] == [("action", KEPT[1])]
    assert host["sent"][-1] == ROUTED
    assert _events() == {ssh_steps.APART + "chmod failed in the module's command": 1}


def test_when_the_ordinary_chmod_raises_the_module_does_not_run(host):
    host["chmod_fails"] = True
    host["fixup_raises"] = True
    _counters.native("remote_runner")  # as _route counts the module it routes
    ssh_steps._kept.chmod = KEPT
    with pytest.raises(RuntimeError, match="Failed to set permissions"):
        ssh_runner._exec_command(object(), MODULE)
    assert len(host["sent"]) == 1  # the folded command only: the module's did not follow
    assert _counters.snapshot()["remote_runner"]["native"] == 0


def test_another_remote_operation_first_runs_the_chmod_the_ordinary_way(host):
    ssh_steps._kept.chmod = KEPT
    ssh_runner._exec_command(object(), "/bin/sh -c 'echo ~root'", sudoable=False)
    assert host["fixups"] == [("action", KEPT[1])] and host["sent"] == ["/bin/sh -c 'echo ~root'"]
    assert _events() == {ssh_steps.APART + "another remote operation came first": 1}
    assert ssh_steps.take() is None


def test_a_module_run_the_ordinary_way_gets_its_chmod_first(host, monkeypatch):
    monkeypatch.setattr(ssh_runner, "_route", lambda c, cmd, i, s: None)
    ssh_steps._kept.chmod = KEPT
    ssh_runner._exec_command(object(), MODULE)
    assert host["fixups"] == [("action", KEPT[1])] and host["sent"] == [MODULE]


def test_a_stop_is_the_token_as_the_last_line_with_its_status():
    token = b"ansible-accel-chmod-" + b"0" * 32
    assert ssh_steps.stopped((97, token + b"\r\n", b""), token)
    assert ssh_steps.stopped((97, b"from the shell's start files\r\n" + token + b"\r\n", b""), token)
    assert not ssh_steps.stopped((0, token + b"\r\n", b""), token)
    # a module that prints its own command line (where the token is) and exits 97
    printed = b"/bin/sh -c chmod ... || { printf '%s\\n' " + token + b"; exit 97; }\r\n"
    assert not ssh_steps.stopped((97, printed, b""), token)


# --- mkdtemp in the remote tmp's expansion: the folded command run by a local shell -----------


class _Connection:
    def __init__(self):
        from ansible.plugins.shell.sh import ShellModule

        self._shell = ShellModule()


class _Homes:
    def __init__(self, value=None):
        self.value, self.written = value, []

    def read(self, connection, word):
        return self.value

    def write(self, connection, word, value):
        self.written.append((word, value))


def _local(cmd):
    import subprocess

    done = subprocess.run(["/bin/sh", "-c", cmd], capture_output=True, check=False)
    return done.returncode, done.stdout, done.stderr


def _expansion(user: str) -> str:
    return f"/bin/sh -c 'echo ~{user}'"


def test_the_expansion_and_the_mkdtemp_run_in_one_command(monkeypatch):
    import getpass
    import shutil
    import tempfile

    user = getpass.getuser()
    home = os.path.expanduser(f"~{user}")
    monkeypatch.setenv("HOME", home)
    base = tempfile.mkdtemp(prefix=".accel-steps-", dir=home)
    connection, sent = _Connection(), []
    ssh_steps._tmp.pending = ssh_steps._PendingTmp("action", "ansible-tmp-1.5-2-3", f"~/{os.path.basename(base)}/tmp")
    try:
        def run(cmd):
            sent.append(cmd)
            return _local(cmd)

        homes = _Homes(home)
        assert ssh_steps.tmp_exec(connection, _expansion(user), None, False, run, homes) == (0, f"{home}\n".encode(), b"")
        made = os.path.join(base, "tmp", "ansible-tmp-1.5-2-3")
        assert os.path.isdir(made) and oct(os.stat(made).st_mode & 0o777) == "0o700" and len(sent) == 1
        assert oct(os.stat(os.path.join(base, "tmp")).st_mode & 0o777) == "0o700"  # made by mkdir -p under umask 77
        mkdtemp = connection._shell.mkdtemp(basefile="ansible-tmp-1.5-2-3", system=False, tmpdir=os.path.join(base, "tmp"))
        result = ssh_steps.tmp_exec(connection, f"/bin/sh -c {shlex.quote(mkdtemp)}", None, False, run, homes)
        assert result == (0, f"ansible-tmp-1.5-2-3={made}\n".encode(), b"") and len(sent) == 1
        assert homes.written == [(f"~{user}", home)]
    finally:
        ssh_steps._tmp.pending = None
        shutil.rmtree(base, ignore_errors=True)


def test_a_mkdtemp_that_failed_in_the_expansion_runs_again_as_its_own_command(monkeypatch):
    import getpass
    import tempfile

    from ansible_accel import _counters

    user = getpass.getuser()
    home = os.path.expanduser(f"~{user}")
    monkeypatch.setenv("HOME", home)
    blocker = tempfile.mkstemp(prefix=".accel-steps-", dir=home)[1]  # a file where the base would be
    connection, sent = _Connection(), []
    ssh_steps._tmp.pending = ssh_steps._PendingTmp("action", "ansible-tmp-1.5-2-3", f"~/{os.path.basename(blocker)}/tmp")
    events = lambda: dict(_counters.snapshot()[ssh_steps.PATH].get("events", {}))  # noqa: E731
    before = events().get("mkdtemp apart: failed in the expansion's command", 0)
    try:
        def run(cmd):
            sent.append(cmd)
            return _local(cmd)

        homes = _Homes(home)
        assert ssh_steps.tmp_exec(connection, _expansion(user), None, False, run, homes) == (0, f"{home}\n".encode(), b"")
        assert len(sent) == 1 and ssh_steps._tmp.pending.made is None
        assert events().get("mkdtemp apart: failed in the expansion's command", 0) == before + 1
        mkdtemp = connection._shell.mkdtemp(basefile="ansible-tmp-1.5-2-3", system=False, tmpdir=os.path.join(blocker, "tmp"))
        # ansible-core's own mkdtemp then runs as it comes (and fails there with its own output)
        assert ssh_steps.tmp_exec(connection, f"/bin/sh -c {shlex.quote(mkdtemp)}", None, False, run, homes) is None
    finally:
        ssh_steps._tmp.pending = None
        os.unlink(blocker)


def test_a_changed_expansion_makes_no_directory(tmp_path):
    connection, sent = _Connection(), []
    ssh_steps._tmp.pending = ssh_steps._PendingTmp("action", "ansible-tmp-1.5-2-3", "~/x/tmp")
    try:
        result = ssh_steps.tmp_exec(connection, _expansion("root"), None, False, lambda c: sent.append(c) or _local(c),
                                    _Homes(str(tmp_path)))  # not root's home
        assert result[0] == 0 and result[2] == b"" and b"ansible-accel" not in result[1]
        assert ssh_steps._tmp.pending.made is None and os.listdir(tmp_path) == []
    finally:
        ssh_steps._tmp.pending = None


def test_the_expansion_runs_alone_until_known_and_for_other_commands():
    connection, sent = _Connection(), []
    homes = _Homes(None)
    ssh_steps._tmp.pending = ssh_steps._PendingTmp("action", "ansible-tmp-1.5-2-3", "~/x/tmp")
    try:
        run = lambda c: sent.append(c) or (0, b"/home/u\n", b"")  # noqa: E731
        assert ssh_steps.tmp_exec(connection, _expansion("u"), None, False, run, homes) == (0, b"/home/u\n", b"")
        assert sent == [_expansion("u")] and homes.written == [("~u", "/home/u")]
        assert ssh_steps.tmp_exec(connection, "/bin/sh -c 'echo $(pwd)'", None, False, run, homes) is None
        # ansible-core 2.19 appends `&& sleep 0` to every command
        found = ssh_steps.tmp_exec(connection, "/bin/sh -c 'echo ~u && sleep 0'", None, False, run, homes)
        assert found == (0, b"/home/u\n", b"")
        assert sent[-1] == "/bin/sh -c 'echo ~u && sleep 0'"
        assert ssh_steps.tmp_exec(connection, _expansion("u"), b"input", False, run, homes) is None
    finally:
        ssh_steps._tmp.pending = None


def test_a_folded_output_split_into_its_two_commands():
    token = b"ansible-accel-tmp-" + b"1" * 32
    both = (1, b"/root\n" + token + b" E 0\n" + token + b" M\n", b"warn\n" + token + b"\nmkdir: cannot create\n")
    assert ssh_steps._split(token, *both) == ((0, b"/root\n", b"warn\n"), (1, b"", b"mkdir: cannot create\n"))
    guard_failed = (0, b"/other\n" + token + b" E 0\n", token + b"\n")
    assert ssh_steps._split(token, *guard_failed) == ((0, b"/other\n", b""), None)
    killed = (255, b"", b"Connection closed\n")
    assert ssh_steps._split(token, *killed) == (killed, None)
