"""One SSH command's CPU on the controller, through the host's ControlPersist master from the
calling process (the ``ssh_client`` path) against an ``ssh`` process, side by side.

``python -m benches.ssh_client [--rounds N] [--commands N]`` starts the test bed's private sshd
(``tests/ssh/_sshd.py``), a master for 127.0.0.1 with ansible-core's default options, and runs
``true`` with ``-tt`` (as ansible-core runs a module's command without pipelining) the two ways
in turn, ``--commands`` of each per round: the CPU of this process and of the processes it
started, per command (``os.times``).  Each round also checks that both ways gave the same exit
status, output and error.  The master's and the server's own CPU are the same either way and
are not counted.
"""

from __future__ import annotations

import argparse
import os
import pty
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests", "ssh"))
import _sshd  # noqa: E402

from ansible_accel._integrations import ssh_client  # noqa: E402


def _one(popen, args) -> tuple[int, bytes, bytes]:
    controlling, slave = pty.openpty()
    process = popen(args, stdin=slave, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    os.close(slave)
    out, err = process.stdout.read(), process.stderr.read()
    status = process.wait()
    process.stdout.close()
    process.stderr.close()
    os.close(controlling)
    return status, out, err


def _per_command(popen, args, count: int) -> tuple[float, float, tuple]:
    before = os.times()
    for _ in range(count):
        result = _one(popen, args)
    after = os.times()
    own = (after.user + after.system - before.user - before.system) / count * 1000
    started = (after.children_user + after.children_system - before.children_user - before.children_system) / count * 1000
    return own, started, result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--commands", type=int, default=40)
    options = parser.parse_args(argv)
    server = _sshd.Sshd(addresses=1)
    control_dir = tempfile.mkdtemp(prefix="cp", dir="/tmp")
    learned = tempfile.mkdtemp(prefix="accel-ssh-g-")
    try:
        ssh_options = [*server.ssh_options(), "-C", "-o", "ControlMaster=auto", "-o", "ControlPersist=60s",
                       "-o", f'ControlPath="{control_dir}/%C"', "-p", str(server.port), "-l", server.user]
        subprocess.run(["ssh", *ssh_options, "127.0.0.1", "true"], check=True, capture_output=True, timeout=60)
        ssh_client._State.cache_dir = learned
        ssh_client._State.original_subprocess = subprocess
        args = [b"ssh", *map(os.fsencode, ssh_options), b"-tt", b"127.0.0.1", b"true"]
        _one(ssh_client._popen, args)  # asks ssh -G once
        through, by_ssh = [], []
        for _ in range(options.rounds):
            own, started, mine = _per_command(ssh_client._popen, args, options.commands)
            through.append(own + started)
            own, started, theirs = _per_command(subprocess.Popen, args, options.commands)
            by_ssh.append(own + started)
            if mine != theirs:
                print(f"DIFFERENT RESULTS: {mine!r} != {theirs!r}")
                return 1
        load = os.getloadavg()[0]
        a, b = statistics.median(through), statistics.median(by_ssh)
        print(f"CPU per SSH command on the controller (medians of {options.rounds} rounds of {options.commands}, "
              f"load average {load:.2f}):")
        print(f"  through the master   {a:6.2f} ms")
        print(f"  an ssh process       {b:6.2f} ms")
        # A few commands can take less CPU than the clock's tick shows: no ratio then.
        ratio = f"{b / a:6.1f}x" if a > 0 else "   n/a"
        print(f"  ratio                {ratio}   (results equal)")
        return 0
    finally:
        subprocess.run(["ssh", "-o", f'ControlPath="{control_dir}/%C"', "-p", str(server.port), "-O", "exit", "127.0.0.1"],
                       capture_output=True, timeout=60, check=False)
        server.stop()
        import shutil

        shutil.rmtree(control_dir, ignore_errors=True)
        shutil.rmtree(learned, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
