"""A benchmark run's results as ``results.json``, a markdown table and a PNG chart of the ratios."""

from __future__ import annotations

import json
import os
import statistics

from . import targets
from ._harness import fmt


def failures(results: dict) -> list[str]:
    """Every reason the run failed: differing outputs, broken benchmarks, differing e2e results."""
    found = [f"outputs differ: {r['group']} {r['name']} ({r['inputs']}) on ansible-core {r['ansible_core']}"
             for r in results["rows"] if not r["equal"]]
    found += [f"benchmark {name} failed: {text.strip().splitlines()[-1] if text.strip() else text}"
              for name, text in results["errors"].items()]
    for run in (results.get("e2e") or {}).get("runs", []):
        found += [f"e2e {run['playbook']} on ansible-core {run['ansible_core']}: {problem}" for problem in run["problems"]]
    return found


def _ratio(row: dict) -> str:
    return "—" if row["ratio"] is None else f"{row['ratio']:.1f}×"


def _timing(seconds: float, spread: float) -> str:
    return f"{fmt(seconds)} ({spread * 100:.0f}%)"


def summary_by_path(rows: list[dict]) -> list[tuple[str, str, int, float, float, float]]:
    """(path, ansible-core, rows, min, median, max ratio) over the rows that compare with
    ansible-core itself (not the ``vs <library>`` rows)."""
    groups: dict[tuple[str, str], list[float]] = {}
    for row in rows:
        if row["ratio"] is None or " vs " in row["name"]:
            continue
        groups.setdefault((row["group"], row["ansible_core"]), []).append(row["ratio"])
    return [(g, core, len(r), min(r), statistics.median(r), max(r)) for (g, core), r in groups.items()]


def summary_text(results: dict) -> str:
    lines = [f"{'path':<10} {'ansible-core':<13} {'rows':>5} {'min':>8} {'median':>8} {'max':>8}"]
    for group, core, count, low, mid, high in summary_by_path(results["rows"]):
        lines.append(f"{group:<10} {core:<13} {count:>5} {low:>7.1f}x {mid:>7.1f}x {high:>7.1f}x")
    bad = sum(1 for r in results["rows"] if not r["equal"])
    lines.append(f"{len(results['rows'])} rows, {bad} with differing outputs")
    if targets.checked(results["rows"]):
        lines += ["", "Speed targets:", *targets.text(results["rows"])]
    e2e = results.get("e2e")
    if e2e:
        lines.append("")
        lines.extend(e2e_text(e2e))
    return "\n".join(lines)


def _ratio_of(off: float, on: float) -> str:
    return f"{off / on:.2f}×" if on else "—"


def e2e_text(e2e: dict) -> list[str]:
    lines = [f"{'end to end':<14} {'core':<10} {'runs':>4} {'wall off':>9} {'wall on':>9} {'tree CPU off':>12} {'tree CPU on':>11}"
             f" {'controller off':>14} {'controller on':>13}  results"]
    for run in e2e["runs"]:
        off, on = run["off"], run["on"]
        lines.append(
            f"{run['playbook']:<14} {run['ansible_core']:<10} {len(off['wall']):>4} {off['wall_median']:>8.1f}s {on['wall_median']:>8.1f}s "
            f"{off['cpu_median']:>11.1f}s {on['cpu_median']:>10.1f}s {off['controller_cpu_median']:>13.1f}s {on['controller_cpu_median']:>12.1f}s  "
            + ("identical" if not run["problems"] else "DIFFERENT (failure)")
        )
    return lines


def _memory(text: str | None) -> str:
    if text and text.endswith(" kB") and text[:-3].strip().isdigit():
        return f"{int(text[:-3]) / 1024 / 1024:.0f} GiB memory"
    return text or "? memory"


