"""One measured ``ansible-playbook`` run in one mode, and the environment each mode runs in.

Modes: ``off`` (plain ``ansible-playbook``), ``on`` (``ansible-accel ansible-playbook`` with the
warm runner switched off, ``ANSIBLE_ACCEL_RUNNER=0``), ``bytecode`` (the same with
``ANSIBLE_ACCEL_BYTECODE=1``), ``runner`` (``ansible-accel ansible-playbook`` as it comes: the
runner on), ``mitogen`` (plain ``ansible-playbook`` with Mitogen's ``mitogen_linear`` strategy).

A run's CPU is that of every process it started (``tree.py``): the controller process, the
workers it forked and what they waited for (the module processes), and the processes that
outlived the one that started them and were reaped by the benchmark: the warm runners with the
modules they forked, and any other (an async task's background job detaches itself).
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import os
import resource
import shutil
import subprocess
import time

from . import tree

HERE = os.path.dirname(os.path.abspath(__file__))
# Mitogen is measured on this ansible-core only (the release the 3.12 environment carries).
MITOGEN_CORE = (2, 21)


@dataclasses.dataclass
class Run:
    mode: str
    started: str
    returncode: int
    wall: float
    cpu: float
    controller_cpu: float
    workers_cpu: float
    modules_cpu: float
    runners_cpu: float
    other_cpu: float
    settle: float
    left_behind: list[str]
    outlived: dict[str, list]  # the processes reaped by the benchmark, by program: [count, CPU]
    cgroup_cpu: float | None
    load_before: list[float]
    load_after: list[float]
    output: str
    results: dict | None
    stats: dict | None

    def record(self) -> dict:
        """What the JSON keeps of a run."""
        return {k: getattr(self, k) for k in ("mode", "started", "returncode", "wall", "cpu", "controller_cpu",
                                               "workers_cpu", "modules_cpu", "runners_cpu", "other_cpu", "settle",
                                               "left_behind", "outlived", "cgroup_cpu", "load_before", "load_after")}


def environment_of(python: str) -> dict:
    """The environment of ``python``: its versions, and Mitogen's strategy plugins if importable."""
    code = (
        "import json, os, sys\nfrom importlib import metadata\n"
        "def v(n):\n    try: return metadata.version(n)\n    except metadata.PackageNotFoundError: return None\n"
        "try:\n"
        "    import ansible_mitogen, ansible_mitogen.strategy\n"
        "    mitogen = {'version': v('mitogen'),"
        " 'strategy_plugins': os.path.join(os.path.dirname(ansible_mitogen.__file__), 'plugins', 'strategy')}\n"
        "except Exception as ex:\n"
        "    mitogen = {'reason': f'Mitogen does not import: {type(ex).__name__}: {ex}'}\n"
        "print(json.dumps({'python': sys.version.split()[0], 'ansible_core': v('ansible-core'), 'ansible': v('ansible'),"
        " 'collections': v('ansible') is not None, 'mitogen': mitogen}))"
    )
    out = subprocess.run([python, "-c", code], stdout=subprocess.PIPE, text=True, check=True).stdout
    env = {"executable": python, "bin": os.path.dirname(python), **json.loads(out)}
    core = tuple(int(p) for p in env["ansible_core"].split(".")[:2])
    if core != MITOGEN_CORE:
        env["mitogen"] = {"reason": f"Mitogen is measured with ansible-core {'.'.join(map(str, MITOGEN_CORE))} only"}
    return env


def unavailable(env: dict, mode: str) -> str | None:
    """Why ``mode`` cannot run in ``env``, or None."""
    if mode == "mitogen":
        return env["mitogen"].get("reason")
    return None


