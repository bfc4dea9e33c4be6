"""End to end: real ``ansible-playbook`` runs, accelerator off and on (plain, bytecode, warm runner), and Mitogen.

``python -m benches.e2e [--python PY]... [--repeats N] [--hosts N] [--quick] [--json FILE] [--markdown FILE]``

- ``modules.yml``: 50+ distinct modules (ansible.builtin, community.general, ansible.posix,
  community.crypto) on files in a temporary directory, across 20 local aliases of this machine;
  in every environment that has the ``ansible`` collections package.
- ``secrets.yml`` (ansible-core 2.22+): a vaulted vars file of 200 values, ``register_secret``,
  ``no_log`` module options, a module that registers a secret, large outputs containing secrets.

Modes (``playbook_run.py``): ``off`` (plain ``ansible-playbook``), ``on`` (``ansible-accel
ansible-playbook``, the warm runner off), ``bytecode`` (the same with ``ANSIBLE_ACCEL_BYTECODE=1``),
``runner`` (``ansible-accel ansible-playbook`` as it comes, the warm runner on) and ``mitogen``
(plain ``ansible-playbook`` with Mitogen's ``mitogen_linear`` strategy; where Mitogen imports and
on the ansible-core it is measured with, else skipped with the reason).  First, per playbook,
one profiled run with the accelerator on (where the time goes: the controller sampled per
thread, the workers under cProfile; ``--profile-only`` for just that) and one unmeasured
bytecode run on one host (fills the bytecode cache, as any earlier run would).  Then each
repeat runs every playbook in every mode, the mode order rotating between repeats, so a run cut
short still leaves whole repeats.  Each run: wall time, the CPU time of every process it started
(``RUSAGE_CHILDREN`` around it, the benchmark being their subreaper: ``tree.py``) split into the
controller process, its workers, the module processes they waited for (``controller.py``), the
warm runners with the modules they forked, and any other process that outlived its parent; and
the load average before and after (the machine may be shared).  A run that leaves a process
alive 30 s after ``ansible-playbook`` ended fails.  Every task result of every host and the
printed lines must be identical to the first "off" run after normalising times and temporary
names; a Mitogen run's differences are listed, not failures.  The JSON and markdown reports are
rewritten after every run.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import random
import shutil
import subprocess
import sys
import tempfile
import time

from . import compare, summary, tree
from .playbook_run import Run, accelerated, clean_environment, describe, environment_of, one_run, unavailable

HOSTS = 20
REPEATS = 3


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


# --- one playbook: its runs in every mode, checked against the first "off" run -------------------


class Playbook:
    """One playbook on one ansible-core: its work directory, runs so far and report entry."""

    def __init__(self, env: dict, name: str, work: str, inputs: str, hosts: int, modes: tuple[str, ...]):
        self.env, self.name, self.work, self.inputs, self.hosts = env, name, work, inputs, hosts
        self.skipped = {m: reason for m in modes if (reason := unavailable(env, m))}
        self.modes = tuple(m for m in modes if m not in self.skipped)
        self.label = f"{name}.yml on ansible-core {env['ansible_core']}"
        self.runs: list[Run] = []
        self.problems: list[str] = []
        self.reported: dict[str, list[str]] = {}  # a Mitogen run's difference -> the runs that showed it
        self.profile: list[str] = []
        self.profile_mode: str | None = None
        self.reference: Run | None = None
        self.first_stats: dict[str, dict] = {}  # the accelerator's counters in the first run of each mode

    def run(self, mode: str, step: str) -> None:
        print(f"   [{step}] {self.label}, {summary.LABELS[mode]} ...", end="", flush=True)
        run = one_run(self.env, self.name, mode, self.work, self.inputs, self.hosts)
        print(" " + describe(run), flush=True)
        self.check(run)
        run.output = run.output if self.reference is None and mode == "off" else ""  # keep only the reference's
        if accelerated(run.mode) and run.mode not in self.first_stats:
            self.first_stats[run.mode] = run.stats or {}
        if self.reference is None and mode == "off":
            self.reference = run
        run.results = run.results if run is self.reference else None
        run.stats = None
        self.runs.append(run)

    def check(self, run: Run) -> None:
        index = sum(1 for r in self.runs if r.mode == run.mode) + 1
        name = f"{summary.LABELS[run.mode]} run {index}"
        # Mitogen is another implementation: what it does differently is reported, not a failure.
        found: list[str] = []
        if run.returncode != 0:
            fatal = [line[:300] for line in run.output.splitlines() if line.startswith(("fatal:", "failed:", "ERROR"))]
            found.append(f"exit status {run.returncode}: {fatal[:4] or run.output[-600:]}")
        if run.left_behind:
            found.append(f"{len(run.left_behind)} processes still running {tree.SETTLE_SECONDS:.0f}s after "
                         f"ansible-playbook ended (killed): {run.left_behind[:4]}")
            print(f"   PROCESSES LEFT BEHIND by {self.label}, {name}: {run.left_behind}", flush=True)
        if accelerated(run.mode):
            found += self.check_counters(run.mode, run.stats or {})
        reference = self.reference
        if reference is None:
            if run.mode != "off":
                found.append("ran before any off run, compared with nothing")
        elif run.mode == "mitogen":
            found += [f"off run 1 vs mitogen: {d}" for d in compare.differences_by_task(
                reference.results, reference.output, run.results, run.output, labels=("off", "mitogen"))]
        else:
            diffs = compare.differences(reference.results, reference.output, run.results, run.output,
                                        labels=("off run 1", name))
            what = "the playbook is not deterministic" if run.mode == "off" else "the accelerator changed a result"
            found += [f"off run 1 vs {name} ({what}): {d}" for d in diffs]
        if run.mode == "mitogen":
            for difference in found:
                self.reported.setdefault(difference, []).append(name)
        else:
            self.problems += [f if f.startswith("off run 1 vs") else f"{name}: {f}" for f in found]

    @staticmethod
    def check_counters(mode: str, stats: dict) -> list[str]:
        """The accelerator was on, and used bytecode payloads and the warm runner as ``mode`` says."""
        if not stats.get("installed"):
            return [f"the accelerator was not installed ({stats.get('reason')})"]
        paths = (stats.get("run") or {}).get("paths", {})
        found = []
        payloads = (paths.get("bytecode") or {}).get("native", 0)
        if (mode == "bytecode") != (payloads > 0):
            found.append(f"{payloads} payloads built with bytecode")
        warm = (paths.get("runner") or {}).get("native", 0)
        if (mode == "runner") != (warm > 0):
            found.append(f"{warm} modules run by a warm runner")
        return found

    def entry(self) -> dict:
        reference = self.reference.results if self.reference else {}
        hosts_results = (reference or {}).get("hosts", {})
        tasks = sum(len(v) for v in hosts_results.values())
        actions = sorted({e["action"] for v in hosts_results.values() for e in v})
        result = {
            "playbook": f"{self.name}.yml", "ansible_core": self.env["ansible_core"], "python": self.env["python"],
            "hosts": self.hosts, "tasks": tasks // max(self.hosts, 1), "task_results": tasks,
            "distinct_actions": len(actions), "actions": actions, "modes": list(self.modes), "skipped": self.skipped,
            "mitogen_version": self.env["mitogen"].get("version"), "sequence": [r.record() for r in self.runs],
        }
        for mode in self.modes:
            result[mode] = summary.summarise([r.record() for r in self.runs if r.mode == mode])
        result["ratios"] = summary.ratios(result)
        result["ratios_mitogen"] = summary.ratios(result, "mitogen")
        first = self.first_stats
        result["counters_by_mode"] = {mode: _counters(stats) for mode, stats in first.items()}
        result["counters"] = result["counters_by_mode"].get("on", {})  # what benches/report.py shows
        result["bytecode_events"] = ((first.get("bytecode") or {}).get("run") or {}).get("paths", {}).get("bytecode", {}).get("events", {})
        result["profile"] = self.profile
        result["profile_mode"] = self.profile_mode
        result["problems"] = self.problems
        result["reported"] = [{"difference": d, "runs": runs} for d, runs in self.reported.items()]
        return result

    def profile_run(self, hosts: int) -> None:
        # The accelerator as it comes (the warm runner on) where that mode is measured.
        mode = "runner" if "runner" in self.modes else "on"
        print(f"   profiling {self.label}, {summary.LABELS[mode]}, {hosts} hosts (controller sampled, workers under cProfile) ...",
              end="", flush=True)
        profile_dir = os.path.join(self.work, f"profile-{self.name}")
        shutil.rmtree(profile_dir, ignore_errors=True)
        os.makedirs(profile_dir)
        run = one_run(self.env, self.name, mode, self.work, self.inputs, hosts, profile_dir)
        print(" " + describe(run), flush=True)
        self.profile_mode = mode
        self.profile = [f"{hosts} hosts under the profiler: {describe(run)}", ""] + summary.profile_lines(profile_dir)
        if run.left_behind:
            self.problems.append(f"profile run: {len(run.left_behind)} processes left behind (killed): {run.left_behind[:4]}")

    def warm_up(self) -> None:
        print(f"   warm-up {self.label}, on+bytecode, 1 host (fills the bytecode cache; not measured) ...", end="", flush=True)
        run = one_run(self.env, self.name, "bytecode", self.work, self.inputs, 1)
        print(" " + describe(run), flush=True)
        if run.returncode != 0:
            self.problems.append(f"warm-up run: exit status {run.returncode}: {run.output[-600:]}")
        if run.left_behind:
            self.problems.append(f"warm-up run: {len(run.left_behind)} processes left behind (killed): {run.left_behind[:4]}")


def _counters(stats: dict) -> dict:
    paths = (stats.get("run") or {}).get("paths", {})
    return {path: {"native": info.get("native", 0), "fallback": sum((info.get("fallback") or {}).values())}
            for path, info in paths.items()}


def rotated(modes: tuple[str, ...], repeat: int) -> list[str]:
    """Repeat r starts with mode r: over len(modes) repeats each mode runs once in each place."""
    shift = repeat % len(modes)
    return list(modes[shift:] + modes[:shift])


def run_order(modes: tuple[str, ...], repeat: int) -> list[str]:
    """``rotated``, but the very first run is "off": the reference every other run compares with."""
    order = rotated(modes, repeat)
    if "off" in modes and repeat == 0:
        order.remove("off")
        order.insert(0, "off")
    return order


# --- entry points ----------------------------------------------------------------------------


def machine() -> dict:
    model = None
    try:
        with open("/proc/cpuinfo") as handle:
            model = next((line.split(":", 1)[1].strip() for line in handle if line.startswith("model name")), None)
    except OSError:
        pass
    return {"cpus": os.cpu_count(), "cpu_model": model or platform.machine(), "platform": platform.platform(),
            "load_average_start": list(os.getloadavg())}


def accel_versions(pythons: list[str]) -> str | None:
    """The ansible-accel version installed beside each interpreter, as one text ("0.1.0")."""
    code = "from importlib import metadata\ntry: print(metadata.version('ansible-accel'))\nexcept Exception: print()"
    found = []
    for python in pythons:
        version = subprocess.run([python, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                 text=True).stdout.strip()
        if version and version not in found:
            found.append(version)
    return ", ".join(found) or None


def run_for(pythons: list[str], quick: bool = False, repeats: int | None = None, hosts: int | None = None,
            profile_hosts: int = 5, keep: bool = False, only: list[str] | None = None,
            modes: tuple[str, ...] = summary.MODES, outputs: tuple[str | None, str | None] = (None, None),
            note: str | None = None, profile_only: bool = False) -> dict:
    repeats = repeats or (1 if quick else REPEATS)
    hosts = hosts or (2 if quick else HOSTS)
    began = time.perf_counter()
    report = {"started": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
              "ansible_accel": accel_versions(pythons), "note": note, "quick": quick, "repeats": repeats, "hosts": hosts,
              "modes": list(modes), "machine": machine(), "finished": False, "runs": []}
    playbooks: list[Playbook] = []
    works: list[str] = []

    def publish() -> None:
        report["runs"] = [p.entry() for p in playbooks]
        report["seconds"] = time.perf_counter() - began
        report["machine"]["load_average_now"] = list(os.getloadavg())
        write_outputs(report, *outputs)

    try:
        for python in pythons:
            env = environment_of(python)
            names = [n for n in playbooks_for(env) if not only or n in only]
            if not names:
                print(f"== e2e: nothing to run on ansible-core {env['ansible_core']} (no collections, before 2.22)")
                continue
            work = tempfile.mkdtemp(prefix="ansible-accel-e2e-")
            works.append(work)
            inputs = os.path.join(work, "inputs")
            make_inputs(env, inputs)
            for name in names:
                # Each playbook its own work directory: its results file paths stay the same across its runs.
                playbook_work = os.path.join(work, name)
                os.makedirs(playbook_work)
                playbooks.append(Playbook(env, name, playbook_work, inputs, hosts, modes))
        print(f"== e2e: {', '.join(p.label for p in playbooks)}; {hosts} hosts, {repeats} repeats of "
              f"{', '.join(summary.LABELS[m] for m in modes)}", flush=True)
        for playbook in playbooks:
            for mode, reason in playbook.skipped.items():
                print(f"   {playbook.label}: no {summary.LABELS[mode]} runs: {reason}")
        usage, why = tree.cgroup_usage_file()
        report["cgroup"] = {"file": usage, "note": why}
        print(f"   cgroup CPU: {'read from ' + why if usage else 'not read: ' + why}", flush=True)
        for playbook in playbooks:
            if profile_hosts and (profile_only or not quick):
                playbook.profile_run(profile_hosts)
            if "bytecode" in playbook.modes and not profile_only:
                playbook.warm_up()
            publish()
        if profile_only:
            repeats = report["repeats"] = 0
        total = repeats * sum(len(p.modes) for p in playbooks)
        step = 0
        for repeat in range(repeats):
            for playbook in playbooks:
                for mode in run_order(playbook.modes, repeat):
                    step += 1
                    playbook.run(mode, f"{step}/{total}, repeat {repeat + 1}")
                    publish()
        report["finished"] = True
        publish()
    finally:
        for work in works:
            if keep:
                print(f"   kept {work}")
            else:
                shutil.rmtree(work, ignore_errors=True)
    return report


def write_outputs(report: dict, json_path: str | None, markdown_path: str | None) -> None:
    for path, text in ((json_path, lambda: json.dumps(report, indent=1)), (markdown_path, lambda: summary.markdown(report))):
        if path:
            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
            with open(path + ".part", "w") as handle:
                handle.write(text())
            os.replace(path + ".part", path)


def render(paths: list[str], profiles: str | None, json_path: str | None, markdown_path: str | None,
           note: str | None = None) -> int:
    """One report from earlier ones: a playbook in a later report replaces the same playbook
    (and ansible-core) of an earlier one; ``profiles`` replaces the profiles."""
    reports = []
    for path in paths:
        with open(path) as handle:
            reports.append(json.load(handle))
    report = reports[0]
    if len(reports) > 1:
        report["parts"] = [_part(r) for r in reports]
        for later in reports[1:]:
            for entry in later["runs"]:
                key = (entry["playbook"], entry["ansible_core"])
                report["runs"] = [e for e in report["runs"] if (e["playbook"], e["ansible_core"]) != key] + [entry]
        report["finished"] = all(r.get("finished") for r in reports)
    if note:
        report["note"] = note
    if profiles:
        with open(profiles) as handle:
            later = {(p["playbook"], p["ansible_core"]): p for p in json.load(handle)["runs"]}
        for playbook in report["runs"]:
            found = later.get((playbook["playbook"], playbook["ansible_core"]))
            if found and found.get("profile"):
                playbook["profile"] = found["profile"]
                playbook["problems"] += [f"profile run: {p}" for p in found["problems"]]
    write_outputs(report, json_path, markdown_path)
    return 0


def _part(report: dict) -> str:
    runs = sum(len(p["sequence"]) for p in report["runs"])
    planned = report["repeats"] * sum(len(p.get("modes", report["modes"])) for p in report["runs"])
    accel = f"ansible-accel {report['ansible_accel']}" if report.get("ansible_accel") else "ansible-accel"
    return (f"run of {report['started']} ({accel}): {', '.join(p['playbook'] for p in report['runs'])}, "
            f"{runs} of {planned} planned runs" + ("" if report.get("finished") else ", stopped before the end"))


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m benches.e2e", description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", action="append", default=[], help="interpreter of a venv with ansible and ansible-accel (repeatable)")
    parser.add_argument("--repeats", type=int, help=f"repeats, each running every mode once (default {REPEATS}; --quick 1)")
    parser.add_argument("--hosts", type=int, help=f"host aliases (default {HOSTS}; --quick 2)")
    parser.add_argument("--quick", action="store_true", help="2 hosts, 1 repeat, no profile (a smoke test)")
    parser.add_argument("--profile-hosts", type=int, default=5, help="hosts in the cProfile run (0: no profile run)")
    parser.add_argument("--mode", action="append", choices=summary.MODES, help="only these modes (default: all)")
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    parser.add_argument("--playbook", action="append", choices=("modules", "secrets"), help="only these playbooks")
    parser.add_argument("--json", help="write the report as JSON (rewritten after every run)")
    parser.add_argument("--markdown", help="write the report as markdown (rewritten after every run)")
    parser.add_argument("--note", help="a paragraph for the top of the markdown report (what was measured, if unusual)")
    parser.add_argument("--profile-only", action="store_true", help="only the profile runs (--profile-hosts hosts)")
    parser.add_argument("--render", metavar="JSON", action="append",
                        help="run nothing: write --markdown (and --json) from this report (repeatable: later playbooks replace earlier)")
    parser.add_argument("--profiles", metavar="JSON", help="with --render: take the profiles from this --profile-only report")
    options = parser.parse_args(argv)
    if options.render:
        return render(options.render, options.profiles, options.json, options.markdown, options.note)
    modes = tuple(m for m in summary.MODES if not options.mode or m in options.mode)
    result = run_for(options.python or [sys.executable], options.quick, options.repeats, options.hosts,
                     options.profile_hosts, options.keep, options.playbook, modes, (options.json, options.markdown),
                     options.note, options.profile_only)
    print()
    for line in summary.text(result):
        print(line)
    failed = False
    for run in result["runs"]:
        print(f"\n{run['playbook']} on {run['ansible_core']}: {run['hosts']} hosts x {run['tasks']} tasks, "
              f"{run['distinct_actions']} distinct actions")
        for mode, counters in run["counters_by_mode"].items():
            print(f"   native calls, first {summary.LABELS[mode]} run: "
                  + ", ".join(f"{p} {c['native']} (fallback {c['fallback']})" for p, c in counters.items()))
        if run["bytecode_events"]:
            print("   bytecode events: " + ", ".join(f"{k}: {v}" for k, v in run["bytecode_events"].items()))
        for line in run.get("profile", []):
            print("   " + line)
        for mode, reason in run.get("skipped", {}).items():
            print(f"   no {summary.LABELS[mode]} runs: {reason}")
        for reported in run.get("reported", []):
            print(f"   mitogen differs ({', '.join(reported['runs'])}): {reported['difference']}")
        for problem in run["problems"]:
            print(f"   PROBLEM: {problem}")
            failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
