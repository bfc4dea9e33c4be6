"""The ansible-accel demo: one real playbook run with the accelerator off, one with it on.

Usage: ``.venv/py3XX/bin/python tests/demo/run_demo.py [--keep] [--no-routes]``

``playbook.yml`` runs against 20 aliases of this machine (``inventory.ini``: local connection,
this virtual environment's Python) and only touches files in a temporary directory.  The
"off" run is plain ``ansible-playbook``; the "on" run is ``ansible-accel ansible-playbook``
with ``ANSIBLE_ACCEL_STATS`` collecting the counters of the controller and its workers.  The
end-to-end benchmark's ``e2e_results`` callback records every host's task results; after
normalising what legitimately differs between two runs (times, temporary paths, inode numbers:
``benches/e2e/compare.py``, shared with the benchmark) they must be identical, and so must the
printed output.

A run's CPU time is that of every process it started, counted with the end-to-end benchmark's
``benches/e2e/tree.py``: the controller, its workers and the module processes they wait for
(``RUSAGE_CHILDREN``), and also the processes that outlive the one that started them: the warm
runners, which a worker starts in a session of their own and which end after the controller,
with the modules they fork.  This process makes itself their child subreaper for the run, so
they are re-parented to it, and it reaps each one (``wait4``) before the figure is taken.
Where this process has a cgroup of its own, the cgroup's CPU time is shown beside it.

Then the other ways of switching the accelerator on are checked with ``route/route.yml``:
the ``ansible-accel config`` lines as an ansible.cfg file and as environment variables
(for ``ansible-playbook`` and ad-hoc ``ansible``), and ``ANSIBLE_ACCEL=0`` switching it off.

Exit status 1 when the results differ, a run fails, or a route check fails.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from importlib import metadata

HERE = os.path.dirname(os.path.abspath(__file__))
BIN = os.path.dirname(sys.executable)  # the virtual environment's bin/ (not resolved: a venv)
ROUTE_HOSTS = "host01:host02:host03"
ROUTE_PROBES_PER_HOST = 2
# The results callback and the comparison are the end-to-end benchmark's (benches/e2e).
ROOT = os.path.dirname(os.path.dirname(HERE))
RESULTS_CALLBACKS = os.path.join(ROOT, "benches", "e2e", "callback_plugins")
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from benches.e2e import compare, tree  # noqa: E402


# --- running ansible -------------------------------------------------------------------------


@dataclasses.dataclass
class Run:
    returncode: int
    wall: float
    cpu: float  # every process of the run, the outlived ones included when subreaper is true
    output: str
    results: dict | None = None
    stats: dict | None = None
    subreaper: bool = False  # processes that outlived their parent were re-parented here and counted
    outlived: tree.Outcome | None = None  # those processes, and the cgroup's CPU time


def clean_environment(**extra: str) -> dict[str, str]:
    """The caller's environment without any ANSIBLE_* setting, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_") and k != "E2E_RESULTS_FILE"}
    env.update(ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0", PYTHONDONTWRITEBYTECODE="1")
    env.update(extra)
    return env


def run_ansible(command: list[str], env: dict[str, str], cwd: str) -> Run:
    """Run a command; its wall time and the CPU time of every process it started: the
    controller, its workers and the module processes they wait for, and, reaped here after
    the command has exited, the processes that outlived their parent (the warm runners and
    the modules they forked).  Wall time ends when the command exits."""
    with tree.Tree() as processes:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        completed = subprocess.run(
            command, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace"
        )
        wall = time.perf_counter() - started
        outcome = processes.settle()
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Run(completed.returncode, wall, cpu, completed.stdout, subreaper=processes.subreaper, outlived=outcome)


def load_json(path: str) -> dict | None:
    try:
        with open(path) as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return None


def run_demo_playbook(mode: str, work: str) -> Run:
    """One run of playbook.yml on fresh files; ``mode`` "on" runs it via ansible-accel."""
    demo_root = os.path.join(work, "files")
    shutil.rmtree(demo_root, ignore_errors=True)
    os.makedirs(demo_root)
    results_file = os.path.join(work, f"results-{mode}.json")
    stats_file = os.path.join(work, f"stats-{mode}.json")
    env = clean_environment(
        ANSIBLE_CONFIG=os.path.join(HERE, "ansible.cfg"),
        ANSIBLE_CALLBACK_PLUGINS=RESULTS_CALLBACKS,
        ANSIBLE_CALLBACKS_ENABLED="e2e_results",
        E2E_RESULTS_FILE=results_file,
    )
    playbook = [
        "-i",
        os.path.join(HERE, "inventory.ini"),
        os.path.join(HERE, "playbook.yml"),
        "-e",
        f"demo_root={demo_root}",
    ]
    if mode == "on":
        env["ANSIBLE_ACCEL_STATS"] = stats_file
        command = [os.path.join(BIN, "ansible-accel"), "ansible-playbook", *playbook]
    else:
        command = [os.path.join(BIN, "ansible-playbook"), *playbook]
    run = run_ansible(command, env, work)
    run.results = load_json(results_file)
    run.stats = load_json(stats_file) if mode == "on" else None
    with open(os.path.join(work, f"output-{mode}.log"), "w") as handle:
        handle.write(run.output)
    return run


# --- comparing two runs ----------------------------------------------------------------------


def differences(off: Run, on: Run, limit: int = 10) -> list[str]:
    """How the two runs' results differ (empty when identical)."""
    return compare.differences(off.results, off.output, on.results, on.output, limit, labels=("off", "on"))


# --- the other routes ------------------------------------------------------------------------


@dataclasses.dataclass
class RouteCheck:
    name: str
    ok: bool
    detail: str


def accel_config_text() -> str:
    completed = subprocess.run(
        [os.path.join(BIN, "ansible-accel"), "config"], stdout=subprocess.PIPE, text=True, check=True
    )
    return completed.stdout


def config_as_environment(text: str) -> dict[str, str]:
    """The ``#   ANSIBLE_X=value`` lines of ``ansible-accel config``."""
    return dict(re.findall(r"^#\s+(ANSIBLE_[A-Z_]+)=(.*)$", text, flags=re.MULTILINE))


def route_run(
    work: str, name: str, settings: dict[str, str], expect_installed: bool, adhoc: bool = False
) -> tuple[Run, dict | None]:
    stats_file = os.path.join(work, f"route-{name}.json")
    env = clean_environment(ANSIBLE_ACCEL_STATS=stats_file, **settings)
    env.setdefault("ANSIBLE_CONFIG", os.path.join(work, "empty.cfg"))
    open(os.path.join(work, "empty.cfg"), "a").close()
    inventory = os.path.join(HERE, "inventory.ini")
    if adhoc:
        env["ANSIBLE_ACTION_PLUGINS"] = os.path.join(HERE, "route", "action_plugins")
        command = [os.path.join(BIN, "ansible"), ROUTE_HOSTS, "-i", inventory, "-m", "accel_probe",
                   "-a", f"expect_installed={expect_installed}"]  # fmt: skip
    else:
        command = [os.path.join(BIN, "ansible-playbook"), "-i", inventory, "--limit", ROUTE_HOSTS,
                   os.path.join(HERE, "route", "route.yml"), "-e", f"expect_installed={expect_installed}"]  # fmt: skip
    if os.path.exists(stats_file):
        os.remove(stats_file)
    run = run_ansible(command, env, work)
    return run, load_json(stats_file)


def check_route(work: str, name: str) -> RouteCheck:
    """One route: ``cfg`` (ansible.cfg file), ``env`` (environment variables), ``adhoc``
    (env vars, ad-hoc ``ansible``), ``disabled`` (env vars plus ANSIBLE_ACCEL=0)."""
    text = accel_config_text()
    if name == "cfg":
        config = os.path.join(work, "accel.cfg")
        with open(config, "w") as handle:
            handle.write(text)
        settings = {"ANSIBLE_CONFIG": config}
    else:
        settings = config_as_environment(text)
        if not settings:
            return RouteCheck(name, False, "`ansible-accel config` printed no environment variables")
    expect_installed = name != "disabled"
    if name == "disabled":
        settings["ANSIBLE_ACCEL"] = "0"
    run, stats = route_run(work, name, settings, expect_installed, adhoc=(name == "adhoc"))
    hosts = ROUTE_HOSTS.count(":") + 1
    probes = hosts * (1 if name == "adhoc" else ROUTE_PROBES_PER_HOST)
    if run.returncode != 0:
        return RouteCheck(name, False, f"exit status {run.returncode}: {run.output[-1500:]}")
    if stats is None:
        return RouteCheck(name, False, "no ANSIBLE_ACCEL_STATS file written")
    if stats.get("installed") != expect_installed:
        return RouteCheck(name, False, f"stats say installed={stats.get('installed')} ({stats.get('reason')})")
    if not expect_installed:
        ok = "ANSIBLE_ACCEL=0" in (stats.get("reason") or "")
        return RouteCheck(name, ok, f"not installed: {stats.get('reason')}; workers saw it off")
    counted = stats["run"]["paths"]["finder"].get("events", {}).get("route_probe", 0)
    processes = stats["run"]["processes"]
    ok = counted == probes and processes >= 1 + probes
    return RouteCheck(
        name,
        ok,
        f"installed before the workers forked; {counted}/{probes} worker probes counted, {processes} processes reported",
    )


ROUTES = ("cfg", "env", "adhoc", "disabled")


# --- the report ------------------------------------------------------------------------------


def print_table(version: str, off: Run, on: Run, diffs: list[str], routes: list[RouteCheck]) -> None:
    hosts = len((off.results or {}).get("hosts", {}))
    tasks = sum(len(v) for v in (off.results or {}).get("hosts", {}).values())
    print(
        f"\nansible-accel demo: ansible-core {version}, Python {sys.version.split()[0]}, "
        f"{hosts} hosts, {tasks} task results per run"
    )
    print(f"  {'':<34} {'off':>10} {'on':>10}")
    print(f"  {'exit status':<34} {off.returncode:>10} {on.returncode:>10}")
    print(f"  {'wall time (s)':<34} {off.wall:>10.2f} {on.wall:>10.2f}")
    print(f"  {'CPU time, all processes (s)':<34} {off.cpu:>10.2f} {on.cpu:>10.2f}")
    print(f"  {'  of it, outlived their parent (s)':<34} {outlived_cpu(off):>10.2f} {outlived_cpu(on):>10.2f}")
    if off.outlived and on.outlived and off.outlived.cgroup_cpu is not None and on.outlived.cgroup_cpu is not None:
        print(f"  {'CPU time, this cgroup (s)':<34} {off.outlived.cgroup_cpu:>10.2f} {on.outlived.cgroup_cpu:>10.2f}")
    print(f"  {'results identical':<34} {'yes' if not diffs else 'NO':>21}")
    for note in cpu_notes(off, on):
        print(textwrap.fill(note, width=100, initial_indent="  ", subsequent_indent="    "))
    stats = on.stats or {}
    print(
        f"\n  accelerator (ANSIBLE_ACCEL_STATS): installed={'yes' if stats.get('installed') else 'no'}"
        + (f" ({stats.get('reason')})" if stats.get("reason") else "")
        + f", processes reporting: {stats.get('run', {}).get('processes', 0)}"
    )
    print(f"  {'path':<10} {'active':<7} {'native':>9} {'fallback':>9}  reason / fallbacks")
    for path, info in stats.get("run", {}).get("paths", {}).items():
        state = stats.get(path, {})
        fallbacks = info.get("fallback", {})
        detail = state.get("reason") or ", ".join(f"{k}: {v}" for k, v in sorted(fallbacks.items()))
        print(
            f"  {path:<10} {'yes' if state.get('active') else 'no':<7} {info.get('native', 0):>9} "
            f"{sum(fallbacks.values()):>9}  {detail}"
        )
    for diff in diffs:
        print(f"  DIFFERENCE: {diff}")
    if routes:
        print("\n  other ways to switch it on:")
        for route in routes:
            print(f"  {route.name:<9} {'ok' if route.ok else 'FAILED':<7} {route.detail}")


def outlived_cpu(run: Run) -> float:
    return sum(o.cpu for o in run.outlived.orphans) if run.outlived else 0.0


def cpu_notes(off: Run, on: Run) -> list[str]:
    """What the CPU figures count, as measured."""
    notes = []
    if off.subreaper and on.subreaper:
        runners = [o for o in on.outlived.orphans if o.kind == "runner"]
        notes.append(
            "CPU counts the controller, its workers, the module processes they wait for, and the processes "
            "that outlived their parent, re-parented to this demo (child subreaper) and reaped by it"
            f"; 'on': {len(runners)} warm runner{'' if len(runners) == 1 else 's'} with the modules "
            f"{'it' if len(runners) == 1 else 'they'} forked, {sum(o.cpu for o in runners):.2f} s"
        )
    else:
        notes.append(
            "CPU counts the controller, its workers and the module processes they wait for ONLY: this demo "
            "could not make itself a child subreaper here, so the warm runners and the modules they fork "
            "(which outlive the worker that started them) are not counted"
        )
    if off.outlived and on.outlived and (off.outlived.cgroup_cpu is None or on.outlived.cgroup_cpu is None):
        notes.append(f"no cgroup CPU time to compare with: {tree.cgroup_usage_file()[1]}")
    for label, run in (("off", off), ("on", on)):
        for line in run.outlived.left_behind if run.outlived else []:
            notes.append(f"LEFT BEHIND by the '{label}' run (killed after {tree.SETTLE_SECONDS:.0f} s): {line}")
    return notes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory (results, logs)")
    parser.add_argument("--no-routes", action="store_true", help="skip the ansible.cfg / env / ANSIBLE_ACCEL=0 checks")
    options = parser.parse_args(argv)

    version = metadata.version("ansible-core")
    work = tempfile.mkdtemp(prefix="ansible-accel-demo-")
    print(f"== demo: ansible-core {version}, work directory {work}", flush=True)
    try:
        runs = {}
        for mode in ("off", "on"):
            print(f"   running playbook.yml, accelerator {mode} ...", flush=True)
            runs[mode] = run_demo_playbook(mode, work)
            if runs[mode].returncode != 0:
                print(runs[mode].output[-4000:])
        diffs = differences(runs["off"], runs["on"])
        routes = []
        if not options.no_routes:
            print("   checking the ansible.cfg / environment / ANSIBLE_ACCEL=0 routes ...", flush=True)
            routes = [check_route(work, name) for name in ROUTES]
        print_table(version, runs["off"], runs["on"], diffs, routes)
        failed = bool(diffs) or any(r.returncode != 0 for r in runs.values()) or not all(r.ok for r in routes)
        if any(r.outlived and r.outlived.left_behind for r in runs.values()):
            failed = True  # a process the run started was still alive long after it ended
        stats = runs["on"].stats or {}
        if not stats.get("installed"):
            print("  the 'on' run did not install ansible-accel")
            failed = True
        broken = [
            p
            for p, info in stats.items()
            if isinstance(info, dict) and str(info.get("reason") or "").startswith("failed to switch on")
        ]
        if broken:
            print(f"  paths that broke while switching on: {', '.join(broken)}")
            failed = True
    finally:
        if options.keep:
            print(f"   kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    print("\nFAILED" if failed else "\nOK")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
