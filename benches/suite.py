"""``python -m benches.suite``: every hot path's benchmark under several ansible-cores, one report.

Each engine's ``bench_<engine>.py`` runs in a fresh process per interpreter (``python -m
benches --json``), so one engine's ``install()`` or a crash never touches another's numbers.
The interpreters given with ``--python`` (``make bench``: ansible-core 2.21 and 2.22) run every
engine; one that gives no rows on any of them (an engine that exists only on older
ansible-cores) is tried on the ``--extra-python`` ones (``make bench``: 2.19).

Writes ``results.json``, ``results.md`` (the table the README quotes) and ``ratios.png`` (the
chart, when matplotlib is importable) to ``--out``.  ``--e2e`` adds the end-to-end playbook
runs (``benches/e2e``).  Exit status 1 when a row's outputs differ, a benchmark fails, or an
end-to-end run's results differ between accelerator off and on.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

from . import _harness, report
from .__main__ import engines

BENCHES = os.path.dirname(os.path.abspath(__file__))
SOURCE_ROOT = os.path.dirname(BENCHES)


def describe(python: str) -> dict:
    """Interpreter, ansible-core and ansible-accel versions of one environment."""
    code = (
        "import json, sys\n"
        "from importlib import metadata\n"
        "def v(name):\n"
        "    try: return metadata.version(name)\n"
        "    except metadata.PackageNotFoundError: return None\n"
        "print(json.dumps({'python': sys.version.split()[0], 'ansible_core': v('ansible-core'),"
        " 'ansible_accel': v('ansible-accel'), 'ansible': v('ansible')}))"
    )
    completed = subprocess.run([python, "-c", code], stdout=subprocess.PIPE, text=True, check=True)
    return {"executable": python, **json.loads(completed.stdout)}


def machine() -> dict:
    info = {
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "cpu_model": _first_field("/proc/cpuinfo", "model name"),
        "memory": _first_field("/proc/meminfo", "MemTotal"),
    }
    try:
        info["load_average_start"] = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        pass
    return info


def _first_field(path: str, key: str) -> str | None:
    try:
        with open(path) as handle:
            for line in handle:
                if line.startswith(key):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def run_engine(python: str, engine: str, quick: bool, label: str, check: bool = False) -> dict:
    """One engine's benchmark in a fresh ``python``; its rows and errors.  Its table streams
    through, unless ``check``: then its output (rows with times and ratios) is dropped, and only
    what it writes to stderr (failures, tracebacks) is shown."""
    with tempfile.TemporaryDirectory(prefix="ansible-accel-bench-") as tmp:
        out = os.path.join(tmp, "rows.json")
        command = [python, "-m", "benches", "--json", out, *(["--quick"] if quick else []), engine]
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [SOURCE_ROOT, os.environ.get("PYTHONPATH")])))
        env.pop("ANSIBLE_ACCEL", None)  # the benchmarks switch paths on themselves
        started = time.perf_counter()
        completed = subprocess.run(command, env=env, cwd=SOURCE_ROOT, stdout=subprocess.DEVNULL if check else None)
        elapsed = time.perf_counter() - started
        try:
            with open(out) as handle:
                result = json.load(handle)
        except (OSError, ValueError):
            result = {"rows": [], "errors": {engine: f"{label}: exited {completed.returncode} without results"}}
    if completed.returncode != 0 and not result["errors"] and all(r["equal"] for r in result["rows"]):
        result["errors"][engine] = f"{label}: exit status {completed.returncode}"
    result["seconds"] = elapsed
    return result


def run_all(pythons: list[str], extra: list[str], quick: bool, only: list[str],
            check: bool = False) -> tuple[list[dict], list[_harness.Row], dict]:
    environments = [describe(p) for p in pythons]
    extras = [describe(p) for p in extra]
    names = [e for e in engines() if not only or e in only]
    rows: list[_harness.Row] = []
    errors: dict[str, str] = {}
    total = len(names) * len(environments)
    step = 0
    no_rows = set(names)
    for env in environments:
        for name in names:
            step += 1
            label = f"{name} on ansible-core {env['ansible_core']} (Python {env['python']})"
            print(f"\n[{step}/{total}] {label}", flush=True)
            result = run_engine(env["executable"], name, quick, label, check)
            new = [_harness.Row.from_dict(r) for r in result["rows"]]
            if new:
                no_rows.discard(name)
            rows.extend(new)
            errors.update({f"{k} ({env['ansible_core']})": v for k, v in result["errors"].items()})
            took = "" if check else f" in {result['seconds']:.1f}s"
            print(f"[{step}/{total}] {name}: {len(new)} rows{took}", flush=True)
    used_extras = []
    for env in extras:
        for name in sorted(no_rows):
            label = f"{name} on ansible-core {env['ansible_core']} (Python {env['python']})"
            print(f"\n[extra] {label}: no rows on {', '.join(e['ansible_core'] for e in environments)}", flush=True)
            result = run_engine(env["executable"], name, quick, label, check)
            new = [_harness.Row.from_dict(r) for r in result["rows"]]
            rows.extend(new)
            errors.update({f"{k} ({env['ansible_core']})": v for k, v in result["errors"].items()})
            if new and env not in used_extras:
                used_extras.append(env)
    return environments + used_extras, rows, errors


def run_e2e(pythons: list[str], quick: bool) -> dict:
    """The end-to-end playbook runs (``benches/e2e``) in each interpreter that can run them."""
    from .e2e import run_e2e as e2e

    return e2e.run_for(pythons, quick=quick)


def check_text(results: dict) -> str:
    """What ``--check`` found: whether each path's outputs were equal to ansible-core's.  Times
    from quick inputs are no evidence either way, so neither they nor the speed targets are shown."""
    paths: dict[str, list[int]] = {}
    for row in results["rows"]:
        counts = paths.setdefault(row["group"], [0, 0])
        counts[0] += 1
        counts[1] += bool(row["equal"])
    lines = [f"{'path':<10} {'rows':>5} {'outputs equal':>14}"]
    lines += [f"{group:<10} {count:>5} {equal:>14}" for group, (count, equal) in paths.items()]
    rows = len(results["rows"])
    equal = sum(equal for _, equal in paths.values())
    verdict = "equal to ansible-core's on every row" if equal == rows else f"different on {rows - equal} of {rows} rows"
    lines += ["", f"Outputs {verdict} ({rows} rows, quick inputs).",
              "Quick times say nothing about speed: `make bench` times every path."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benches.suite", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small inputs, few repeats (under a minute)")
    parser.add_argument("--python", action="append", default=[], metavar="PYTHON",
                        help="an interpreter with ansible-core and ansible-accel installed (repeatable; default: this one)")
    parser.add_argument("--extra-python", action="append", default=[], metavar="PYTHON",
                        help="an interpreter for engines that give no rows on the --python ones (repeatable)")
    parser.add_argument("--out", default=os.path.join(os.getcwd(), "bench-results"), help="results directory")
    parser.add_argument("--check", action="store_true", help="equality only: write no results (make test)")
    parser.add_argument("--e2e", action="store_true", help="also run the end-to-end playbooks (minutes)")
    parser.add_argument("--e2e-python", action="append", default=[], metavar="PYTHON",
                        help="interpreters for --e2e (default: the --python ones)")
    parser.add_argument("--e2e-json", action="append", default=[], metavar="FILE",
                        help="include end-to-end results written before by python -m benches.e2e --json (repeatable)")
    parser.add_argument("only", nargs="*", help="engine names (default: all)")
    options = parser.parse_args(argv)

    pythons = options.python or [sys.executable]
    started = datetime.datetime.now(datetime.timezone.utc)
    info = machine()
    environments, rows, errors = run_all(pythons, options.extra_python, options.quick, options.only, options.check)
    e2e = run_e2e(options.e2e_python or pythons, options.quick) if options.e2e else None
    for path in options.e2e_json:
        with open(path) as handle:
            earlier = json.load(handle)
        if e2e is None:
            e2e = earlier
        else:
            e2e["runs"] += earlier["runs"]
    try:
        info["load_average_end"] = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        pass
    results = {
        "started": started.isoformat(timespec="seconds"),
        "seconds": round((datetime.datetime.now(datetime.timezone.utc) - started).total_seconds(), 1),
        "quick": options.quick,
        "machine": info,
        "environments": environments,
        "rows": [row.to_dict() for row in rows],
        "errors": errors,
        "e2e": e2e,
    }
    print()
    print(check_text(results) if options.check else report.summary_text(results))
    failed = report.failures(results)
    if not options.check:
        written = report.write_all(results, options.out)
        print("\nwritten: " + ", ".join(written))
    for line in failed:
        print(f"FAILURE: {line}", file=sys.stderr)
    print(f"\n{'FAILED' if failed else 'OK'}: {len(rows)} rows, {len(failed)} failures, {results['seconds']:.0f}s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
