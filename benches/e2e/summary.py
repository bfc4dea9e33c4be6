"""The end-to-end report: per-mode medians, spreads and ratios to "off", as text and markdown,
and the profile of the controller (top functions by own and cumulative CPU time)."""

from __future__ import annotations

import glob
import json
import os
import pstats
import statistics

# The modes of a run, in the order they are reported (playbook_run.py).  "on" and "bytecode" have
# the warm runner switched off; "runner" is the accelerator as it comes; "mitogen" is plain
# ansible-playbook with Mitogen's mitogen_linear strategy.
MODES = ("off", "on", "bytecode", "runner", "mitogen")
LABELS = {"off": "off", "on": "on", "bytecode": "on+bytecode", "runner": "on+runner", "mitogen": "mitogen"}
# What each run records, in seconds; the medians and spreads are of these.
MEASURES = ("wall", "cpu", "controller_cpu", "workers_cpu", "modules_cpu", "runners_cpu", "other_cpu")


def spread(values: list[float]) -> float:
    """(max - min) / median, the spread the other benchmarks report."""
    middle = statistics.median(values)
    return (max(values) - min(values)) / middle if middle else 0.0


def summarise(runs: list[dict]) -> dict:
    """One mode's runs: each measure's values in run order, median and spread (a measure that
    reports of older versions of the benchmark did not record is left out)."""
    out: dict = {"runs": len(runs)}
    for measure in MEASURES:
        values = [r[measure] for r in runs if measure in r]
        out[measure] = values
        if values and len(values) == len(runs):
            out[f"{measure}_median"] = statistics.median(values)
            out[f"{measure}_spread"] = spread(values) if len(values) > 1 else None  # one run: unknown
    return out


def ratios(playbook: dict, base: str = "off") -> dict:
    """Each mode's median wall and tree CPU divided by the ``base`` mode's median (below 1: faster)."""
    reference = playbook.get(base) or {}
    out = {}
    for mode in MODES:
        this = playbook.get(mode) or {}
        if mode != base and reference.get("wall_median") and this.get("wall_median") is not None:
            out[mode] = {"wall": this["wall_median"] / reference["wall_median"],
                         "cpu": this["cpu_median"] / reference["cpu_median"]}
    return out


def _modes(playbook: dict) -> list[str]:
    return [m for m in MODES if (playbook.get(m) or {}).get("runs")]


def _results(playbook: dict, mode: str, markdown: bool = False) -> str:
    if mode == "mitogen":
        count = len(playbook.get("reported", []))
        return f"{count} differences (reported)" if count else "identical"
    if not playbook["problems"]:
        return "identical"
    return "**DIFFERENT**" if markdown else "DIFFERENT (failure)"


def _seconds(summary: dict, measure: str, width: int = 0) -> str:
    value = summary.get(f"{measure}_median")
    return f"{'-':>{width}}" if value is None else f"{value:>{max(width - 1, 0)}.1f}s"


def text(report: dict) -> list[str]:
    lines = [f"{'end to end':<14} {'core':<10} {'mode':<12} {'runs':>4} {'wall':>8} {'spread':>7} {'vs off':>7} {'vs mtg':>7}"
             f" {'tree CPU':>9} {'spread':>7} {'vs off':>7} {'vs mtg':>7} {'controller':>10} {'workers':>8} {'modules':>8}"
             f" {'runners':>8} {'other':>7}  results"]
    for playbook in report["runs"]:
        rel, mtg = ratios(playbook), ratios(playbook, "mitogen")
        for mode in _modes(playbook):
            s = playbook[mode]
            lines.append(
                f"{playbook['playbook']:<14} {playbook['ansible_core']:<10} {LABELS[mode]:<12} {s['runs']:>4} "
                f"{s['wall_median']:>7.1f}s {_spread(s['wall_spread']):>6} {_ratio(rel.get(mode), 'wall'):>7} "
                f"{_ratio(mtg.get(mode), 'wall'):>7} {s['cpu_median']:>8.1f}s {_spread(s['cpu_spread']):>6} "
                f"{_ratio(rel.get(mode), 'cpu'):>7} {_ratio(mtg.get(mode), 'cpu'):>7} {_seconds(s, 'controller_cpu', 10)} "
                f"{_seconds(s, 'workers_cpu', 8)} {_seconds(s, 'modules_cpu', 8)} {_seconds(s, 'runners_cpu', 8)} "
                f"{_seconds(s, 'other_cpu', 7)}  {_results(playbook, mode)}"
            )
    return lines


