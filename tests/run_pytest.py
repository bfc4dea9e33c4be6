"""Run the test suite on several interpreters at once (``make test-py``), then print each run's
output in turn.

Most of a run's time is spent waiting on playbooks, modules and timeouts, not computing, so the
runs overlap well on two cores.  They are started from here rather than from the shell's
background (``&``), which would start them with SIGINT and SIGQUIT ignored, as tests of signal
handling must not be.

    python tests/run_pytest.py --log-dir DIR PYTHON... -- PYTEST_ARGS...
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time


def main(argv: list[str]) -> int:
    if "--" in argv:
        at = argv.index("--")
        argv, pytest_args = argv[:at], argv[at + 1:]
    else:
        pytest_args = []
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--log-dir", required=True)
    parser.add_argument("pythons", nargs="+")
    options = parser.parse_args(argv)
    os.makedirs(options.log_dir, exist_ok=True)
    runs = []
    for python in options.pythons:
        name = os.path.basename(os.path.dirname(os.path.dirname(python))) or python
        log = os.path.join(options.log_dir, f"{name}.log")
        handle = open(log, "wb")  # noqa: SIM115 - closed below, once the run has ended
        process = subprocess.Popen([python, "-m", "pytest", *pytest_args], stdout=handle, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL)
        runs.append((name, log, handle, process, time.monotonic()))
    failed = []
    ended = {}
    waiting = {process.pid: (name, handle, process, started) for name, _, handle, process, started in runs}
    while waiting:
        pid, status = os.wait()
        if pid not in waiting:
            continue
        name, handle, process, started = waiting.pop(pid)
        ended[name] = time.monotonic() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        handle.close()
    for name, log, _, process, _ in runs:
        print(f"== pytest on {name} ({ended[name]:.0f} s, exit status {process.returncode})", flush=True)
        with open(log, "rb") as handle:
            sys.stdout.buffer.write(handle.read())
        sys.stdout.flush()
        if process.returncode != 0:
            failed.append(name)
    if failed:
        print(f"== pytest failed on {', '.join(failed)}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
