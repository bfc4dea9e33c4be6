"""End to end: real ``ansible-playbook`` runs, accelerator off and on alternately.

``python -m benches.e2e [--python PY]... [--repeats N] [--hosts N] [--quick] [--json FILE]``

- ``modules.yml``: 50+ distinct modules (ansible.builtin, community.general, ansible.posix,
  community.crypto) on files in a temporary directory, across 20 local aliases of this machine;
  in every environment that has the ``ansible`` collections package.
- ``secrets.yml`` (ansible-core 2.22+): a vaulted vars file of 200 values, ``register_secret``,
  ``no_log`` module options, a module that registers a secret, large outputs containing secrets.

Each run: wall time, the CPU time of the whole process tree (``RUSAGE_CHILDREN`` around it:
controller, workers, module processes) and of the controller process alone.  Results (every
task result of every host, and the printed lines) must be identical between off and on after
normalising times and temporary names.  Then one more run with the accelerator on under cProfile
(controller and workers), to show where the time goes.
"""

from __future__ import annotations

import dataclasses
import glob
import json
import os
import pstats
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from . import compare

HERE = os.path.dirname(os.path.abspath(__file__))
HOSTS = 20
REPEATS = 3


@dataclasses.dataclass
class Run:
    mode: str
    returncode: int
    wall: float
    cpu: float
    controller_cpu: float
    output: str
    results: dict | None
    stats: dict | None


def environment_of(python: str) -> dict:
    code = (
        "import json, sys\nfrom importlib import metadata\n"
        "def v(n):\n    try: return metadata.version(n)\n    except metadata.PackageNotFoundError: return None\n"
        "print(json.dumps({'python': sys.version.split()[0], 'ansible_core': v('ansible-core'), 'ansible': v('ansible'),"
        " 'collections': v('ansible') is not None}))"
    )
    out = subprocess.run([python, "-c", code], stdout=subprocess.PIPE, text=True, check=True).stdout
    return {"executable": python, "bin": os.path.dirname(python), **json.loads(out)}


def playbooks_for(env: dict) -> list[str]:
    names = []
    if env["collections"]:
        names.append("modules")
    major_minor = tuple(int(p) for p in env["ansible_core"].split(".")[:2])
    if major_minor >= (2, 22):
        names.append("secrets")
    return names


# --- inputs made once per benchmark (the same for every run) --------------------------------


