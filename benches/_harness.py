"""Timing two implementations of the same thing on the same inputs, in one run.

``compare()`` alternates the pure-Python and native callables, takes the median of several
repeats after a warm-up, and checks that both returned equal results.  A row whose results
differ is a failure, never a speed.
"""

from __future__ import annotations

import dataclasses
import gc
import statistics
import sys
import time
import typing as t


@dataclasses.dataclass
class Row:
    group: str
    name: str
    inputs: str
    python_s: float
    native_s: float
    python_spread: float
    native_spread: float
    equal: bool
    # Filled in by ``python -m benches`` (optional, so engine benchmarks never need to).
    ansible_core: str = ""
    python: str = ""

    def to_dict(self) -> dict:
        """The row as JSON-ready data, ratio included (inf becomes None)."""
        data = dataclasses.asdict(self)
        data["ratio"] = self.ratio if self.native_s else None
        return data

    @classmethod
    def from_dict(cls, data: dict) -> Row:
        fields = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in fields})

    @property
    def ratio(self) -> float:
        return self.python_s / self.native_s if self.native_s else float("inf")

    def line(self) -> str:
        verdict = "equal" if self.equal else "DIFFERENT (failure)"
        return (
            f"{self.group:<10} {self.name:<34} {self.inputs:<34} "
            f"py {fmt(self.python_s):>9}  native {fmt(self.native_s):>9}  "
            f"x{self.ratio:>8.1f}  {verdict}"
        )


def fmt(seconds: float) -> str:
    """A duration with a readable unit: 1.23s, 4.56ms, 7.8us."""
    if seconds >= 1:
        return f"{seconds:.2f}s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f}ms"
    return f"{seconds * 1e6:.1f}us"


_fmt = fmt  # the old private name


def _time(fn: t.Callable[[], t.Any], number: int) -> tuple[float, t.Any]:
    # As timeit does: collect first and keep the cyclic collector out of the timed calls, so a
    # collection triggered by one side's allocations is not billed to whichever side runs next.
    gc.collect()
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        start = time.perf_counter()
        for _ in range(number):
            result = fn()
        return (time.perf_counter() - start) / number, result
    finally:
        if was_enabled:
            gc.enable()


def compare(
    group: str,
    name: str,
    inputs: str,
    python: t.Callable[[], t.Any],
    native: t.Callable[[], t.Any],
    *,
    repeat: int = 5,
    number: int = 1,
    same: t.Callable[[t.Any, t.Any], bool] = lambda a, b: a == b,
) -> Row:
    """Time ``python`` against ``native`` (alternating), and check their results agree."""
    _, expected = _time(python, 1)  # warm-up, and the reference result
    _, got = _time(native, 1)
    equal = same(expected, got)
    py_times, native_times = [], []
    for _ in range(repeat):
        py_times.append(_time(python, number)[0])
        native_times.append(_time(native, number)[0])
    row = Row(
        group, name, inputs,
        statistics.median(py_times), statistics.median(native_times),
        _spread(py_times), _spread(native_times), equal,
    )
    print(row.line(), flush=True)
    return row


def _spread(times: list[float]) -> float:
    return (max(times) - min(times)) / statistics.median(times) if times else 0.0


def report(rows: list[Row]) -> int:
    """Exit status for a bench run: 1 when any row's results differed."""
    bad = [r for r in rows if not r.equal]
    for r in bad:
        print(f"FAILURE: results differ: {r.group} {r.name} ({r.inputs})", file=sys.stderr)
    return 1 if bad else 0
