"""A task's first run in a freshly forked worker beside a second run of it in the same worker.

``python -m benches.worker_warmup [--python PY] [--hosts 10] [--forks 5] [--json FILE]``

ansible-core runs each task of each host in a worker forked from the controller, and the worker
ends after that one task.  Every page of the controller's heap the worker writes is copied at a
page fault first (copy-on-write), and CPython writes to most of what it touches: reference
counts, the warm-up counters of the bytecode it runs, the heap's free lists.  To see what that
costs a task, this runs a playbook of cheap tasks (``set_fact``, ``debug``, ``assert``,
``command: true``, ``ping``) with ansible-core's ``TaskExecutor.run`` called twice in each worker:
the first run's result is dropped, the second's is the task's.  The CPU time and minor page
faults of each run are taken inside the worker (``time.process_time``, ``getrusage``).  The second
run finds the pages it writes copied already and every per-process cache filled by the first.
Runs with the accelerator off (plain ``ansible-playbook``) and on (as installed), in turn; the
report gives medians per task and mode, and the task results of each mode (the second runs')
compared.  A measurement only: a real run never runs a task twice.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

from benches.e2e.compare import normalise  # noqa: E402

CALLBACKS = os.path.join(HERE, "e2e", "callback_plugins")
MODES = ("off", "on")
PLAY = """\
- hosts: all
  gather_facts: false
  tasks:
    - set_fact: {seen: "{{ inventory_hostname }}"}
    - debug: {var: seen}
    - assert: {that: "seen == inventory_hostname"}
    - command: "true"
    - ping:
"""

# Runs in the measured interpreter: ansible-playbook in this process, TaskExecutor.run twice.
RUNNER = '''
import json, os, resource, sys, time
work, accel = sys.argv[1], sys.argv[2] == "on"
from ansible.executor import task_executor
run = task_executor.TaskExecutor.run

def measured(self):
    def taken():
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return time.process_time(), usage.ru_minflt
    cpu0, faults0 = taken()
    run(self)
    cpu1, faults1 = taken()
    result = run(self)
    cpu2, faults2 = taken()
    with open(os.path.join(work, f"warmup-{os.getpid()}.json"), "w") as f:
        json.dump({"task": str(self._task.action), "first": [cpu1 - cpu0, faults1 - faults0],
                   "second": [cpu2 - cpu1, faults2 - faults1]}, f)
    return result

task_executor.TaskExecutor.run = measured
if accel:
    import ansible_accel
    ansible_accel.install()
from ansible.cli.playbook import main
sys.argv = ["ansible-playbook", "-i", os.path.join(work, "hosts"), "-f", sys.argv[3], os.path.join(work, "play.yml")]
sys.exit(main())
'''


def one_mode(python: str, mode: str, hosts: int, forks: int, root: str) -> dict:
    work = os.path.join(root, mode)
    os.makedirs(work)
    with open(os.path.join(work, "play.yml"), "w") as f:
        f.write(PLAY)
    with open(os.path.join(work, "hosts"), "w") as f:
        f.write("".join(f"warm{i:02d} ansible_connection=local ansible_python_interpreter={python}\n"
                        for i in range(hosts)))
    results = os.path.join(work, "results.json")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "E2E_"))}
    env.update(ANSIBLE_CALLBACKS_ENABLED="e2e_results", ANSIBLE_CALLBACK_PLUGINS=CALLBACKS, E2E_RESULTS_FILE=results,
               ANSIBLE_RETRY_FILES_ENABLED="False", ANSIBLE_NOCOLOR="1", ANSIBLE_LOCAL_TEMP=os.path.join(work, "tmp"))
    done = subprocess.run([python, "-c", RUNNER, work, mode, str(forks)], env=env, cwd=work, capture_output=True,
                          text=True, timeout=1800)
    runs = []
    for name in sorted(os.listdir(work)):
        if name.startswith("warmup-"):
            with open(os.path.join(work, name)) as f:
                runs.append(json.load(f))
    try:
        with open(results) as f:
            task_results = normalise(json.load(f))
    except (OSError, ValueError):
        task_results = None
    return {"returncode": done.returncode, "output": done.stdout[-2000:] + done.stderr[-2000:], "runs": runs,
            "results": task_results}


def summary(runs: list[dict]) -> dict:
    """Medians per task (and over all tasks): CPU in ms and page faults, first and second run."""
    by_task: dict[str, list[dict]] = {}
    for run in runs:
        by_task.setdefault(run["task"], []).append(run)
    by_task["all tasks"] = runs
    table = {}
    for task, task_runs in by_task.items():
        row = {"workers": len(task_runs)}
        for which in ("first", "second"):
            row[f"{which}_cpu_ms"] = statistics.median(r[which][0] for r in task_runs) * 1000
            row[f"{which}_faults"] = statistics.median(r[which][1] for r in task_runs)
        table[task] = row
    return table


def render(report: dict) -> str:
    lines = [f"{report['hosts']} hosts × 5 tasks, -f {report['forks']}, Python {report['python_version']}; load "
             f"average {report['load_before'][0]:.2f} → {report['load_after'][0]:.2f} (2 CPUs)", "",
             "| mode | task | workers | first run: CPU | second run: CPU | first run: page faults | second run: page faults |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for mode in MODES:
        for task, row in report["modes"][mode]["summary"].items():
            lines.append(f"| {mode} | {task} | {row['workers']} | {row['first_cpu_ms']:.2f} ms | {row['second_cpu_ms']:.2f} ms "
                         f"| {row['first_faults']:.0f} | {row['second_faults']:.0f} |")
    lines += ["", "Results: " + ("identical" if report["identical"] else "DIFFERENT")]
    lines += [f"Problem: {p}" for p in report["problems"]]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benches.worker_warmup", description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", default=os.path.join(ROOT, ".venv", "py312", "bin", "python"))
    parser.add_argument("--hosts", type=int, default=10)
    parser.add_argument("--forks", type=int, default=5)
    parser.add_argument("--json", help="write the report here as JSON")
    args = parser.parse_args(argv)
    args.python = os.path.abspath(args.python)  # the runs' working directories are their own
    version = subprocess.run([args.python, "-c", "import sys; print('%d.%d.%d' % sys.version_info[:3])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    report = {"hosts": args.hosts, "forks": args.forks, "python_version": version, "load_before": os.getloadavg(),
              "modes": {}, "problems": []}
    with tempfile.TemporaryDirectory(prefix="worker-warmup-") as root:
        for mode in MODES:
            outcome = one_mode(args.python, mode, args.hosts, args.forks, root)
            if outcome["returncode"] != 0:
                report["problems"].append(f"{mode}: exit status {outcome['returncode']}\n{outcome['output']}")
            if len(outcome["runs"]) != 5 * args.hosts:
                report["problems"].append(f"{mode}: {len(outcome['runs'])} workers measured, not {5 * args.hosts}")
            report["modes"][mode] = {"summary": summary(outcome["runs"]) if outcome["runs"] else {},
                                     "results": outcome["results"]}
    report["load_after"] = os.getloadavg()
    first = report["modes"]["off"]["results"]
    report["identical"] = first is not None and all(report["modes"][m]["results"] == first for m in MODES)
    print(render(report))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
    return 0 if not report["problems"] and report["identical"] else 1


if __name__ == "__main__":
    sys.exit(main())
