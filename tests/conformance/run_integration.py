"""Run ansible-core's own integration targets, accelerator off and on.

Usage: ``.venv/py3XX/bin/python tests/conformance/run_integration.py [TARGET...] [--cache DIR]``

The sdist of the ansible-core installed in this interpreter is unpacked (the conformance
runner's download and cache) and copied into an ansible-core source tree that ansible-test
can test: the copy gains the ``bin/`` entry points a git checkout has.  Each posix target
(``test/integration/targets/NAME``; without names, ``TARGETS``) runs twice through that
tree's own ``ansible-test integration --local --python X.Y NAME``, with this interpreter's
directory first on ``PATH``: once with the accelerator off, once on.  (An installed
ansible-test refuses to test an ansible-core source tree; the tree's own one runs its own
``lib/ansible``, the same release as the installed one.)

ansible-test drops the caller's environment (only ``PATH``, ``HOME`` and a few more pass)
and gives every command a target starts ``PYTHONPATH=<tree>/lib``, so the accelerator is
switched on through ``<tree>/lib/sitecustomize.py`` (``integration_sitecustomize.py``): in
each process started as an ansible command it records the process and, when on, gives it
its own ``ANSIBLE_ACCEL_STATS`` file and switches the accelerator on.  ``--route install``
(the default) calls ``ansible_accel.install()`` at the start of every ansible command, as the
``ansible-accel`` wrapper does; ``--route callback`` instead enables the callback plugin
with the environment variables ``ansible-accel config`` prints, added to the lists already set
(an ansible.cfg's ``callbacks_enabled`` would not do: ansible-test sets
``ANSIBLE_CALLBACKS_ENABLED=junit`` for every target).  The records and stats prove which
processes ran with it.

``--module-side`` checks the paths that run inside the modules (docs/module-side.md): in the
"on" run the modules the runner path starts validate their arguments and scrub or mask their
``no_log`` values natively.  Each target that passes must then show, in its stats files'
``module_side`` counts, native argument validations and native ``no_log`` scrubbing (ansible-core
2.19-2.21) or masking (2.22) inside the modules; the table adds those counts.  Without names it
runs ``MODULE_SIDE_TARGETS``.  ansible-core's ``module_utils`` target is not among them: it is
destructive (it adds a user and installs passlib into the interpreter's environment with pip).

Exit status 1 when a target that passes off does not pass on, or when "on" did not switch the
accelerator on in the target's ansible commands (or, with ``--module-side``, lacks module-side
native counts); targets that fail off are reported only.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import glob
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from importlib import metadata

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

from run_conformance import unpacked_sdist  # noqa: E402 - the sibling module, found through HERE

# Posix targets that need no network, containers, ssh, sudo or changes to the machine, each
# about a minute at most.  Left out from the candidates: module_utils, become, copy and
# lineinfile (destructive: they add users or install packages into the interpreter's
# environment), file (its become tasks need sudo, and it leaves a user behind), tags (needs
# the en_US.UTF-8 locale) and handlers (several minutes).  template needs root: it adds a
# user and a group, and takes them away again.
TARGETS = [
    "ansiballz_python",
    "argspec",
    "no_log",
    "command_shell",
    "template",
    "async",
    "environment",
    "module_precedence",
    "collections",
    "stat",
    "ping",
    "set_fact",
    "blocks",
    "loops",
    "include_vars",
    "assert",
    "debug",
]
# The targets whose modules exercise argument validation and no_log handling the most.
MODULE_SIDE_TARGETS = ["argspec", "no_log"]

# Aliases ansible-test gives targets that this runner cannot satisfy (or must not, here).
SKIP_ALIASES = {
    "destructive": "destructive (changes the machine)",
    "unsupported": "unsupported",
    "disabled": "disabled",
    "unstable": "unstable",
    "needs/ssh": "needs ssh to the controller",
    "needs/httptester": "needs the HTTP test container",
    "needs/privileged": "needs a privileged container",
}
SKIP_PREFIXES = {"cloud/": "needs a cloud environment", "needs/file/": "needs a file outside the tree"}

BIN_COMMANDS = {
    "ansible": "adhoc",
    "ansible-config": "config",
    "ansible-console": "console",
    "ansible-doc": "doc",
    "ansible-galaxy": "galaxy",
    "ansible-inventory": "inventory",
    "ansible-playbook": "playbook",
    "ansible-pull": "pull",
    "ansible-vault": "vault",
}
TEST_CLI_STUB = "test/lib/ansible_test/_util/target/cli/ansible_test_cli_stub.py"
HOOK_SOURCE = os.path.join(HERE, "integration_sitecustomize.py")
HOOK_CONFIG = "accel_integration.json"

MODES = ("off", "on")
PASSED, FAILED, SKIPPED, TIMEOUT = "passed", "failed", "skipped", "timeout"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("targets", nargs="*", help=f"integration targets (default: {' '.join(TARGETS)})")
    parser.add_argument("--cache", default=os.path.join(REPO, ".cache"), help="download/unpack directory")
    parser.add_argument("--route", choices=("install", "callback"), default="install",
                        help="how 'on' switches the accelerator on (see above)")  # fmt: skip
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per target and mode")
    parser.add_argument("-v", "--verbose", action="store_true", help="show ansible-test's output")
    parser.add_argument("--module-side", action="store_true",
                        help=f"require native module-side counts in the 'on' runs (default targets: "
                             f"{' '.join(MODULE_SIDE_TARGETS)})")  # fmt: skip
    options = parser.parse_args(argv)

    started = time.monotonic()
    version = metadata.version("ansible-core")
    python = f"{sys.version_info[0]}.{sys.version_info[1]}"
    print(f"== integration conformance: ansible-core {version} on Python {python} ({sys.executable}), "
          f"route {options.route}", flush=True)  # fmt: skip
    cache = os.path.abspath(options.cache)
    tree = source_tree(unpacked_sdist(version, cache), version, cache)
    logs = os.path.join(cache, "integration", "logs", f"ansible_core-{version}")
    os.makedirs(logs, exist_ok=True)
    rows = []
    with tree_lock(tree):
        try:
            for target in options.targets or (MODULE_SIDE_TARGETS if options.module_side else TARGETS):
                rows.append(run_target_both(tree, target, python, options, logs))
                print_progress(rows[-1])
        finally:
            write_hook(tree, None)
    print_table(rows)
    if options.module_side:
        print_module_side(rows)
    for note in (note for row in rows for note in row["notes"]):
        print(f"   note: {note}")
    problems = [problem for row in rows for problem in row["problems"]]
    if problems:
        print(f"   FAIL: {len(problems)} problem(s):")
        for problem in problems:
            print(f"     {problem}")
        print(f"   logs: {logs}")
    else:
        print(f"   OK: every target that passes off passes on (ansible-core {version})")
    print(f"   integration conformance time: {time.monotonic() - started:.1f}s", flush=True)
    return 1 if problems else 0


# --- the source tree ---------------------------------------------------------------------------


def source_tree(source: str, version: str, cache: str) -> str:
    """A copy of the unpacked sdist that ansible-test accepts as an ansible-core source tree:
    its own ``bin/`` (ansible-test's stub, the ansible commands as links into ``lib/``)."""
    root = os.path.join(cache, "integration", f"ansible_core-{version}")
    if os.path.isfile(os.path.join(root, ".complete")):
        return root
    os.makedirs(os.path.dirname(root), exist_ok=True)
    staging = tempfile.mkdtemp(prefix=".copy-", dir=os.path.dirname(root))
    try:
        tree = os.path.join(staging, "tree")
        shutil.copytree(source, tree, symlinks=True, ignore=lambda directory, names: leftovers(source, directory))
        make_bin(tree)
        open(os.path.join(tree, ".complete"), "w").close()
        shutil.rmtree(root, ignore_errors=True)
        os.replace(tree, root)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return root


def leftovers(source: str, directory: str) -> list[str]:
    """What the copy leaves out: the unpack marker and ansible-test's results."""
    if directory == source:
        return [".complete"]
    if directory == os.path.join(source, "test"):
        return ["results"]
    return []


def make_bin(tree: str) -> None:
    """The entry points of a git checkout.  ansible-test's stub finds the tree from its own
    path, so it is a copy; ansible-test runs the others with its interpreter."""
    directory = os.path.join(tree, "bin")
    os.makedirs(directory)
    stub = os.path.join(directory, "ansible-test")
    shutil.copyfile(os.path.join(tree, TEST_CLI_STUB), stub)
    os.chmod(stub, 0o755)
    for command, module in BIN_COMMANDS.items():
        os.symlink(f"../lib/ansible/cli/{module}.py", os.path.join(directory, command))


@contextlib.contextmanager
def tree_lock(tree: str):
    """One run at a time per tree: each run rewrites the tree's hook and configuration."""
    with open(tree + ".lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def write_hook(tree: str, config: dict | None) -> None:
    """Put the hook and its configuration into the tree's ``lib`` (``None``: take both out)."""
    lib = os.path.join(tree, "lib")
    for path in (os.path.join(lib, "sitecustomize.py"), os.path.join(lib, HOOK_CONFIG)):
        with contextlib.suppress(FileNotFoundError):
            os.remove(path)
    shutil.rmtree(os.path.join(lib, "__pycache__"), ignore_errors=True)
    if config is None:
        return
    with open(os.path.join(lib, HOOK_CONFIG), "w") as handle:
        json.dump(config, handle)
    shutil.copyfile(HOOK_SOURCE, os.path.join(lib, "sitecustomize.py"))


def hook_config(mode: str, route: str, records: str) -> dict:
    import ansible_accel
    from ansible_accel._cli import ANSIBLE_COMMANDS

    return {
        "mode": mode,
        "route": route,
        "records": records,
        "install_commands": sorted(ANSIBLE_COMMANDS),
        "callback_plugins": os.path.join(os.path.dirname(ansible_accel.__file__), "ansible_plugins", "callback"),
    }


# --- which targets ---------------------------------------------------------------------------


def read_aliases(target_dir: str) -> list[str]:
    try:
        with open(os.path.join(target_dir, "aliases")) as handle:
            lines = handle.read().splitlines()
    except FileNotFoundError:
        return []
    return [line.split("#", 1)[0].strip() for line in lines if line.split("#", 1)[0].strip()]


def skip_reason(aliases: list[str], targets_dir: str, is_root: bool) -> str | None:
    """Why this runner does not run a target with these aliases, or None."""
    if not any(alias == "posix" or alias.startswith("shippable/posix/") for alias in aliases):
        return "not a posix target"
    for alias in aliases:
        if alias in SKIP_ALIASES:
            return SKIP_ALIASES[alias]
        if alias == "needs/root" and not is_root:
            return "needs root"
        for prefix, reason in SKIP_PREFIXES.items():
            if alias.startswith(prefix):
                return f"{reason} ({alias})"
        if alias.startswith("needs/target/") and not os.path.isdir(os.path.join(targets_dir, alias[13:])):
            return f"needs target {alias[13:]}, which this version lacks"
    return None


# --- running a target ------------------------------------------------------------------------


def run_target_both(tree: str, target: str, python: str, options: argparse.Namespace, logs: str) -> dict:
    targets_dir = os.path.join(tree, "test", "integration", "targets")
    row: dict = {"target": target, "runs": {}, "skip": None}
    if not os.path.isdir(os.path.join(targets_dir, target)):
        row["skip"] = f"no target {target} in this version"
    else:
        row["skip"] = skip_reason(read_aliases(os.path.join(targets_dir, target)), targets_dir, os.geteuid() == 0)
    if row["skip"] is None:
        for mode in MODES:
            row["runs"][mode] = run_target(tree, target, mode, python, options, logs)
    row["verdict"], row["problems"], row["notes"] = judge(row)
    if options.module_side:
        module_side_problems(row)
    return row


def ansible_test_environment(python_dir: str) -> dict[str, str]:
    """The caller's environment with this interpreter first on PATH and nothing that would reach
    ansible-test itself as Python or ansible settings (it passes none of them to targets)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "PYTHON", "ACCEL_"))}
    env["PATH"] = os.pathsep.join([python_dir, os.environ.get("PATH", os.defpath)])
    return env


def run_target(tree: str, target: str, mode: str, python: str, options: argparse.Namespace, logs: str) -> dict:
    records = tempfile.mkdtemp(prefix=f"accel-integration-{target}-{mode}-")
    try:
        write_hook(tree, hook_config(mode, options.route, records))
        command = [sys.executable, os.path.join(tree, "bin", "ansible-test"), "integration",
                   "--local", "--python", python, "--color", "no", target]  # fmt: skip
        started, cpu_before = time.monotonic(), children_cpu()
        returncode, output = run_bounded(command, tree, ansible_test_environment(os.path.dirname(sys.executable)),
                                         options.timeout)  # fmt: skip
        seconds, cpu = time.monotonic() - started, children_cpu() - cpu_before
        evidence = read_records(records)
    finally:
        shutil.rmtree(records, ignore_errors=True)
    with open(os.path.join(logs, f"{target}-{mode}.log"), "w") as handle:
        handle.write(output)
    if options.verbose:
        print(output)
    outcome = TIMEOUT if returncode is None else parse_outcome(returncode, output, target)
    return {"outcome": outcome, "seconds": seconds, "cpu": cpu, "returncode": returncode, "output": output,
            "route": options.route, **evidence}  # fmt: skip


def children_cpu() -> float:
    """CPU seconds of the finished child processes: on a shared machine the time a target
    takes moves with the load, its CPU much less."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_bounded(command: list[str], cwd: str, env: dict[str, str], timeout: float) -> tuple[int | None, str]:
    """Run ``command`` in its own process group; (exit status or None on timeout, output)."""
    process = subprocess.Popen(
        command, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True, errors="replace", start_new_session=True,
    )  # fmt: skip
    try:
        output, _ = process.communicate(timeout=timeout)
        return process.returncode, output
    except subprocess.TimeoutExpired:
        for sig, grace in ((signal.SIGTERM, 10), (signal.SIGKILL, None)):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, sig)
            try:
                output, _ = process.communicate(timeout=grace)
                break
            except subprocess.TimeoutExpired:
                continue
        return None, (output or "") + f"\n[timed out after {timeout:.0f}s]\n"


RAN = "Running {} integration test (role|script)"


def parse_outcome(returncode: int, output: str, target: str) -> str:
    """ansible-test's verdict on one target: it exits 0 both when the target passed and when it
    excluded it (then it warns and runs nothing), so passing needs the line that starts it."""
    ran = re.search(RAN.format(re.escape(target)), output) is not None
    if returncode == 0:
        return PASSED if ran else SKIPPED
    return FAILED


def read_records(directory: str) -> dict:
    """What the hook recorded: one entry per ansible command process, and the accelerator's
    counters summed over the stats files (``native`` per path, ``fallback`` reasons per path)."""
    processes = []
    for path in sorted(glob.glob(os.path.join(directory, "process-*.json"))):
        with contextlib.suppress(OSError, ValueError), open(path) as handle:
            processes.append(json.load(handle))
    native: dict[str, int] = {}
    fallback: dict[str, dict[str, int]] = {}
    module_side: dict = {"modules": 0, "native": {}, "fallback": {}, "unused": {}}
    stats_files = 0
    for path in sorted(glob.glob(os.path.join(directory, "stats-*.json"))):
        try:
            with open(path) as handle:
                report = json.load(handle)
        except (OSError, ValueError):
            continue
        stats_files += 1
        for name, counts in ((report.get("run") or {}).get("paths") or {}).items():
            native[name] = native.get(name, 0) + int(counts.get("native", 0))
            for reason, count in (counts.get("fallback") or {}).items():
                fallback.setdefault(name, {})[reason] = fallback.setdefault(name, {}).get(reason, 0) + count
        add_module_side(module_side, report.get("module_side") or {})
    return {"processes": processes, "native": native, "fallback": fallback, "stats_files": stats_files,
            "module_side": module_side}  # fmt: skip


MODULE_SIDE_PATHS = ("argspec", "no_log", "masking")


def add_module_side(total: dict, part: dict) -> None:
    """Add one stats file's ``module_side`` (the counts of the modules its runners ran)."""
    total["modules"] += int(part.get("modules", 0))
    for reason, count in (part.get("fallback") or {}).items():
        total["unused"][reason] = total["unused"].get(reason, 0) + int(count)
    for path in MODULE_SIDE_PATHS:
        counts = part.get(path) or {}
        total["native"][path] = total["native"].get(path, 0) + int(counts.get("native", 0))
        for reason, count in (counts.get("fallback") or {}).items():
            bucket = total["fallback"].setdefault(path, {})
            bucket[reason] = bucket.get(reason, 0) + int(count)


def module_side_expected() -> tuple[str, ...]:
    """The module-side paths a module run natively counts on this ansible-core: argument
    validation, and no_log scrubbing before 2.22, masking on 2.22."""
    version = metadata.version("ansible-core")
    minor = int(version.split(".")[1])
    return ("argspec", "masking") if minor >= 22 else ("argspec", "no_log")


def module_side_problems(row: dict) -> None:
    """With ``--module-side``: a target that passes on must show native module-side counts."""
    if row["skip"] is not None or row["runs"]["on"]["outcome"] != PASSED:
        return
    counts = row["runs"]["on"]["module_side"]
    missing = [path for path in module_side_expected() if not counts["native"].get(path)]
    if missing:
        problem = (f"{row['target']}: no module-side native {' or '.join(missing)} in the 'on' run "
                   f"({counts['modules']} module runs reported; not used: {counts['unused'] or 'none'})")  # fmt: skip
        row["problems"].append(problem)
        row["verdict"] = "FAIL"


def print_module_side(rows: list[dict]) -> None:
    print("   inside the modules of the 'on' runs (module-side): module runs reported, native calls, fallbacks:")
    for row in rows:
        if row["skip"] is not None:
            continue
        counts = row["runs"]["on"]["module_side"]
        native = ", ".join(f"{path} {counts['native'].get(path, 0)}" for path in MODULE_SIDE_PATHS)
        fallbacks = "; ".join(f"{path} {reason}: {n}" for path, reasons in sorted(counts["fallback"].items())
                              for reason, n in sorted(reasons.items()))  # fmt: skip
        unused = "; ".join(f"{reason}: {n}" for reason, n in sorted(counts["unused"].items()))
        print(f"     {row['target']:<18} modules {counts['modules']}, {native}"
              + (f"  (fell back: {fallbacks})" if fallbacks else "") + (f"  (not used: {unused})" if unused else ""))


def accelerated(process: dict) -> bool:
    return bool(process.get("installed_at_start") or process.get("installed_at_exit"))


# --- judging and reporting -------------------------------------------------------------------


def judge(row: dict) -> tuple[str, list[str], list[str]]:
    """The row's verdict, the problems that fail the suite, and notes.

    A target that passes off must pass on.  The "on" run must have switched the accelerator on:
    with the install route in every command it wraps, with the callback route in at least one
    (a command that loads the task queue manager but starts no play never loads callbacks, so
    the others are noted).  The "off" run must have reached the commands through the hook, and
    installed nothing there."""
    if row["skip"] is not None:
        return "skipped", [], []
    off, on = row["runs"]["off"], row["runs"]["on"]
    target = row["target"]
    if off["outcome"] == SKIPPED:
        return "skipped by ansible-test", [], []
    if off["outcome"] != PASSED:
        return f"{off['outcome']} off", [], []
    problems, notes = [], []
    if on["outcome"] != PASSED:
        problems.append(f"{target}: passes off, {on['outcome']} on")
    if not off["processes"]:
        problems.append(f"{target}: no ansible command recorded in the 'off' run (the hook did not reach it)")
    if any(accelerated(p) for p in off["processes"]):
        problems.append(f"{target}: the accelerator was installed in the 'off' run")
    if not any(accelerated(p) for p in on["processes"]):
        problems.append(f"{target}: no ansible command had the accelerator on in the 'on' run")
    elif on["route"] == "install":
        missing = [p for p in on["processes"] if p.get("install_expected") and not p.get("installed_at_start")]
        if missing:
            problems.append(f"{target}: {len(missing)} ansible command(s) did not install the accelerator: "
                            + commands(missing))  # fmt: skip
    else:
        missing = [p for p in on["processes"] if p.get("ran_plays") and not accelerated(p)]
        if missing:
            notes.append(f"{target}: {len(missing)} ansible command(s) loaded the task queue manager without "
                         "switching the accelerator on: " + commands(missing))  # fmt: skip
    return ("FAIL" if problems else "ok"), problems, notes


def commands(processes: list[dict]) -> str:
    """The first few command lines, shortened."""
    return "; ".join(" ".join([p["command"], *p["argv"]])[:120] for p in processes[:3])


def print_progress(row: dict) -> None:
    if row["skip"] is not None:
        print(f"   {row['target']}: skipped ({row['skip']})", flush=True)
        return
    runs = ", ".join(f"{mode} {run['outcome']} ({run['seconds']:.0f}s)" for mode, run in row["runs"].items())
    print(f"   {row['target']}: {runs}: {row['verdict']}", flush=True)


TABLE_LEGEND = (
    "   (s: wall seconds; cpu: CPU seconds of all its processes, steadier on a shared machine; "
    "accel: ansible commands with the accelerator installed / all ansible commands, in the 'on' run; "
    "runner: modules the runner path started, from their stats)"
)


def table_line(cells: list[str]) -> str:
    widths = (18, 8, 8, 6, 6, 7, 7, 8, 6)
    aligned = [f"{c:<{w}}" if i < 3 else f"{c:>{w}}" for i, (c, w) in enumerate(zip(cells, widths))]
    return "   " + " ".join(aligned) + "  " + cells[-1]


def print_table(rows: list[dict]) -> None:
    print(table_line(["target", "off", "on", "off s", "on s", "off cpu", "on cpu", "accel", "runner", "verdict"]))
    for row in rows:
        if row["skip"] is not None:
            print(table_line([row["target"], "-", "-", *[""] * 6, f"skipped: {row['skip']}"]))
            continue
        off, on = row["runs"]["off"], row["runs"]["on"]
        print(table_line([
            row["target"], off["outcome"], on["outcome"], f"{off['seconds']:.1f}", f"{on['seconds']:.1f}",
            f"{off['cpu']:.1f}", f"{on['cpu']:.1f}", f"{sum(accelerated(p) for p in on['processes'])}/{len(on['processes'])}",
            str(on["native"].get("runner", 0)), row["verdict"],
        ]))  # fmt: skip
    print(TABLE_LEGEND)
    print("   native calls per path in the 'on' runs, and the runner's fallbacks:")
    for row in rows:
        if row["skip"] is None:
            on = row["runs"]["on"]
            counts = ", ".join(f"{path} {n}" for path, n in sorted(on["native"].items()) if n) or "none"
            fallbacks = on["fallback"].get("runner") or {}
            detail = "; ".join(f"{reason}: {n}" for reason, n in sorted(fallbacks.items(), key=lambda i: -i[1]))
            print(f"     {row['target']:<18} {counts}" + (f"  (runner fell back: {detail})" if detail else ""))


if __name__ == "__main__":
    sys.exit(main())