def make_inputs(env: dict, inputs: str) -> None:
    os.makedirs(inputs, exist_ok=True)
    # A fixed RSA key (PKCS#1 v1.5 signatures are deterministic, so the CSR is the same each run).
    key_code = (
        "import sys\nfrom cryptography.hazmat.primitives.asymmetric import rsa\n"
        "from cryptography.hazmat.primitives import serialization as s\n"
        "k = rsa.generate_private_key(public_exponent=65537, key_size=2048)\n"
        "open(sys.argv[1], 'wb').write(k.private_bytes(s.Encoding.PEM, s.PrivateFormat.TraditionalOpenSSL, s.NoEncryption()))"
    )
    subprocess.run([env["executable"], "-c", key_code, os.path.join(inputs, "key.pem")], check=True)
    os.chmod(os.path.join(inputs, "key.pem"), 0o600)
    # A bare git repository with one commit on main.
    source, bare = os.path.join(inputs, "repo-src"), os.path.join(inputs, "repo.git")
    git_env = dict(os.environ, GIT_AUTHOR_NAME="e2e", GIT_AUTHOR_EMAIL="e2e@example.com", GIT_COMMITTER_NAME="e2e",
                   GIT_COMMITTER_EMAIL="e2e@example.com", GIT_AUTHOR_DATE="2026-01-01T00:00:00Z",
                   GIT_COMMITTER_DATE="2026-01-01T00:00:00Z")
    quiet = {"check": True, "env": git_env, "stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    subprocess.run(["git", "init", "-q", "-b", "main", source], **quiet)
    with open(os.path.join(source, "README"), "w") as handle:
        handle.write("e2e benchmark repository\n")
    subprocess.run(["git", "-C", source, "add", "README"], **quiet)
    subprocess.run(["git", "-C", source, "commit", "-q", "-m", "first"], **quiet)
    subprocess.run(["git", "clone", "-q", "--bare", source, bare], **quiet)
    if "secrets" in playbooks_for(env):
        make_vault(env, inputs)


def make_vault(env: dict, inputs: str, count: int = 200) -> None:
    """``vault.yml``: ``count`` secret values, encrypted whole with ``ansible-vault``."""
    rnd = random.Random(200)
    alphabet = "abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789"
    lines = [f'vault_secret_{i}: "{"".join(rnd.choices(alphabet, k=20 + i % 13))}"' for i in range(count)]
    path = os.path.join(inputs, "vault.yml")
    with open(path, "w") as handle:
        handle.write("---\n" + "\n".join(lines) + "\n")
    password = os.path.join(inputs, "vault-password")
    with open(password, "w") as handle:
        handle.write("e2e-vault-password-7Q2\n")
    subprocess.run([os.path.join(env["bin"], "ansible-vault"), "encrypt", "--vault-password-file", password, path],
                   check=True, env=clean_environment(), stdout=subprocess.DEVNULL)


# --- running ansible-playbook ----------------------------------------------------------------


def clean_environment(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_") and not k.startswith("E2E_")}
    env.update(ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0", PYTHONDONTWRITEBYTECODE="1")
    env.update(extra)
    return env


def one_run(env: dict, playbook: str, mode: str, work: str, inputs: str, hosts: int, profile_dir: str | None = None) -> Run:
    root = os.path.join(work, "files")  # the same path every run, so results compare as they are
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root)
    results_file, stats_file, rusage_file = (os.path.join(work, f"{n}.json") for n in ("results", "stats", "rusage"))
    for path in (results_file, stats_file, rusage_file):
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
    if mode == "on":
        environ["ANSIBLE_ACCEL_STATS"] = stats_file
        script = [os.path.join(env["bin"], "ansible-accel"), "ansible-playbook"]
    else:
        script = [os.path.join(env["bin"], "ansible-playbook")]
    wrapper = [env["executable"], os.path.join(HERE, "controller.py"), "--rusage", rusage_file]
    if profile_dir:
        wrapper += ["--profile", profile_dir]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    completed = subprocess.run([*wrapper, *script, *args], env=environ, cwd=HERE, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, errors="replace")
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    rusage = _load(rusage_file) or {}
    return Run(mode, completed.returncode, wall, cpu, rusage.get("self_cpu", 0.0), completed.stdout,
               _load(results_file), _load(stats_file) if mode == "on" else None)


def _load(path: str) -> dict | None:
    try:
        with open(path) as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return None


# --- one playbook, off and on -----------------------------------------------------------------


def profile_run(env: dict, playbook: str, work: str, inputs: str, hosts: int) -> list[str]:
    label = f"{playbook}.yml on ansible-core {env['ansible_core']}"
    print(f"   profiling {label}, accelerator on, {hosts} hosts (cProfile: controller and workers) ...", flush=True)
    profile_dir = os.path.join(work, f"profile-{playbook}")
    shutil.rmtree(profile_dir, ignore_errors=True)
    os.makedirs(profile_dir)
    run = one_run(env, playbook, "on", work, inputs, hosts, profile_dir)
    return [f"{hosts} hosts, {run.wall:.1f}s wall, {run.cpu:.1f}s tree CPU under the profiler"] + profile_lines(profile_dir)


def bench_playbook(env: dict, playbook: str, work: str, inputs: str, hosts: int, repeats: int, profile_hosts: int) -> dict:
    label = f"{playbook}.yml on ansible-core {env['ansible_core']}"
    runs: dict[str, list[Run]] = {"off": [], "on": []}
    problems: list[str] = []
    # off/on, then on/off, ...: neither mode always runs on a warmer machine.
    order = [("off", "on") if i % 2 == 0 else ("on", "off") for i in range(repeats)]
    total = 2 * repeats
    step = 0
    for pair in order:
        for mode in pair:
            step += 1
            print(f"   [{step}/{total}] {label}, accelerator {mode} ...", end="", flush=True)
            run = one_run(env, playbook, mode, work, inputs, hosts)
            print(f" {run.wall:.1f}s wall, {run.cpu:.1f}s CPU (controller process {run.controller_cpu:.1f}s)"
                  f"{'' if run.returncode == 0 else f', EXIT STATUS {run.returncode}'}", flush=True)
            if run.returncode != 0:
                fatal = [line[:300] for line in run.output.splitlines() if line.startswith(("fatal:", "failed:", "ERROR"))]
                problems.append(f"accelerator {mode}: exit status {run.returncode}: {fatal[:4] or run.output[-600:]}")
            runs[mode].append(run)
    reference = runs["off"][0]
    tasks = sum(len(v) for v in (reference.results or {}).get("hosts", {}).values())
    actions = sorted({e["action"] for v in (reference.results or {}).get("hosts", {}).values() for e in v})
    for index, run in enumerate(runs["off"][1:], 2):
        diffs = compare.differences(reference.results, reference.output, run.results, run.output)
        if diffs:  # not the accelerator's doing, but it makes the comparison meaningless
            problems += [f"off run 1 vs off run {index} (the playbook is not deterministic): {d}" for d in diffs]
    for index, run in enumerate(runs["on"], 1):
        diffs = compare.differences(reference.results, reference.output, run.results, run.output)
        problems += [f"off vs on run {index}: {d}" for d in diffs]
        if not (run.stats or {}).get("installed"):
            problems.append(f"on run {index}: the accelerator was not installed ({(run.stats or {}).get('reason')})")
    counters = _counters((runs["on"][0].stats or {}) if runs["on"] else {})
    result = {
        "playbook": f"{playbook}.yml",
        "ansible_core": env["ansible_core"],
        "python": env["python"],
        "hosts": hosts,
        "tasks": tasks // max(hosts, 1),
        "task_results": tasks,
        "distinct_actions": len(actions),
        "actions": actions,
        "off": _summary(runs["off"]),
        "on": _summary(runs["on"]),
        "counters": counters,
        "problems": problems,
    }
    if profile_hosts:
        result["profile"] = profile_run(env, playbook, work, inputs, profile_hosts)
    return result


def _summary(runs: list[Run]) -> dict:
    walls, cpus, controller = [r.wall for r in runs], [r.cpu for r in runs], [r.controller_cpu for r in runs]
    return {"wall": walls, "cpu": cpus, "controller_cpu": controller, "wall_median": statistics.median(walls),
            "cpu_median": statistics.median(cpus), "controller_cpu_median": statistics.median(controller)}


def _counters(stats: dict) -> dict:
    paths = (stats.get("run") or {}).get("paths", {})
    return {path: {"native": info.get("native", 0), "fallback": sum((info.get("fallback") or {}).values())}
            for path, info in paths.items()}


def _readable(path: str) -> bool:
    try:
        pstats.Stats(path)
    except Exception:  # noqa: BLE001 - a torn or empty profile is left out
        return False
    return True


def profile_lines(directory: str, top: int = 18) -> list[str]:
    """The top functions by own time over the controller's and every worker's profile."""
    files = [f for f in sorted(glob.glob(os.path.join(directory, "*.prof"))) if _readable(f)]
    if not files:
        return ["(no profile written)"]
    controller = [f for f in files if f.endswith("controller.prof")]
    workers = [f for f in files if not f.endswith("controller.prof")]
    lines = []
    for label, group in (("controller process", controller), (f"{len(workers)} worker processes", workers)):
        if group:
            stats = pstats.Stats(*group)
            lines.append(f"{label}: {stats.total_tt:.1f}s CPU profiled")
    stats = pstats.Stats(*files)
    entries = sorted(stats.stats.items(), key=lambda item: item[1][2], reverse=True)[:top]
    lines.append(f"{'own s':>7} {'cum s':>7} {'calls':>9}  function (CPU seconds, all processes)")
    for (filename, line, name), (_, calls, own, cumulative, _) in entries:
        where = filename.split("site-packages/")[-1] if "site-packages/" in filename else filename
        lines.append(f"{own:>7.2f} {cumulative:>7.2f} {calls:>9}  {where}:{line}({name})")
    return lines


# --- entry points ----------------------------------------------------------------------------


def run_for(pythons: list[str], quick: bool = False, repeats: int | None = None, hosts: int | None = None,
            profile_hosts: int = 5, keep: bool = False, profile_only: bool = False, only: list[str] | None = None) -> dict:
    repeats = repeats or (1 if quick else REPEATS)
    hosts = hosts or (2 if quick else HOSTS)
    report = {"repeats": repeats, "hosts": hosts, "runs": []}
    for python in pythons:
        env = environment_of(python)
        names = [n for n in playbooks_for(env) if not only or n in only]
        if not names:
            print(f"== e2e: nothing to run on ansible-core {env['ansible_core']} (no collections, before 2.22)")
            continue
        work = tempfile.mkdtemp(prefix="ansible-accel-e2e-")
        try:
            inputs = os.path.join(work, "inputs")
            make_inputs(env, inputs)
            for name in names:
                print(f"== e2e: {name}.yml on ansible-core {env['ansible_core']} (Python {env['python']}), "
                      f"{hosts} hosts, {repeats} runs off and on", flush=True)
                if profile_only:
                    lines = profile_run(env, name, work, inputs, profile_hosts or 2)
                    report.setdefault("profiles", []).append({"playbook": f"{name}.yml", "ansible_core": env["ansible_core"], "profile": lines})
                    for line in lines:
                        print("   " + line)
                    continue
                report["runs"].append(bench_playbook(env, name, work, inputs, hosts, repeats, 0 if quick else profile_hosts))
        finally:
            if keep:
                print(f"   kept {work}")
            else:
                shutil.rmtree(work, ignore_errors=True)
    return report


def main(argv: list[str] | None = None) -> int:
    import argparse

    from .. import report as report_module

    parser = argparse.ArgumentParser(prog="python -m benches.e2e", description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", action="append", default=[], help="interpreter of a venv with ansible and ansible-accel (repeatable)")
    parser.add_argument("--repeats", type=int, help=f"runs per mode (default {REPEATS}; --quick 1)")
    parser.add_argument("--hosts", type=int, help=f"host aliases (default {HOSTS}; --quick 2)")
    parser.add_argument("--quick", action="store_true", help="2 hosts, 1 run per mode, no profile (a smoke test)")
    parser.add_argument("--profile-hosts", type=int, default=5, help="hosts in the cProfile run (0: no profile run)")
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    parser.add_argument("--profile-only", action="store_true", help="only the cProfile run (--profile-hosts hosts)")
    parser.add_argument("--playbook", action="append", choices=("modules", "secrets"), help="only these playbooks")
    parser.add_argument("--json", help="write the report as JSON")
    options = parser.parse_args(argv)
    result = run_for(options.python or [sys.executable], options.quick, options.repeats, options.hosts,
                     options.profile_hosts, options.keep, options.profile_only, options.playbook)
    print()
    for line in report_module.e2e_text(result):
        print(line)
    failed = False
    for run in result["runs"]:
        print(f"\n{run['playbook']} on {run['ansible_core']}: {run['hosts']} hosts x {run['tasks']} task results, "
              f"{run['distinct_actions']} distinct actions; native calls: "
              + ", ".join(f"{p} {c['native']} (fallback {c['fallback']})" for p, c in run["counters"].items()))
        for line in run.get("profile", []):
            print("   " + line)
        for problem in run["problems"]:
            print(f"   PROBLEM: {problem}")
            failed = True
    if options.json:
        with open(options.json, "w") as handle:
            json.dump(result, handle, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
