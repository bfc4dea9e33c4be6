"""The controller's CPU while every worker waits on a slow task, accelerator off and on.

``python -m benches.controller_wait [--python PY] [--hosts 20] [--nap 10] [--repeats 2] [--json FILE]``

One play, ``command: sleep NAP`` on ``--hosts`` local host aliases with as many forks, runs
with plain ``ansible-playbook`` (``off``) and with ``ansible-accel ansible-playbook`` (``on``),
in turn.  An observer outside the run watches the process tree: once every host's ``sleep`` is
running (all workers are waiting on their module), it reads the controller process's CPU time
(the sum over its threads of ``/proc/PID/task/TID/schedstat``, in nanoseconds), again near the
end of the naps, and checks that every ``sleep`` was still running then.  What the controller
spent in that window is what waiting on busy workers costs it: ansible-core's strategy polls
its results every millisecond, the ``controller`` path waits on events.  The play's task
results are compared between the modes, normalised as the end-to-end benchmark's are.

Nothing here is timed against a target in a test; ``tests/controller/test_controller_wait.py``
runs it small to keep it working.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

from .e2e.compare import normalise as normalised

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CALLBACKS = os.path.join(HERE, "e2e", "callback_plugins")
MODES = ("off", "on")
# The window starts this long after the last sleep was seen and ends this long before the first
# seen would end: the controller is then only waiting.
START_DELAY = 0.2
MARGIN = 1.0


def thread_cpu_ns(pid: int) -> int | None:
    """CPU time of every thread of ``pid`` so far, in nanoseconds (None: it is gone)."""
    total = 0
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                    total += int(f.read().split()[0])
            except (FileNotFoundError, ProcessLookupError):
                continue  # a thread that just ended: its time is in no other thread's
    except FileNotFoundError:
        return None
    return total


def descendants(pid: int) -> dict[int, str]:
    """The processes under ``pid``, with their command lines."""
    parents, commands = {}, {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                command = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        parents[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
        commands[int(entry)] = command
    found = {}
    for child, parent in parents.items():
        seen = child
        while parent and parent != pid and parent in parents and parent != seen:
            seen, parent = parent, parents[parent]
        if parent == pid:
            found[child] = commands[child]
    return found


def sleeping(pid: int, marker: str) -> set[int]:
    return {p for p, command in descendants(pid).items() if command == f"sleep {marker}"}


def run_mode(python: str, mode: str, hosts: int, nap: float, work: str) -> dict:
    bindir = os.path.dirname(python)
    marker = f"{nap:.3f}"
    inventory = os.path.join(work, "hosts")
    with open(inventory, "w") as f:
        f.write("".join(f"wait{i:03d} ansible_connection=local ansible_python_interpreter={python}\n"
                        for i in range(hosts)))
    play = os.path.join(work, "play.yml")
    with open(play, "w") as f:
        f.write(f"- hosts: all\n  gather_facts: false\n  tasks:\n    - command: sleep {marker}\n")
    results = os.path.join(work, f"results-{mode}.json")
    env = dict(os.environ, ANSIBLE_CALLBACKS_ENABLED="e2e_results", ANSIBLE_CALLBACK_PLUGINS=CALLBACKS,
               E2E_RESULTS_FILE=results, ANSIBLE_HOST_KEY_CHECKING="False", ANSIBLE_RETRY_FILES_ENABLED="False",
               ANSIBLE_LOCAL_TEMP=os.path.join(work, "tmp"), ANSIBLE_NOCOLOR="1")
    env.pop("ANSIBLE_CONFIG", None)
    if mode == "off":
        command = [os.path.join(bindir, "ansible-playbook")]
    else:
        command = [os.path.join(bindir, "ansible-accel"), "ansible-playbook"]
    command += ["-i", inventory, "-f", str(hosts), play]
    started = time.monotonic()
    proc = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=work)
    window = None
    try:
        deadline = started + 120 + nap
        seen: dict[int, float] = {}  # each sleep, when first seen
        while time.monotonic() < deadline and proc.poll() is None:
            now = time.monotonic()
            for pid in sleeping(proc.pid, marker):
                seen.setdefault(pid, now)
            if len(seen) == hosts:
                # from a moment after the last sleep started to a margin before the first can end
                time.sleep(START_DELAY)
                cpu0, t0 = thread_cpu_ns(proc.pid), time.monotonic()
                time.sleep(max(0.0, min(seen.values()) + nap - MARGIN - t0))
                cpu1, t1 = thread_cpu_ns(proc.pid), time.monotonic()
                still = sleeping(proc.pid, marker)
                if cpu0 is not None and cpu1 is not None:
                    window = {"seconds": t1 - t0, "cpu": (cpu1 - cpu0) / 1e9, "all_waiting": still == set(seen)}
                break
            time.sleep(0.02)
        output = proc.communicate(timeout=300)[0].decode(errors="replace")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    try:
        with open(results) as f:
            task_results = json.load(f)
    except (OSError, ValueError):
        task_results = None
    return {"mode": mode, "returncode": proc.returncode, "wall": time.monotonic() - started, "window": window,
            "results": task_results, "output": output}


def measure(python: str, hosts: int = 20, nap: float = 10.0, repeats: int = 2) -> dict:
    if nap < START_DELAY + MARGIN + 1:
        raise ValueError(f"a nap of {nap} s leaves no window to measure (at least {START_DELAY + MARGIN + 1} s)")
    runs = []
    with tempfile.TemporaryDirectory(prefix="controller-wait-") as work:
        for repeat in range(repeats):
            for mode in MODES if repeat % 2 == 0 else tuple(reversed(MODES)):
                directory = os.path.join(work, f"{mode}-{repeat}")
                os.makedirs(directory)
                runs.append(run_mode(python, mode, hosts, nap, directory))
    report = {"python": python, "hosts": hosts, "nap": nap, "repeats": repeats,
              "load": os.getloadavg(), "modes": {}, "problems": []}
    reference = None
    for run in runs:
        if run["returncode"] != 0:
            report["problems"].append(f"{run['mode']}: exit status {run['returncode']}\n{run['output'][-2000:]}")
        if run["window"] is None:
            report["problems"].append(f"{run['mode']}: the workers were never all waiting at once")
        elif not run["window"]["all_waiting"]:
            report["problems"].append(f"{run['mode']}: a sleep ended inside the measured window")
        elif run["window"]["seconds"] < 1.0:
            report["problems"].append(f"{run['mode']}: the workers started too far apart to leave a window of 1 s")
        results = normalised(run["results"])
        if reference is None:
            reference = results
        elif results != reference:
            report["problems"].append(f"{run['mode']}: task results differ from the first run's")
        entry = report["modes"].setdefault(run["mode"], {"runs": 0, "seconds": 0.0, "cpu": 0.0, "wall": 0.0})
        entry["runs"] += 1
        entry["wall"] += run["wall"]
        if run["window"]:
            entry["seconds"] += run["window"]["seconds"]
            entry["cpu"] += run["window"]["cpu"]
    for entry in report["modes"].values():
        entry["cpu_per_second"] = entry["cpu"] / entry["seconds"] if entry["seconds"] else None
    off, on = (report["modes"].get(m, {}).get("cpu_per_second") for m in MODES)
    report["ratio"] = on / off if off and on is not None else None
    report["results_identical"] = not any("differ" in p for p in report["problems"])
    return report


def render(report: dict) -> str:
    lines = [f"controller CPU while {report['hosts']} workers wait on `sleep {report['nap']}` "
             f"({report['repeats']} runs a mode, load {' '.join(f'{x:.2f}' for x in report['load'])})",
             "", "| mode | window | controller CPU | per second of waiting | wall per run |", "|---|---:|---:|---:|---:|"]
    for mode in MODES:
        entry = report["modes"].get(mode)
        if entry:
            rate = entry["cpu_per_second"]
            lines.append(f"| {mode} | {entry['seconds']:.1f} s | {entry['cpu'] * 1000:.1f} ms | "
                         f"{'-' if rate is None else f'{rate * 1000:.2f} ms/s'} | {entry['wall'] / entry['runs']:.1f} s |")
    if report["ratio"] is not None:
        lines.append(f"\non/off: {report['ratio']:.3f}")
    lines.append(f"results: {'identical' if report['results_identical'] else 'DIFFER'}")
    lines.extend(f"problem: {p}" for p in report["problems"])
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benches.controller_wait", description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", default=os.path.join(ROOT, ".venv", "py312", "bin", "python"),
                        help="interpreter of a venv with ansible-core and ansible-accel")
    parser.add_argument("--hosts", type=int, default=20)
    parser.add_argument("--nap", type=float, default=10.0, help="seconds each host's task sleeps")
    parser.add_argument("--repeats", type=int, default=2, help="runs of each mode, in turn")
    parser.add_argument("--json", help="write the report here as JSON")
    args = parser.parse_args(argv)
    report = measure(args.python, args.hosts, args.nap, args.repeats)
    print(render(report))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
    return 1 if report["problems"] else 0


if __name__ == "__main__":
    sys.exit(main())