def _spread(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def _ratio(vs: dict | None, key: str) -> str:
    return f"{vs[key]:.3f}" if vs else "-"


def _values(values: list[float]) -> str:
    return ", ".join(f"{v:.1f}" for v in values)


def markdown(report: dict) -> str:
    m = report["machine"]
    unfinished = "" if report.get("finished") else ", NOT FINISHED: the runs listed are those that completed"
    if report.get("parts"):
        when = f"Several runs (listed below{unfinished})"
    else:
        accel = f", ansible-accel {report['ansible_accel']}" if report.get("ansible_accel") else ""
        when = (f"Run of {report['started']}{accel} ({'quick' if report['quick'] else 'full'}, "
                f"{report.get('seconds', 0):.0f}s{'' if report.get('finished') else ' so far'}{unfinished})")
    cgroup = report.get("cgroup")
    out = [
        "# End-to-end benchmark (`benches/e2e`)",
        "",
        f"{when}: {m['cpus']} CPUs ({m['cpu_model']}), {m['platform']}; the machine is shared with other jobs, so"
        " each run's load average (1 min) before and after is listed below.",
        "",
        *([report["note"], ""] if report.get("note") else []),
        *([f"Put together from {len(report['parts'])} runs of the benchmark:", ""]
          + [f"- {part}" for part in report["parts"]] + [""] if report.get("parts") else []),
        "`ansible-playbook` on local host aliases (local connection), in these modes: **off** (plain",
        "`ansible-playbook`), **on** (`ansible-accel ansible-playbook` with the warm runner switched off,",
        "`ANSIBLE_ACCEL_RUNNER=0`), **on+bytecode** (the same with `ANSIBLE_ACCEL_BYTECODE=1`), **on+runner**",
        "(`ansible-accel ansible-playbook` as it comes: modules start in a fork of a warm interpreter) and",
        "**mitogen** (plain `ansible-playbook` with Mitogen's `mitogen_linear` strategy, accelerator off).",
        "Each repeat runs every mode once, the order rotating between repeats; every task result of every",
        "host and the printed output are compared with the first \"off\" run (after normalising times and",
        "temporary names) and must be identical, except Mitogen's, whose differences are listed below each",
        "playbook (reported, not failures). Medians of the repeats, spread = (max − min) ÷ median,",
        "*vs off* / *vs mitogen* = median ÷ that mode's median (below 1: faster).",
        "Tree CPU: every process the run started, including those that outlived the process that started",
        "them (the benchmark is their subreaper and reaps them all before the run ends). It splits into the",
        "controller process (`ansible-playbook`), its forked workers (task executor, action plugins, payload",
        "building, connection), the module processes the workers waited for (with the warm runner: mostly",
        "the small client that hands a module to a runner), the warm runners with the module processes",
        "they fork (*runners*), and any other process that outlived its parent (*other*: an async task's",
        "background job, which detaches itself, or a Mitogen process).",
        *(["", f"cgroup CPU: {'read from ' + cgroup['note'] if cgroup.get('file') else 'not read (' + cgroup['note'] + ')'}."]
          if cgroup else []),
        "",
        "| playbook | ansible-core | hosts × tasks | mode | runs | wall | spread | vs off | vs mitogen | tree CPU | spread "
        "| vs off | vs mitogen | controller CPU | workers CPU | modules CPU | runners CPU | other CPU | results |",
        "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for playbook in report["runs"]:
        rel, mtg = ratios(playbook), ratios(playbook, "mitogen")
        for mode in _modes(playbook):
            s = playbook[mode]
            out.append(
                f"| {playbook['playbook']} | {playbook['ansible_core']} (Python {playbook['python']}) "
                f"| {playbook['hosts']} × {playbook['tasks']} | {LABELS[mode]} | {s['runs']} | {s['wall_median']:.1f}s "
                f"| {_spread(s['wall_spread'])} | {_ratio(rel.get(mode), 'wall')} | {_ratio(mtg.get(mode), 'wall')} "
                f"| {s['cpu_median']:.1f}s | {_spread(s['cpu_spread'])} | {_ratio(rel.get(mode), 'cpu')} "
                f"| {_ratio(mtg.get(mode), 'cpu')} | {_seconds(s, 'controller_cpu')} | {_seconds(s, 'workers_cpu')} "
                f"| {_seconds(s, 'modules_cpu')} | {_seconds(s, 'runners_cpu')} | {_seconds(s, 'other_cpu')} "
                f"| {_results(playbook, mode, markdown=True)} |"
            )
    for playbook in report["runs"]:
        out += _playbook_section(playbook)
    return "\n".join(out) + "\n"


def _playbook_section(playbook: dict) -> list[str]:
    out = ["", f"## {playbook['playbook']} on ansible-core {playbook['ansible_core']}", "",
           f"{playbook['hosts']} hosts × {playbook['tasks']} tasks ({playbook['task_results']} task results per run),"
           f" {playbook['distinct_actions']} distinct actions. Every run, in order (*last process*: seconds from"
           " `ansible-playbook`'s exit until the last process it left had ended):", "",
           "| # | mode | started (UTC) | wall | tree CPU | controller | workers | modules | runners | other "
           "| last process | cgroup CPU | load before → after | exit |",
           "|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|"]
    for index, r in enumerate(playbook["sequence"], 1):
        out.append(f"| {index} | {LABELS[r['mode']]} | {r['started']} | {r['wall']:.1f}s | {r['cpu']:.1f}s "
                   f"| {r['controller_cpu']:.1f}s | {r['workers_cpu']:.1f}s | {r['modules_cpu']:.1f}s "
                   f"| {_maybe(r.get('runners_cpu'))} | {_maybe(r.get('other_cpu'))} | {_maybe(r.get('settle'))} "
                   f"| {_maybe(r.get('cgroup_cpu'))} | {_load(r['load_before'])} → {_load(r['load_after'])} "
                   f"| {r['returncode']}{', ' + str(len(r['left_behind'])) + ' left behind' if r.get('left_behind') else ''} |")
    for mode, reason in playbook.get("skipped", {}).items():
        out += ["", f"No {LABELS[mode]} runs: {reason}."]
    for mode in ("on", "bytecode", "runner"):
        counters = playbook.get("counters_by_mode", {}).get(mode)
        if counters:
            out += ["", f"Native calls in the first {LABELS[mode]} run: " + ", ".join(
                f"{p} {c['native']}" + (f" (+{c['fallback']} fallbacks)" if c["fallback"] else "")
                for p, c in counters.items() if c["native"] or c["fallback"]) + "."]
    events = playbook.get("bytecode_events")
    if events:
        out += ["", f"Bytecode events in the first {LABELS['bytecode']} run: " + ", ".join(f"{k}: {v}" for k, v in events.items()) + "."]
    firsts = {}
    for r in playbook["sequence"]:
        firsts.setdefault(r["mode"], r)
    for mode, r in firsts.items():
        if r.get("outlived"):
            out += ["", f"Processes that outlived their parent (reaped by the benchmark) in the first {LABELS[mode]} run: "
                    + ", ".join(f"`{name}` × {count} ({cpu:.1f}s)" for name, (count, cpu) in r["outlived"].items()) + "."]
    reported = playbook.get("reported")
    if reported:
        version = f" {playbook['mitogen_version']}" if playbook.get("mitogen_version") else ""
        out += ["", f"### Mitogen{version}: how its results differ from the first off run (reported, not failures)", ""]
        out += [f"- {r['difference'][:600]} ({', '.join(r['runs'])})" for r in reported]
    if playbook.get("profile"):
        mode = LABELS.get(playbook.get("profile_mode") or "on", "on")
        out += ["", f"### Where the time goes (cProfile, {mode})", "", "```", *playbook["profile"], "```"]
    out += [""] + [f"- PROBLEM: {p[:600]}" for p in playbook["problems"]] if playbook["problems"] else []
    return out


def _maybe(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}s"


def _load(values: list[float] | None) -> str:
    return f"{values[0]:.2f}" if values else "?"


# --- the profile -----------------------------------------------------------------------------


def _readable(path: str) -> bool:
    try:
        pstats.Stats(path)
    except Exception:  # noqa: BLE001 - a torn or empty profile is left out
        return False
    return True


def _table(stats: pstats.Stats, key: int, top: int, title: str) -> list[str]:
    """``key``: 2 own time, 3 cumulative time (pstats' tuple order)."""
    entries = sorted(stats.stats.items(), key=lambda item: item[1][key], reverse=True)[:top]
    lines = [title, f"{'own s':>8} {'cum s':>8} {'calls':>10}  function"]
    for (filename, line, name), (_, calls, own, cumulative, _) in entries:
        lines.append(f"{own:>8.2f} {cumulative:>8.2f} {calls:>10}  {_where(filename)}:{line}({name})")
    return lines


def _where(filename: str) -> str:
    return filename.split("site-packages/")[-1] if "site-packages/" in filename else filename


def _sampled_table(rows: list, top: int, title: str) -> list[str]:
    lines = [title, f"{'CPU s':>8}  function"]
    lines += [f"{seconds:>8.2f}  {_where(filename)}:{line}({name})" for filename, line, name, seconds in rows[:top]]
    return lines


def profile_lines(directory: str, top: int = 20) -> list[str]:
    """The controller's top functions by own and by cumulative CPU time (sampled, all its
    threads), then the workers' by own time (cProfile)."""
    lines = []
    sampled = os.path.join(directory, "controller-sampled.json")
    if os.path.exists(sampled):
        with open(sampled) as handle:
            data = json.load(handle)
        threads = ", ".join(f"{name} {seconds:.1f}s" for name, seconds in
                            sorted(data["threads"].items(), key=lambda item: -item[1]))
        lines += [f"controller process, sampled every {data['interval'] * 1000:.0f} ms of each thread's CPU clock "
                  f"({data['samples']} samples): {sum(data['threads'].values()):.1f}s CPU; by thread: {threads}", ""]
        lines += _sampled_table(data["own"], top, "controller, top by own CPU time (the Python function running, with what it calls in C):") + [""]
        lines += _sampled_table(data["cumulative"], top, "controller, top by cumulative CPU time:") + [""]
    files = [f for f in sorted(glob.glob(os.path.join(directory, "worker-*.prof"))) if _readable(f)]
    if files:
        stats = pstats.Stats(*files)
        lines += [f"{len(files)} worker processes: {stats.total_tt:.1f}s CPU profiled by cProfile (module processes are not profiled)", ""]
        lines += _table(stats, 2, top, "workers, top by own time:") + [""]
        lines += _table(stats, 3, top, "workers, top by cumulative time:")
    return lines or ["(no profile written)"]
