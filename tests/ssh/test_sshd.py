"""The SSH test bed itself: a real sshd that checks host keys, serves every address, counts its
processes' CPU, and leaves nothing behind when stopped."""

from __future__ import annotations

import os
import subprocess
import time

import _sshd
import pytest


def test_commands_run_on_every_address(sshd, host_interpreters):
    for address in sshd.addresses:
        done = sshd.ssh(f"{host_interpreters[-1]} -c 'import sys; print(sys.version_info[:2])'; echo $SHLVL", address=address)
        assert done.returncode == 0, done.stderr
        lines = done.stdout.split()
        assert lines[-1] == "2"  # the command's shell did not read ~/.bashrc (see _sshd.py)


def test_host_keys_are_checked(sshd, tmp_path):
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    options = [o if not o.startswith("UserKnownHostsFile=") else f"UserKnownHostsFile={empty}" for o in sshd.ssh_options()]
    done = subprocess.run(["ssh", *options, "-p", str(sshd.port), f"{sshd.user}@127.0.0.1", "true"],
                          check=False, capture_output=True, text=True, timeout=60)
    assert done.returncode == 255 and "Host key verification failed" in done.stderr, done.stderr


def test_cpu_of_what_it_starts_is_counted(sshd):
    if sshd.cpu() is None:
        return  # no cgroup here: nothing to count with (the listener's tree is still ended by stop())
    before = sshd.cpu()
    done = sshd.ssh("python3 -c 'sum(range(20000000))' || sha256sum /dev/zero | head -c 1 & sleep 0.3; kill %1 2>/dev/null; true")
    assert done.returncode == 0, done.stderr
    assert sshd.cpu() - before > 0.05


@pytest.mark.parametrize("detach", [False, True], ids=["child", "daemon"])
def test_stop_ends_everything_it_started(detach):
    server = _sshd.Sshd(addresses=2, detach=detach)
    assert (server.process is None) == detach and server.alive()
    try:
        # a process that detaches from its shell and outlives it, as a remote daemon would
        done = server.ssh("setsid sleep 300 </dev/null >/dev/null 2>&1 & echo started", address="127.0.0.2")
        assert done.stdout.strip() == "started", done.stderr
        deadline = time.monotonic() + 10
        while not [p for p in server.host_processes() if _sshd.command_line(p).startswith("sleep 300")]:
            assert time.monotonic() < deadline, "the detached process was not seen"
            time.sleep(0.05)
        sleeper = next(p for p in server.host_processes() if _sshd.command_line(p).startswith("sleep 300"))
        listener = server.pid
    finally:
        server.stop()
    for pid in (listener, sleeper):
        assert _sshd.ended(pid), _sshd.command_line(pid)
    assert not os.path.exists(server.dir)