def markdown(results: dict, chart: str | None) -> str:
    m = results["machine"]
    envs = ", ".join(f"ansible-core {e['ansible_core']} on Python {e['python']}" for e in results["environments"])
    accel = sorted({e["ansible_accel"] for e in results["environments"] if e.get("ansible_accel")})
    if accel:
        envs = f"ansible-accel {', '.join(accel)}; {envs}"
    load = ""
    if "load_average_start" in m:
        load = f"; load average {m['load_average_start'][0]} at the start, {m.get('load_average_end', ['?'])[0]} at the end"
    out = [
        f"Run of {results['started']} ({'quick' if results['quick'] else 'full'}, {results['seconds']:.0f}s): "
        f"{m['cpus']} CPUs ({m.get('cpu_model') or m['machine']}), "
        f"{_memory(m.get('memory'))}, {m['platform']}{load}. {envs}.",
        "",
        "Speed-up (pure-Python median ÷ native median) per hot path, over the rows that compare with ansible-core itself:",
        "",
        "| path | ansible-core | rows | min | median | max |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for group, core, count, low, mid, high in summary_by_path(results["rows"]):
        out.append(f"| {group} | {core} | {count} | {low:.1f}× | {mid:.1f}× | {high:.1f}× |")
    if targets.checked(results["rows"]):
        out += ["", "Speed targets, row by row (every row a target covers must reach it):", "",
                *targets.markdown(results["rows"])]
    if chart:
        out += ["", f"![speed-up per benchmark, log scale]({chart})"]
    if results.get("e2e"):
        out += ["", *e2e_markdown(results["e2e"])]
    out += [
        "",
        "Every row: the median of the repeats (after a warm-up, pure-Python and native alternating), in",
        "brackets the spread of the repeats ((max − min) ÷ median), the ratio, and whether both outputs",
        "were equal. A row whose outputs differ is a failure, not a speed. `vs <library>` rows compare the",
        "native path with the same semantics built on that library (the pure-Python column is then that library).",
        "",
        "| path | benchmark | inputs | ansible-core | pure Python | native | speed-up | outputs |",
        "|---|---|---|---|---:|---:|---:|---|",
    ]
    for r in results["rows"]:
        out.append(
            f"| {r['group']} | {r['name']} | {r['inputs']} | {r['ansible_core']} | {_timing(r['python_s'], r['python_spread'])} "
            f"| {_timing(r['native_s'], r['native_spread'])} | {_ratio(r)} | {'equal' if r['equal'] else '**DIFFERENT**'} |"
        )
    if results["errors"]:
        out += ["", "Benchmarks that failed: " + ", ".join(sorted(results["errors"]))]
    return "\n".join(out) + "\n"


def e2e_markdown(e2e: dict) -> list[str]:
    def values(xs: list[float]) -> str:
        return ", ".join(f"{x:.1f}" for x in xs)

    out = [
        "End to end (`benches/e2e`): `ansible-playbook` on local host aliases, accelerator off and on",
        "alternately; the median of the runs, each run's value in brackets. Tree CPU: the whole process",
        "tree (controller, forked workers, module processes); controller: the `ansible-playbook` process alone.",
        "",
        "| playbook | ansible-core | hosts × tasks (actions) | runs | wall off | wall on | tree CPU off | tree CPU on | controller CPU off | controller CPU on | results |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for run in e2e["runs"]:
        off, on = run["off"], run["on"]
        out.append(
            f"| {run['playbook']} | {run['ansible_core']} | {run['hosts']} × {run['tasks']} ({run['distinct_actions']}) | {len(off['wall'])} "
            f"| {off['wall_median']:.1f}s ({values(off['wall'])}) | {on['wall_median']:.1f}s ({values(on['wall'])}) "
            f"| {off['cpu_median']:.1f}s ({values(off['cpu'])}) | {on['cpu_median']:.1f}s ({values(on['cpu'])}) "
            f"| {off['controller_cpu_median']:.1f}s | {on['controller_cpu_median']:.1f}s "
            f"| {'identical' if not run['problems'] else '**DIFFERENT**'} |"
        )
    for run in e2e["runs"]:
        counters = ", ".join(f"{p} {c['native']}" + (f" (+{c['fallback']} fallbacks)" if c["fallback"] else "")
                             for p, c in run.get("counters", {}).items() if c["native"] or c["fallback"])
        out += ["", f"{run['playbook']} on {run['ansible_core']}, native calls in the first run with the accelerator on: {counters or 'none'}."]
        if run.get("profile"):
            out += [f"Where the time goes with the accelerator on (cProfile of the controller and its workers; "
                    f"module processes are not profiled), top by own time:", "", "```", *run["profile"], "```"]
        for problem in run["problems"]:
            out.append(f"- PROBLEM: {problem[:400]}")
    return out


def chart(results: dict, path: str) -> bool:
    """A horizontal bar per row, speed-up on a log axis; False when matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    rows = [r for r in results["rows"] if r["ratio"] is not None]
    if not rows:
        return False
    cores = sorted({r["ansible_core"] for r in rows})
    colours = dict(zip(cores, ["#4c72b0", "#dd8452", "#55a868", "#8172b3"]))
    labels = [f"{r['group']}: {r['name']} — {r['inputs']} [{r['ansible_core']}]" for r in rows]
    height = max(4.0, 0.17 * len(rows) + 1.5)
    fig, ax = plt.subplots(figsize=(13, height))
    positions = list(range(len(rows)))[::-1]
    bars = ax.barh(positions, [r["ratio"] for r in rows],
                   color=[colours[r["ansible_core"]] if r["equal"] else "#c44e52" for r in rows],
                   hatch=None, edgecolor="none")
    for bar, row in zip(bars, rows):
        ax.text(row["ratio"] * 1.04, bar.get_y() + bar.get_height() / 2, f"{row['ratio']:.1f}×",
                va="center", fontsize=5.5)
        if " vs " in row["name"]:
            bar.set_hatch("///")
            bar.set_edgecolor("white")
    ax.set_xscale("log")
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_yticks(positions)
    ax.set_yticklabels(labels, fontsize=6.5)
    ax.set_ylim(-0.7, len(rows) - 0.3)
    ax.set_xlabel("speed-up: pure-Python median ÷ native median (log scale; hatched: vs another library; red: outputs differ)")
    ax.grid(axis="x", which="both", alpha=0.3)
    ax.legend(handles=[matplotlib.patches.Patch(color=c, label=f"ansible-core {k}") for k, c in colours.items()],
              loc="lower right", fontsize=8)
    ax.set_title(f"ansible-accel benchmarks, {results['started'][:10]}"
                 f" ({results['machine']['cpus']} CPUs{', quick' if results['quick'] else ''})")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return True


def write_all(results: dict, out: str) -> list[str]:
    os.makedirs(out, exist_ok=True)
    written = []
    png = os.path.join(out, "ratios.png")
    has_chart = chart(results, png)
    if has_chart:
        written.append(png)
    else:
        print("(no chart: matplotlib is not importable here)")
    with open(os.path.join(out, "results.json"), "w") as handle:
        json.dump(results, handle, indent=1)
        handle.write("\n")
    written.append(os.path.join(out, "results.json"))
    with open(os.path.join(out, "results.md"), "w") as handle:
        handle.write(markdown(results, "ratios.png" if has_chart else None))
    written.append(os.path.join(out, "results.md"))
    return written


def main(argv: list[str] | None = None) -> int:
    """``python -m benches.report RESULTS.json [--e2e-json FILE]... [--out DIR]``: write the
    table and chart again from a results file, adding end-to-end results run separately."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m benches.report", description=main.__doc__.split(":", 1)[1])
    parser.add_argument("results")
    parser.add_argument("--e2e-json", action="append", default=[], metavar="FILE")
    parser.add_argument("--out", help="directory (default: the results file's)")
    options = parser.parse_args(argv)
    with open(options.results) as handle:
        results = json.load(handle)
    for path in options.e2e_json:
        with open(path) as handle:
            earlier = json.load(handle)
        if results.get("e2e"):
            results["e2e"]["runs"] += earlier["runs"]
        else:
            results["e2e"] = earlier
    print(summary_text(results))
    print("\nwritten: " + ", ".join(write_all(results, options.out or os.path.dirname(os.path.abspath(options.results)))))
    return 1 if failures(results) else 0


if __name__ == "__main__":
    import sys

    sys.exit(main())
