"""Small playbooks with the accelerator off and on: none may be slower with it on.

``python -m benches.small_playbooks [--python PY] [--repeats 5] [--only NAME] [--json FILE]``

Where a playbook runs a handful of tasks, what the accelerator adds (its import, its patches, the
work it does ahead of the first fork) is not paid back by faster modules, so this is where it
could cost more than it gives.  Each playbook runs ``--repeats`` times with plain
``ansible-playbook`` (``off``) and with ``ansible-accel ansible-playbook`` as installed (``on``:
the warm runner included), the two modes in turn, on local host aliases.  A run's CPU is that of
its whole process tree, the warm runners included (``e2e/tree.py``: this process is the child
subreaper of the run); its wall time is until ``ansible-playbook`` exits.  The task results of
every run are compared with the first off run's, normalised as the end-to-end benchmark's are
(times and temporary paths left out).  The report gives the median
of each mode and their ratio, with the spread of the on/off ratios of the paired runs.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

from benches.e2e import tree  # noqa: E402
from benches.e2e.compare import normalise as normalised  # noqa: E402

CALLBACKS = os.path.join(HERE, "e2e", "callback_plugins")
MODES = ("off", "on")
CHEAP_TASKS = """
    - command: "true"
    - set_fact:
        seen: "{{ inventory_hostname }}"
    - debug:
        var: seen
    - ping:
"""
# name: (hosts, forks, tasks)
PLAYBOOKS = {
    "one-debug": (1, 1, "    - debug:\n        msg: hello\n"),
    "one-module": (1, 1, "    - ping:\n"),
    "three-modules": (1, 1, "    - ping:\n    - command: \"true\"\n    - stat:\n        path: /\n"),
    "cheap-5-hosts": (5, 5, CHEAP_TASKS),
    "cheap-30-hosts": (30, 5, CHEAP_TASKS),
}


def write_playbook(work: str, name: str, python: str) -> tuple[str, str]:
    hosts, _, tasks = PLAYBOOKS[name]
    inventory = os.path.join(work, f"{name}.hosts")
    with open(inventory, "w") as f:
        f.write("".join(f"small{i:02d} ansible_connection=local ansible_python_interpreter={python}\n"
                        for i in range(hosts)))
    play = os.path.join(work, f"{name}.yml")
    with open(play, "w") as f:
        f.write(f"- hosts: all\n  gather_facts: false\n  tasks:\n{tasks}")
    return inventory, play


def one_run(python: str, name: str, mode: str, work: str) -> dict:
    inventory, play = write_playbook(work, name, python)
    results = os.path.join(work, f"{name}-{mode}-results.json")
    if os.path.exists(results):
        os.remove(results)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "E2E_"))}
    env.update(ANSIBLE_CALLBACKS_ENABLED="e2e_results", ANSIBLE_CALLBACK_PLUGINS=CALLBACKS, E2E_RESULTS_FILE=results,
               ANSIBLE_RETRY_FILES_ENABLED="False", ANSIBLE_NOCOLOR="1", ANSIBLE_LOCAL_TEMP=os.path.join(work, "tmp"))
    bindir = os.path.dirname(python)
    command = [os.path.join(bindir, "ansible-playbook")] if mode == "off" else \
        [os.path.join(bindir, "ansible-accel"), "ansible-playbook"]
    command += ["-i", inventory, "-f", str(PLAYBOOKS[name][1]), play]
    with tree.Tree() as processes:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        completed = subprocess.run(command, env=env, cwd=work, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   text=True, errors="replace")
        wall = time.perf_counter() - started
        outcome = processes.settle()
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    try:
        with open(results) as f:
            task_results = json.load(f)
    except (OSError, ValueError):
        task_results = None
    return {"returncode": completed.returncode, "wall": wall, "cpu": cpu, "left_behind": outcome.left_behind,
            "results": normalised(task_results), "output": completed.stdout}


def measure(python: str, names: list[str], repeats: int) -> dict:
    report = {"python": python, "repeats": repeats, "load_before": os.getloadavg(), "playbooks": {}, "problems": []}
    with tempfile.TemporaryDirectory(prefix="small-playbooks-") as work:
        for name in names:
            runs = {mode: [] for mode in MODES}
            for repeat in range(repeats):
                for mode in MODES if repeat % 2 == 0 else tuple(reversed(MODES)):
                    runs[mode].append(one_run(python, name, mode, work))
            reference = runs["off"][0]["results"]
            for mode in MODES:
                for run in runs[mode]:
                    if run["returncode"] != 0:
                        report["problems"].append(f"{name} {mode}: exit status {run['returncode']}\n{run['output'][-1500:]}")
                    if run["results"] is None or run["results"] != reference:
                        report["problems"].append(f"{name} {mode}: task results differ from the first off run's")
                    if run["left_behind"]:
                        report["problems"].append(f"{name} {mode}: processes left behind: {run['left_behind']}")
            entry = {}
            for kind in ("cpu", "wall"):
                off = [r[kind] for r in runs["off"]]
                on = [r[kind] for r in runs["on"]]
                pairs = [b / a for a, b in zip(off, on) if a > 0]
                entry[kind] = {"off": statistics.median(off), "on": statistics.median(on),
                               "ratio": statistics.median(on) / statistics.median(off),
                               "pair_ratios": [min(pairs), max(pairs)] if pairs else None}
            report["playbooks"][name] = entry
    report["load_after"] = os.getloadavg()
    return report


def render(report: dict) -> str:
    load = f"load {report['load_before'][0]:.2f} -> {report['load_after'][0]:.2f}"
    lines = [f"small playbooks, off and on in turn, {report['repeats']} runs each, medians ({load})", "",
             "| playbook | tree CPU off | on | on/off (pairs) | wall off | on | on/off (pairs) |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for name, entry in report["playbooks"].items():
        cells = []
        for kind in ("cpu", "wall"):
            e = entry[kind]
            spread = "" if not e["pair_ratios"] else f" ({e['pair_ratios'][0]:.2f}-{e['pair_ratios'][1]:.2f})"
            cells += [f"{e['off']:.2f} s", f"{e['on']:.2f} s", f"{e['ratio']:.3f}{spread}"]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines.append("results: " + ("identical" if not any("differ" in p for p in report["problems"]) else "DIFFER"))
    lines.extend(f"problem: {p}" for p in report["problems"])
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benches.small_playbooks", description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", default=os.path.join(ROOT, ".venv", "py312", "bin", "python"),
                        help="interpreter of a venv with ansible-core and ansible-accel")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--only", action="append", choices=sorted(PLAYBOOKS), help="only these playbooks")
    parser.add_argument("--json", help="write the report here as JSON")
    args = parser.parse_args(argv)
    report = measure(args.python, args.only or list(PLAYBOOKS), args.repeats)
    print(render(report))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
    return 1 if report["problems"] else 0


if __name__ == "__main__":
    sys.exit(main())
