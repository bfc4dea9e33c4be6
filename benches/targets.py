"""The speed targets set for the hot paths, checked against a run's rows.

Each target names the rows it covers (a benchmark group and the start of the row names), and
the least speed-up (pure-Python median ÷ native median) every such row must reach.  The table
says, per ansible-core, how many rows there were, the lowest and median ratio, and how many met
the target; a target whose rows all met it says "met".  Nothing here fails a run: speed is
reported, never asserted (outputs that differ are what fail a run).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass


@dataclass(frozen=True)
class Target:
    what: str
    group: str
    prefixes: tuple[str, ...]
    least: float

    def covers(self, row: dict) -> bool:
        return row["group"] == self.group and row["ratio"] is not None and row["name"].startswith(self.prefixes)


TARGETS = (
    Target("`scan_imports` vs `compile()` + `ModuleDepFinder`", "finder", ("scan:",), 20),
    Target("`recursive_finder` cold (fresh process, records on disk)", "finder", ("recursive_finder cold:",), 20),
    Target("`recursive_finder` warm", "finder", ("recursive_finder warm:",), 100),
    Target("`modify_module`", "finder", ("modify_module",), 10),
    Target("`validate()`, real module specs (user, file, copy, uri)", "argspec",
           ("validate real user", "validate real file", "validate real copy", "validate real uri"), 10),
    Target("`validate()`, large nested spec (ec2_instance)", "argspec", ("validate real ec2_instance",), 20),
    # 40 % less time is a ratio of 1 / 0.6.
    Target("bytecode: module start-up ≥ 40 % less", "bytecode", ("module start-up on the target",), 1 / 0.6),
)


def checked(rows: list[dict]) -> list[tuple[Target, str, int, float, float, int]]:
    """(target, ansible-core, rows, lowest, median, rows meeting it) for each target and
    ansible-core version that has rows for it."""
    out = []
    for target in TARGETS:
        by_core: dict[str, list[float]] = {}
        for row in rows:
            if target.covers(row):
                by_core.setdefault(row["ansible_core"], []).append(row["ratio"])
        for core, ratios in by_core.items():
            met = sum(1 for r in ratios if r >= target.least)
            out.append((target, core, len(ratios), min(ratios), statistics.median(ratios), met))
    return out


def _verdict(count: int, met: int) -> str:
    return "met" if met == count else f"missed on {count - met} of {count}"


def text(rows: list[dict]) -> list[str]:
    lines = [f"{'target':<62} {'ansible-core':<13} {'rows':>4} {'lowest':>8} {'median':>8}  verdict"]
    for target, core, count, low, mid, met in checked(rows):
        lines.append(f"{target.what + f' ≥ {target.least:.3g}×':<62} {core:<13} {count:>4} "
                     f"{low:>7.1f}x {mid:>7.1f}x  {_verdict(count, met)}")
    return lines


def markdown(rows: list[dict]) -> list[str]:
    lines = ["| target | ansible-core | rows | lowest | median | verdict |", "|---|---|---:|---:|---:|---|"]
    for target, core, count, low, mid, met in checked(rows):
        lines.append(f"| {target.what} ≥ {target.least:.3g}× | {core} | {count} | {low:.1f}× | {mid:.1f}× "
                     f"| {_verdict(count, met)} |")
    return lines
