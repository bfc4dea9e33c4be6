"""The commands around a module run done in the worker (``_integrations/local_commands``) against
the same commands run by the shell, as the local connection runs them: the commands are built by
the installed ansible-core's ``sh`` shell plugin and wrapped as its action plugins wrap them; exit
status, output and what is left on disk (names, types, modes) must be the same."""

from __future__ import annotations

import os
import shlex
import stat
import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_accel import _counters
from ansible_accel._integrations import local_commands, runner

sh = pytest.importorskip("ansible.plugins.loader").shell_loader.get("sh")

POPEN = {"shell": True, "executable": "/bin/sh", "stdin": subprocess.PIPE, "stdout": subprocess.PIPE,
         "stderr": subprocess.PIPE}


class Connection:
    become = None


def wrapped(command: str, sleep: bool = False) -> str:
    """``command`` as ``_low_level_execute_command`` hands it to the connection."""
    if sleep:
        command = sh.append_command(command, "sleep 0")
    return "/bin/sh -c " + shlex.quote(command)


def by_shell(cmd: str) -> tuple[int, bytes, bytes]:
    process = subprocess.Popen(cmd, **POPEN)
    out, err = process.communicate(None)
    return process.returncode, out, err


def here(cmd: str, connection=Connection, popen=POPEN):
    """(exit status, stdout, stderr) when the worker did the command; None when the shell must."""
    planned = local_commands.route(connection, cmd, None, True)
    assert planned is not None, f"not a command of a known shape: {cmd}"
    done = planned(dict(popen))
    if done is None:
        return None
    assert isinstance(done, local_commands.Finished)
    return done.returncode, *done.communicate(None)


def tree(root: str) -> list[tuple[str, str, int]]:
    found = []
    for path, dirs, files in os.walk(root):
        for name in sorted(dirs + files):
            full = os.path.join(path, name)
            st = os.lstat(full)
            kind = "l" if stat.S_ISLNK(st.st_mode) else "d" if stat.S_ISDIR(st.st_mode) else "f"
            found.append((os.path.relpath(full, root), kind, stat.S_IMODE(st.st_mode)))
    return sorted(found)


def twin(tmp_path):
    """Two equal directories: one for the shell's run, one for the worker's."""
    return str(tmp_path / "shell"), str(tmp_path / "here")


@pytest.mark.parametrize("mode", [0o700, 0o755])
def test_mkdtemp_makes_the_shells_directory(tmp_path, mode):
    counts = _counters.snapshot()["runner"].get("events", {}).get("commands without a shell: mkdtemp", 0)
    results = []
    for base in twin(tmp_path):
        os.makedirs(base)
        cmd = wrapped(sh.mkdtemp("ansible-tmp-1.5-7-9", mode=mode, tmpdir=base), sleep=True)
        result = by_shell(cmd) if base.endswith("shell") else here(cmd)
        results.append((result[0], result[1].replace(base.encode(), b"BASE"), result[2], tree(base)))
    assert results[0] == results[1]
    assert results[0][0] == 0 and results[0][3] == [("ansible-tmp-1.5-7-9", "d", mode)]
    after = _counters.snapshot()["runner"]["events"]["commands without a shell: mkdtemp"]
    assert after == counts + 1


def test_mkdtemp_leaves_missing_parents_and_errors_to_the_shell(tmp_path):
    missing = str(tmp_path / "a" / "b")
    assert here(wrapped(sh.mkdtemp("ansible-tmp-1", tmpdir=missing))) is None
    assert not os.path.exists(missing)
    os.makedirs(os.path.join(missing, "ansible-tmp-1"))  # the directory is there already: mkdir's error
    assert here(wrapped(sh.mkdtemp("ansible-tmp-1", tmpdir=missing))) is None
    rc, _, err = by_shell(wrapped(sh.mkdtemp("ansible-tmp-1", tmpdir=missing)))
    assert rc != 0 and b"File exists" in err


@pytest.mark.parametrize("mode", ["u+rwx", "u+x", "u+rw"])
def test_chmod_adds_the_shells_bits(tmp_path, mode):
    results = []
    for base in twin(tmp_path):
        os.makedirs(os.path.join(base, "d"))
        with open(os.path.join(base, "d", "m.py"), "w") as handle:
            handle.write("x")
        os.chmod(os.path.join(base, "d", "m.py"), 0o4044)
        os.chmod(os.path.join(base, "d"), 0o2010)
        cmd = wrapped(sh.chmod([os.path.join(base, "d") + "/", os.path.join(base, "d", "m.py")], mode))
        result = by_shell(cmd) if base.endswith("shell") else here(cmd)
        results.append((result, tree(base)))
    assert results[0] == results[1]
    assert results[0][0][0] == 0


def test_chmod_error_goes_to_the_shell(tmp_path):
    present = tmp_path / "present"
    present.write_text("x")
    present.chmod(0o600)
    cmd = wrapped(sh.chmod([str(present), str(tmp_path / "absent")], "u+rwx"))
    assert here(cmd) is None
    rc, _, err = by_shell(cmd)
    assert rc == 1 and b"No such file" in err and stat.S_IMODE(present.stat().st_mode) == 0o700


