"""The steps a host's keeper takes for ansible-core (``ssh_keeper_steps`` on the controller,
``_runner_remote.take_step`` on the host) against what the commands and the ``sftp`` transfer
they replace do on the test bed's sshd: the same output, the same files and modes; commands of
any other shape are not taken; a keeper whose steps socket is gone leaves every step to SSH
commands, with the same results."""

from __future__ import annotations

import json
import os
import shlex
import subprocess

import pytest
from ansible.plugins.loader import shell_loader

from ansible_accel import _runner_remote
from ansible_accel._integrations import ssh_keeper_steps
from test_playbook_ssh import _differences, run_playbook


@pytest.fixture
def sh():
    return shell_loader.get("sh")


def _wrapped(inner: str) -> str:
    """A command as ``_low_level_execute_command`` hands it to the connection."""
    return "/bin/sh -c " + shlex.quote(inner + " && sleep 0")


def test_the_steps_commands_are_recognised(sh):
    made = "/tmp/rt1/ansible-tmp-1764000000.1-42-7"
    kind, fields, answer = ssh_keeper_steps._parse(sh, _wrapped(sh.mkdtemp(basefile=os.path.basename(made),
                                                                           system=False, tmpdir="/tmp/rt1")))
    assert (kind, fields) == (b"M", [b"/tmp/rt1", made.encode()])
    assert answer(b"") == (0, f"{os.path.basename(made)}={made}\n".encode(), b"")
    kind, fields, answer = ssh_keeper_steps._parse(sh, _wrapped(sh.remove(made + "/", recurse=True)))
    assert (kind, fields, answer(b"")) == (b"R", [made.encode() + b"/"], (0, b"", b""))
    kind, fields, answer = ssh_keeper_steps._parse(sh, _wrapped(sh.expand_user("~root")))
    assert (kind, fields, answer(b"/root")) == (b"E", [b"~root"], (0, b"/root\n", b""))
    assert answer(b"/home/a b") is None  # a value echo would not print as it is


@pytest.mark.parametrize("inner", [
    "( umask 77 && mkdir -p /tmp/x )",
    "rm -f /tmp/rt1/ansible-tmp-1/ > /dev/null 2>&1",  # not recursive
    "rm -f -r '/tmp/a b/' > /dev/null 2>&1",  # not a plain path
    "echo ~root; id",
    "echo $HOME",
])
def test_other_commands_are_not_taken(sh, inner):
    assert ssh_keeper_steps._parse(sh, _wrapped(inner)) is None


def test_a_mkdtemp_is_taken_by_what_its_command_does(sh):
    """A directory for ``become`` to another user is made by the same command in a system
    directory (made accessible to that user afterwards, by commands of their own)."""
    inner = sh.mkdtemp(basefile="ansible-tmp-1.2-3-4", system=True, tmpdir="/tmp/rt1")
    kind, fields, _answer = ssh_keeper_steps._parse(sh, _wrapped(inner))
    assert inner == sh.mkdtemp(basefile="ansible-tmp-1.2-3-4", system=False, tmpdir=fields[0].decode())
    assert (kind, fields[1]) == (b"M", fields[0] + b"/ansible-tmp-1.2-3-4")