def clean_environment(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_") and not k.startswith("E2E_")}
    env.update(ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0", PYTHONDONTWRITEBYTECODE="1")
    env.update(extra)
    return env


def command_for(env: dict, mode: str, environ: dict[str, str], work: str, stats_file: str) -> list[str]:
    """The command of ``mode``; sets its variables in ``environ``."""
    if mode in ("off", "mitogen"):
        if mode == "mitogen":
            environ["ANSIBLE_STRATEGY_PLUGINS"] = env["mitogen"]["strategy_plugins"]
            environ["ANSIBLE_STRATEGY"] = "mitogen_linear"
        return [os.path.join(env["bin"], "ansible-playbook")]
    environ["ANSIBLE_ACCEL_STATS"] = stats_file
    if mode in ("on", "bytecode"):
        environ["ANSIBLE_ACCEL_RUNNER"] = "0"
    if mode == "bytecode":
        environ["ANSIBLE_ACCEL_BYTECODE"] = "1"
        # The benchmark's own cache (kept across its runs), not the user's.
        environ["ANSIBLE_ACCEL_BYTECODE_CACHE"] = os.path.join(work, "bytecode-cache")
    return [os.path.join(env["bin"], "ansible-accel"), "ansible-playbook"]


def accelerated(mode: str) -> bool:
    return mode in ("on", "bytecode", "runner")


def one_run(env: dict, playbook: str, mode: str, work: str, inputs: str, hosts: int, profile_dir: str | None = None) -> Run:
    root = os.path.join(work, "files")  # the same path every run, so results compare as they are
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root)
    results_file, stats_file, rusage_file = (os.path.join(work, f"{n}.json") for n in ("results", "stats", "rusage"))
    workers_file = os.path.join(work, "workers.jsonl")
    for path in (results_file, stats_file, rusage_file, workers_file):
        if os.path.exists(path):
            os.remove(path)
    environ = clean_environment(
        ANSIBLE_CONFIG=os.path.join(HERE, "ansible.cfg"),
        ANSIBLE_CALLBACK_PLUGINS=os.path.join(HERE, "callback_plugins"),
        ANSIBLE_CALLBACKS_ENABLED="e2e_results",
        ANSIBLE_LIBRARY=os.path.join(HERE, "library"),
        ANSIBLE_LOCAL_TEMP=os.path.join(work, "local-tmp"),
        E2E_RESULTS_FILE=results_file,
    )
    args = ["-i", os.path.join(HERE, "inventory.ini"), "--limit", ",".join(f"host{i:02d}" for i in range(1, hosts + 1)),
            os.path.join(HERE, f"{playbook}.yml"), "-e", f"e2e_root={root}", "-e", f"e2e_inputs={inputs}"]
    if playbook == "secrets":
        args += ["--vault-password-file", os.path.join(inputs, "vault-password"), "-v"]
    script = command_for(env, mode, environ, work, stats_file)
    wrapper = [env["executable"], os.path.join(HERE, "controller.py"), "--rusage", rusage_file, "--workers", workers_file]
    if profile_dir:
        wrapper += ["--profile", profile_dir]
    load_before = list(os.getloadavg())
    started_at = datetime.datetime.now(datetime.timezone.utc).strftime("%H:%M:%S")
    with tree.Tree() as processes:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        completed = subprocess.run([*wrapper, *script, *args], env=environ, cwd=HERE, stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, text=True, errors="replace")
        wall = time.perf_counter() - started
        outcome = processes.settle()
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    load_after = list(os.getloadavg())
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    rusage = _load(rusage_file) or {}
    workers = _worker_lines(workers_file)
    workers_cpu = sum(w["self_cpu"] for w in workers)
    # The controller's children are its workers and what they waited for (the module processes).
    modules_cpu = max(rusage.get("children_cpu", 0.0) - workers_cpu, 0.0)
    return Run(mode, started_at, completed.returncode, wall, cpu, rusage.get("self_cpu", 0.0), workers_cpu, modules_cpu,
               outcome.cpu("runner"), outcome.cpu("other"), outcome.settle, outcome.left_behind, outcome.programs(),
               outcome.cgroup_cpu,
               load_before, load_after, completed.stdout, _load(results_file),
               _load(stats_file) if accelerated(mode) else None)


def _load(path: str) -> dict | None:
    try:
        with open(path) as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return None


def _worker_lines(path: str) -> list[dict]:
    try:
        with open(path) as handle:
            return [json.loads(line) for line in handle if line.strip()]
    except (OSError, ValueError):
        return []


def describe(run: Run) -> str:
    outlived = ""
    if run.runners_cpu or run.other_cpu:
        outlived = f", runners {run.runners_cpu:.1f}s, other {run.other_cpu:.1f}s"
    cgroup = "" if run.cgroup_cpu is None else f", cgroup {run.cgroup_cpu:.1f}s"
    return (f"{run.wall:.1f}s wall, {run.cpu:.1f}s CPU (controller {run.controller_cpu:.1f}s, workers "
            f"{run.workers_cpu:.1f}s, modules {run.modules_cpu:.1f}s{outlived}){cgroup}, load {run.load_before[0]:.2f} -> "
            f"{run.load_after[0]:.2f}" + ("" if run.returncode == 0 else f", EXIT STATUS {run.returncode}")
            + (f", {len(run.left_behind)} PROCESSES LEFT BEHIND" if run.left_behind else ""))