def test_rm_removes_what_the_shell_removes(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("k")
    results = []
    for base in twin(tmp_path):
        top = os.path.join(base, "ansible-tmp-1")
        os.makedirs(os.path.join(top, "sub", "deeper"))
        for name in ("a", "sub/b", "sub/deeper/c"):
            with open(os.path.join(top, name), "w") as handle:
                handle.write(name)
        os.symlink(str(outside), os.path.join(top, "sub", "link"))
        os.chmod(os.path.join(top, "sub", "deeper"), 0o500)
        cmd = wrapped(sh.remove(top + "/", recurse=True))
        result = by_shell(cmd) if base.endswith("shell") else here(cmd)
        results.append((result, tree(base)))
    assert results[0] == results[1] == ((0, b"", b""), [])
    assert (outside / "keep").read_text() == "k"
    assert here(wrapped(sh.remove(str(tmp_path / "never") + "/", recurse=True))) == (0, b"", b"")


def test_rm_of_a_symbolic_link_goes_to_the_shell(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "d")
    assert here(wrapped(sh.remove(str(tmp_path / "link") + "/", recurse=True))) is None
    assert (tmp_path / "d").is_dir()


def test_home_is_the_shells(monkeypatch):
    import pwd

    user = pwd.getpwuid(os.getuid()).pw_name
    for cmd in (wrapped(sh.expand_user("~", username=user)), wrapped(sh.expand_user("~"))):
        assert here(cmd) == by_shell(cmd)
    monkeypatch.setenv("HOME", "/some where")  # a home the shell would split: the shell's
    assert here(wrapped(sh.expand_user("~"))) is None
    assert here(wrapped(sh.expand_user("~", username="no-such-user-here"))) is None


@pytest.mark.parametrize("cmd", [
    wrapped(sh.expand_user("~/.ansible/tmp")),  # quoted by ansible-core: no expansion at all
    wrapped(sh.mkdtemp("ansible-tmp-1", tmpdir="/tmp/with space")),
    wrapped(sh.chmod(["/tmp/x"], "a+rX")),
    wrapped(sh.remove("/tmp/x", recurse=False)),
    "/bin/bash -c " + shlex.quote(sh.remove("/tmp/x/", recurse=True)),
    "/bin/sh -c 'rm -f -r /tmp/x/ > /dev/null 2>&1; echo more'",
])
def test_other_commands_are_not_touched(cmd):
    assert local_commands.route(Connection, cmd, None, True) is None


def test_become_or_input_or_another_shell_goes_the_ordinary_way(tmp_path):
    cmd = wrapped(sh.remove(str(tmp_path / "x") + "/", recurse=True))

    class Becoming:
        become = object()

    assert local_commands.route(Becoming, cmd, None, True) is None
    assert local_commands.route(Connection, cmd, b"data", True) is None
    assert here(cmd, popen=dict(POPEN, executable="/bin/bash")) is None


def test_a_command_of_another_name_on_path_goes_to_the_shell(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "rm"
    wrapper.write_text("#!/bin/sh\nexec /bin/rm \"$@\"\n")
    wrapper.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    (tmp_path / "t").mkdir()
    assert here(wrapped(sh.remove(str(tmp_path / "t") + "/", recurse=True))) is None
    assert (tmp_path / "t").is_dir()


# --- splitting a command as shlex would ---------------------------------------------------------

_TEXT = st.text(alphabet=st.sampled_from(list("ab/ .-_=~'\"\\`$&()\t\n#;*")), max_size=30)


def _by_shlex(cmd: str):
    try:
        outer = shlex.split(cmd)
    except ValueError:
        return None
    if len(outer) != 3 or outer[1] != "-c" or f"{outer[0]} -c {shlex.quote(outer[2])}" != cmd:
        return None
    return outer[0], outer[2]


@settings(max_examples=500, deadline=None)
@given(st.sampled_from(["/bin/sh", "sh", "/usr/bin/env", "/bin/s h", "a'b", ""]), _TEXT,
       st.sampled_from(["", " ", "'", "x", " -c"]))
def test_split_shell_c_is_shlex(executable, inner, tail):
    for cmd in (f"{executable} -c {shlex.quote(inner)}{tail}", f"{executable} -c {inner}{tail}",
                f"{executable} {inner}"):
        assert local_commands.split_shell_c(cmd) == _by_shlex(cmd), cmd


@settings(max_examples=500, deadline=None)
@given(st.lists(_TEXT, max_size=4), st.booleans())
def test_module_command_parse_is_shlex(words, sleep):
    inner = " ".join(words) + (" && sleep 0" if sleep else "")
    for text in (inner, " ".join(shlex.quote(w) for w in words)):
        cmd = "/bin/sh -c " + shlex.quote(text)
        found = runner.parse_module_command(cmd)
        if runner._PLAIN_WORDS.fullmatch(text):
            assert text.split(" ") == shlex.split(text)
        assert found == _module_command_by_shlex(cmd), cmd


def _module_command_by_shlex(cmd: str):
    outer = _by_shlex(cmd)
    if outer is None:
        return None
    try:
        words = shlex.split(outer[1])
    except ValueError:
        return None
    suffix = ""
    if words[-3:] == ["&&", "sleep", "0"]:
        words, suffix = words[:-3], " && sleep 0"
    assignments = []
    while words and (match := runner._ASSIGNMENT.fullmatch(words[0])):
        assignments.append((match[1], match[2]))
        words.pop(0)
    if len(words) not in (1, 2) or any(w.startswith("-") for w in words[1:]):
        return None
    if runner._join(assignments, words) + suffix != outer[1]:
        return None
    return assignments, words[0], (words[1] if len(words) == 2 else None), suffix