def _sftp_put(sshd, local: str, remote: str) -> None:
    done = subprocess.run(["sftp", "-b", "-", *sshd.ssh_options(), "-P", str(sshd.port), f"{sshd.user}@127.0.0.1"],
                          input=f"put {local} {remote}\n", capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr


def _sshd_umask(sshd) -> int:
    done = sshd.ssh("umask")
    assert done.returncode == 0, done.stderr
    return int(done.stdout.strip(), 8)


def _mode(path) -> str:
    return oct(os.stat(path).st_mode & 0o7777)


def test_a_file_written_as_sftp_writes_it(sshd, tmp_path):
    old = os.umask(_sshd_umask(sshd))  # the keeper's: what sshd gives commands
    try:
        for mode in (0o755, 0o600, 0o640, 0o444):
            local = tmp_path / f"local-{mode:o}"
            local.write_bytes(os.urandom(70000))
            local.chmod(mode)
            _sftp_put(sshd, str(local), str(tmp_path / f"sftp-{mode:o}"))
            _runner_remote.take_step(b"W", [str(tmp_path / f"keeper-{mode:o}").encode(), str(mode).encode(),
                                            local.read_bytes()])
            assert _mode(tmp_path / f"keeper-{mode:o}") == _mode(tmp_path / f"sftp-{mode:o}"), mode
            assert (tmp_path / f"keeper-{mode:o}").read_bytes() == (tmp_path / f"sftp-{mode:o}").read_bytes()
        # An existing file keeps its mode and is truncated.
        for name in ("sftp-600", "keeper-600"):
            (tmp_path / name).chmod(0o604)
        short = tmp_path / "short"
        short.write_bytes(b"two\n")
        short.chmod(0o600)
        _sftp_put(sshd, str(short), str(tmp_path / "sftp-600"))
        _runner_remote.take_step(b"W", [str(tmp_path / "keeper-600").encode(), b"384", b"two\n"])
        assert _mode(tmp_path / "keeper-600") == _mode(tmp_path / "sftp-600") == "0o604"
        assert (tmp_path / "keeper-600").read_bytes() == (tmp_path / "sftp-600").read_bytes() == b"two\n"
    finally:
        os.umask(old)


def test_a_directory_made_as_mkdtemp_makes_it(sshd, sh, tmp_path):
    old = os.umask(_sshd_umask(sshd))
    try:
        results = {}
        for who in ("shell", "keeper"):
            base = str(tmp_path / who / "a" / "b")
            made = os.path.join(base, "ansible-tmp-1.2-3-4")
            if who == "shell":
                done = sshd.ssh(_wrapped(sh.mkdtemp(basefile="ansible-tmp-1.2-3-4", system=False, tmpdir=base)))
                result = (done.returncode, done.stdout.encode(), done.stderr.encode())
            else:
                _kind, fields, answer = ssh_keeper_steps._parse(sh, _wrapped(sh.mkdtemp(
                    basefile="ansible-tmp-1.2-3-4", system=False, tmpdir=base)))
                result = answer(_runner_remote.take_step(b"M", fields))
            results[who] = (result[0], result[1].replace(who.encode(), b"WHO"),
                            [_mode(tmp_path / who / p) for p in ("a", "a/b", "a/b/ansible-tmp-1.2-3-4")])
        assert results["keeper"] == results["shell"], results
        assert results["shell"][2] == ["0o700"] * 3
        # It is there now: both fail, and the keeper declines (the shell's command then reports it).
        with pytest.raises(FileExistsError):
            _runner_remote.take_step(b"M", [str(tmp_path / "keeper" / "a" / "b").encode(),
                                            str(tmp_path / "keeper" / "a" / "b" / "ansible-tmp-1.2-3-4").encode()])
    finally:
        os.umask(old)


def test_the_expansion_as_the_shell_gives_it(sshd, sh):
    for word in ("~", f"~{sshd.user}"):
        done = sshd.ssh(_wrapped(sh.expand_user(word)))
        _kind, fields, answer = ssh_keeper_steps._parse(sh, _wrapped(sh.expand_user(word)))
        assert answer(_runner_remote.take_step(b"E", fields)) == (done.returncode, done.stdout.encode(), b""), word
    with pytest.raises(_runner_remote._Declined):
        _runner_remote.take_step(b"E", [b"~no-such-user-here"])


def test_a_directory_removed_as_rm_removes_it(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "kept").write_text("kept\n")
    tree = tmp_path / "ansible-tmp-1"
    (tree / "sub" / "deeper").mkdir(parents=True)
    (tree / "sub" / "deeper" / "file").write_text("x")
    (tree / "file").write_text("y")
    (tree / "link").symlink_to(outside)
    (tree / "sub" / "ro").mkdir()
    (tree / "sub" / "ro").chmod(0o500)  # root removes it all the same, as rm does
    assert _runner_remote.take_step(b"R", [str(tree).encode() + b"/"]) == b""
    assert not tree.exists() and (outside / "kept").read_text() == "kept\n"
    assert _runner_remote.take_step(b"R", [str(tree).encode() + b"/"]) == b""  # gone: rm -f says nothing
    with pytest.raises(_runner_remote._Declined):  # a file: left to rm itself
        _runner_remote.take_step(b"R", [str(outside / "kept").encode() + b"/"])
    with pytest.raises(_runner_remote._Declined):
        _runner_remote.take_step(b"R", [b"relative/"])


PLAY = """\
- hosts: all
  gather_facts: false
  tasks:
    - ping:
    - command: echo one
    - shell: rm -f {{ remote_tmp_dir }}/ansible-accel-*/run-*/*/s.sock
      run_once: true
    - command: echo two
    - copy: {content: "three\\n", dest: "{{ work }}/{{ inventory_hostname }}.txt"}
    - file: {path: "{{ work }}/{{ inventory_hostname }}.txt", state: absent}
"""


def test_a_keeper_whose_steps_socket_is_gone(sshd, host_interpreters, tmp_path, remote_tmp):
    play = PLAY.replace("{{ remote_tmp_dir }}", remote_tmp)
    plain, _, _ = run_playbook(sshd, host_interpreters, tmp_path, accel=False, pipelining=False, play_text=play,
                               remote_tmp=remote_tmp)
    fast, stats, _ = run_playbook(sshd, host_interpreters, tmp_path, accel=True, pipelining=False, play_text=play,
                                  remote_tmp=remote_tmp)
    assert fast == plain, "\n".join(_differences(plain, fast)[:20])
    events = stats["run"]["paths"]["remote_runner"]["events"]
    print(f"\nremote runner: {json.dumps(events, sort_keys=True)}")
    # The hosts share one sshd and one remote tmp, so the third task, run on one host, removes
    # every host's steps socket. On that host its own rm finds the keeper not answering; on the
    # others the fourth task's mkdtemp does. That step runs as an SSH command, and so does every
    # later one (the keeper cannot be reached through a new forward either).
    assert events["keeper apart: the keeper did not answer"] == 3, events
    assert events["keeper apart: no forward to the keeper"] >= 3 * 3, events
    assert events["keeper: mkdtemp"] == 3 + 1, events  # the second task's, and the third's on its host
    assert events["keeper: the directory removed"] == 3 * 2, events  # the first and second tasks'
    assert [name for name in os.listdir(remote_tmp) if name.startswith("ansible-tmp-")] == []


def test_a_server_that_forwards_nothing(host_interpreters, tmp_path, remote_tmp):
    """An sshd with ``DisableForwarding yes``: the forward is made (by the client's master) but
    the server refuses each connection through it; the first step finds no keeper answering,
    every step runs as an SSH command, the results are plain ansible-core's."""
    import _sshd

    play = "- hosts: all\n  gather_facts: false\n  tasks:\n" + "    - ping:\n" * 3 + \
        "    - copy: {content: \"one\\n\", dest: \"{{ work }}/{{ inventory_hostname }}.txt\"}\n" + \
        "    - file: {path: \"{{ work }}/{{ inventory_hostname }}.txt\", state: absent}\n"
    with _sshd.Sshd(addresses=3, config=("DisableForwarding yes",)) as server:
        plain, _, _ = run_playbook(server, host_interpreters, tmp_path, accel=False, pipelining=False, play_text=play,
                                   remote_tmp=remote_tmp)
        fast, stats, _ = run_playbook(server, host_interpreters, tmp_path, accel=True, pipelining=False,
                                      play_text=play, remote_tmp=remote_tmp)
    assert fast == plain, "\n".join(_differences(plain, fast)[:20])
    remote = stats["run"]["paths"]["remote_runner"]
    events = remote["events"]
    print(f"\nremote runner: {json.dumps(remote, sort_keys=True)}")
    assert remote["native"] == 3 * 6, remote  # the modules still run in the hosts' runners
    assert events["keeper apart: the keeper did not answer"] == 3, events
    assert [event for event in events if event.startswith("keeper: ")] == ["keeper: forward made"], events
    assert [name for name in os.listdir(remote_tmp) if name.startswith("ansible-tmp-")] == []


def test_no_forward_when_the_steps_are_switched_off(sshd, host_interpreters, tmp_path, remote_tmp):
    """``ANSIBLE_ACCEL_REMOTE_STEPS=0``: no forward is made to the keepers (with the steps on,
    one per host), the steps are SSH commands."""
    play = "- hosts: all\n  gather_facts: false\n  tasks:\n" + "    - ping:\n" * 2
    found = {}
    for steps in ("0", "1"):
        _, stats, _ = run_playbook(sshd, host_interpreters, tmp_path, accel=True, pipelining=False, play_text=play,
                                   remote_tmp=remote_tmp, extra_env={"ANSIBLE_ACCEL_REMOTE_STEPS": steps})
        remote = stats["run"]["paths"]["remote_runner"]
        events = remote["events"]
        found[steps] = (remote["native"], events.get("keeper: forward made", 0), events.get("keeper: mkdtemp", 0))
    assert found == {"0": (3 * 2, 0, 0), "1": (3 * 2, 3, 3)}, found


def test_a_large_file_through_the_keepers_socket(tmp_path):
    """A request of several MiB read in pieces: the file written whole; a request cut short
    answers nothing and writes nothing."""
    import socket
    import threading

    data = os.urandom(3 * (1 << 20) + 12345)
    target = tmp_path / "big"
    fields = [str(target).encode(), b"384", data]
    request = b"W" + bytes([len(fields)]) + b"".join(len(f).to_bytes(4, "little") + f for f in fields)
    for cut in (None, len(request) - 1000):
        ours, keepers = socket.socketpair()
        server = threading.Thread(target=lambda: (_serve_quietly(keepers), keepers.close()))
        server.start()
        assert ours.recv(3) == b"A1\n"
        ours.sendall(request if cut is None else request[:cut])
        ours.shutdown(socket.SHUT_WR)
        answer = ours.recv(100)
        server.join()
        ours.close()
        if cut is None:
            assert answer == b"0" + (0).to_bytes(4, "little") and target.read_bytes() == data
            target.unlink()
        else:
            assert answer == b"" and not target.exists()


def _serve_quietly(conn):
    try:
        _runner_remote.serve_step(conn)
    except EOFError:
        pass
