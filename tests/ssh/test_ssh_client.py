"""The ``ssh_client`` path against the real ``ssh`` client: the same command line, run once by
``ssh`` (which finds the ControlPersist master and opens its session there) and once through
``_ssh_mux.Session`` from this process, gives the same exit status, standard output and standard
error, byte for byte: with and without a terminal, with standard input, large output, a remote
killed by a signal, the environment ``SendEnv`` passes, ``TERM``, ``-q``.  Where the path does not
take a command (no master, an option of its own), ``ssh`` runs, counted by reason."""

from __future__ import annotations

import os
import pty
import selectors
import shutil
import subprocess
import sys
import tempfile

import pytest

from ansible_accel import _counters, _ssh_mux
from ansible_accel._integrations import ssh_client


@pytest.fixture
def learned(tmp_path, monkeypatch):
    """What ``ssh -G`` says, kept in this test's own directory; counters from zero."""
    monkeypatch.setattr(ssh_client._State, "cache_dir", str(tmp_path))
    monkeypatch.setattr(ssh_client._State, "original_subprocess", subprocess)
    _counters.reset()
    yield
    _counters.reset()


@pytest.fixture
def master(sshd):
    """A ControlPersist master for 127.0.0.1, as ansible-core's options make one; the command
    line's options (a short control path: the test's temporary paths are long)."""
    control_dir = tempfile.mkdtemp(prefix="cp", dir="/tmp")
    options = [*sshd.ssh_options(), "-C", "-o", "ControlMaster=auto", "-o", "ControlPersist=60s",
               "-o", f'ControlPath="{control_dir}/%C"', "-p", str(sshd.port), "-l", sshd.user]
    done = subprocess.run(["ssh", *options, "127.0.0.1", "true"], capture_output=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    yield [os.fsencode(o) for o in options]
    subprocess.run(["ssh", *options, "-O", "exit", "127.0.0.1"], capture_output=True, timeout=60, check=False)
    shutil.rmtree(control_dir, ignore_errors=True)


def _collect(popen, args, tty: bool, in_data: bytes | None):
    """Start ``args`` with ``popen`` as ansible-core's ``ssh`` connection does (a terminal as
    standard input when there is nothing to send, else a pipe) and read it to its end."""
    if tty:
        controlling, slave = pty.openpty()
        process = popen(args, stdin=slave, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        os.close(slave)
    else:
        controlling = None
        process = popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if in_data:
            process.stdin.write(in_data)
        process.stdin.close()
    selector = selectors.DefaultSelector()
    output = {process.stdout: b"", process.stderr: b""}
    for stream in output:
        selector.register(stream, selectors.EVENT_READ)
    while selector.get_map():
        for key, _ in selector.select(60):
            chunk = os.read(key.fd, 65536)
            if chunk:
                output[key.fileobj] += chunk
            else:
                selector.unregister(key.fileobj)
    status = process.wait(60)
    process.stdout.close()
    process.stderr.close()
    if controlling is not None:
        os.close(controlling)
    return status, output[process.stdout], output[process.stderr], process


def _both(master, command: bytes, *, tty: bool = False, in_data: bytes | None = None, extra=()):
    args = [b"ssh", *master, *extra, *([b"-tt"] if tty else []), b"127.0.0.1", command]
    plain = _collect(subprocess.Popen, args, tty, in_data)
    through = _collect(ssh_client._popen, args, tty, in_data)
    return plain, through


CASES = {
    "output and status": b"echo out; echo err >&2; exit 3",
    "no output": b"true",
    "large output": b"head -c 3000000 /dev/zero | tr '\\0' a; echo; echo done >&2",
    "killed by a signal": b"echo before; kill -9 $$",
    "environment": b"env | grep -v '^SSH_\\|^_=' | sort",
    "terminal": b"tty >/dev/null && echo a terminal || echo no terminal; echo $TERM; stty -a | head -2",
}


@pytest.mark.parametrize("tty", [False, True], ids=["pipes", "terminal"])
@pytest.mark.parametrize("case", list(CASES))
def test_a_session_gives_what_ssh_gives(sshd, master, learned, monkeypatch, case, tty):
    monkeypatch.setenv("LANG", "C.UTF-8")
    monkeypatch.setenv("LC_MESSAGES", "C")
    monkeypatch.setenv("TERM", "xterm-accel")
    plain, through = _both(master, CASES[case], tty=tty)
    assert isinstance(through[3], _ssh_mux.Session), _counters.snapshot()["ssh_client"]
    assert through[:3] == plain[:3]
    assert _counters.snapshot()["ssh_client"]["native"] == 1


def test_standard_input_reaches_the_command(sshd, master, learned):
    data = os.urandom(700_000)
    plain, through = _both(master, b"cat | sha256sum; echo end >&2", in_data=data)
    assert isinstance(through[3], _ssh_mux.Session)
    assert through[:3] == plain[:3]
    assert plain[1].startswith(subprocess.run(["sha256sum"], input=data, capture_output=True).stdout.split()[0])


def test_quiet_drops_the_closing_line_as_ssh_does(sshd, master, learned):
    plain, through = _both(master, b"echo hi", tty=True, extra=[b"-q"])
    assert isinstance(through[3], _ssh_mux.Session)
    assert through[:3] == plain[:3]
    assert b"Shared connection" not in plain[2]
    loud = _both(master, b"echo hi", tty=True)
    assert loud[0][2] == loud[1][2] == b"Shared connection to 127.0.0.1 closed.\r\n"


def test_without_a_master_ssh_runs_and_is_counted(sshd, master, learned):
    # (ssh takes the first value given for an option)
    args = [b"ssh", b"-o", b"ControlPath=/tmp/accel-no-such-master-%C", b"-o", b"ControlMaster=no", *master,
            b"127.0.0.1", b"echo hi"]
    status, out, err, process = _collect(ssh_client._popen, args, False, None)
    assert (status, out) == (0, b"hi\n")
    assert isinstance(process, subprocess.Popen)
    assert _counters.snapshot()["ssh_client"]["fallback"] == {"master: no master listening": 1}


@pytest.mark.parametrize("extra, reason", [([b"-v"], "ssh option -v"), ([b"-L", b"9999:127.0.0.1:1"], "ssh option -L"),
                                           ([b"-o", b"LocalForward=9999 127.0.0.1:1"], "forwardings asked for"),
                                           ([b"-o", b"LogLevel=DEBUG"], "LogLevel DEBUG"),
                                           ([b"-o", b"ForwardAgent=yes"], "forwardagent yes"),
                                           ([b"-o", b"ControlMaster=yes"], "ControlMaster true")])
def test_what_the_client_would_do_itself_goes_to_ssh(sshd, master, learned, extra, reason):
    args = [b"ssh", *extra, *master, b"127.0.0.1", b"echo hi"]
    if extra[0] == b"-v" or extra[-1] == b"LogLevel=DEBUG":
        args[-1] = b"echo hi; exit 4"  # ssh's own lines on standard error differ run to run
        status, out, _, process = _collect(ssh_client._popen, args, False, None)
        assert (status, out) == (4, b"hi\n")
    else:
        plain = _collect(subprocess.Popen, args, False, None)
        through = _collect(ssh_client._popen, args, False, None)
        assert through[:3] == plain[:3]
        process = through[3]
    assert isinstance(process, subprocess.Popen)
    assert _counters.snapshot()["ssh_client"]["fallback"] == {reason: 1}
    assert _counters.snapshot()["ssh_client"]["native"] == 0


def test_terminate_ends_the_remote_command(sshd, master, learned):
    args = [b"ssh", *master, b"127.0.0.1", b"echo started; exec sleep 30"]
    session = ssh_client._popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert isinstance(session, _ssh_mux.Session)
    assert session.stdout.readline() == b"started\n"
    session.terminate()
    assert session.wait(30) == 255
    assert session.stdout.read() == b""
    for stream in (session.stdin, session.stdout, session.stderr):
        stream.close()


def test_parse_takes_only_options_that_configure():
    assert ssh_client._parse([b"ssh", b"-C", b"-o", b"A=b", b"-tt", b"-p22", b"host", b"echo", b"hi"]) == (
        [b"-C", b"-o", b"A=b", b"-t", b"-t", b"-p", b"22"], b"host", b"echo hi")
    assert ssh_client._parse([b"ssh", b"-qC", b"host", b"true"]) == ([b"-q", b"-C"], b"host", b"true")
    assert ssh_client._parse([b"ssh", b"-N", b"host", b"true"]) == "ssh option -N"
    assert ssh_client._parse([b"ssh", b"-W", b"a:1", b"host"]) == "ssh option -W"
    assert ssh_client._parse([b"ssh", b"-o", b"A=b", b"host"]) == "ssh command line not understood"


def test_a_script_standing_for_ssh_runs_itself(sshd, master, learned, tmp_path):
    """A program named ``ssh`` that is not OpenSSH's client (a script that logs, say) runs as
    given: what it does each time it starts is its own."""
    script = tmp_path / "bin" / "ssh"
    script.parent.mkdir()
    script.write_text(f"#!/bin/sh\necho started >> {tmp_path / 'log'}\nexec /usr/bin/ssh \"$@\"\n")
    script.chmod(0o755)
    args = [os.fsencode(script), *master, b"127.0.0.1", b"echo hi"]
    status, out, _, process = _collect(ssh_client._popen, args, False, None)
    assert (status, out) == (0, b"hi\n") and isinstance(process, subprocess.Popen)
    assert (tmp_path / "log").read_text() == "started\n"
    assert _counters.snapshot()["ssh_client"]["fallback"] == {"not OpenSSH's client program of a known version": 1}


def test_the_closing_line_names_the_host_as_ssh_does(sshd, master, learned):
    """An alias whose HostName is the address: ssh names the address in its closing line."""
    args = [b"ssh", b"-o", b"HostName=127.0.0.1", *master, b"-tt", b"accel-alias", b"echo hi"]
    plain = _collect(subprocess.Popen, args, True, None)
    through = _collect(ssh_client._popen, args, True, None)
    assert isinstance(through[3], _ssh_mux.Session)
    assert through[:3] == plain[:3]
    assert plain[2].endswith(b"closed.\r\n"), plain[2]


def test_the_benchmark_runs_and_compares(sshd):
    """``python -m benches.ssh_client`` (a few commands): both ways run, with equal results."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    done = subprocess.run([sys.executable, "-m", "benches.ssh_client", "--rounds", "1", "--commands", "2"], cwd=root,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "through the master" in done.stdout and "(results equal)" in done.stdout, done.stdout


@pytest.mark.parametrize("data", [None, b"", b"line\n" * 50_000], ids=["no input", "empty", "250 kB"])
def test_communicate_gives_what_ssh_gives(sshd, master, learned, data):
    args = [b"ssh", *master, b"127.0.0.1", b"wc -c; echo err >&2; exit 5"]
    results = []
    for popen in (subprocess.Popen, ssh_client._popen):
        with popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as process:
            out, err = process.communicate(data, timeout=60)
            results.append((process.wait(), out, err, type(process)))
    assert results[1][3] is _ssh_mux.Session
    assert results[0][:3] == results[1][:3]
    assert results[0][0] == 5 and int(results[0][1]) == len(data or b"")
