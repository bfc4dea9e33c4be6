"""Differential fuzzing against the installed ansible-core: shared settings and case counts.

``ANSIBLE_ACCEL_FUZZ_EXAMPLES=N`` (set by ``make fuzz``) runs N random cases per engine's main
test; without it (``make test``) each test runs a small derandomized (seeded) subset.  Every
generated case is counted per engine and the counts are printed at the end of the session (and
appended as JSON lines to ``ANSIBLE_ACCEL_FUZZ_REPORT`` when that is set, with the budget, the
session's seconds and pytest's exit status: 0 all passed, 1 a test failed, 2 interrupted (a
SIGINT still reports the cases run so far)).
"""

from __future__ import annotations

import collections
import json
import os
import signal
import sys
import time

from hypothesis import HealthCheck, settings

EXAMPLES = int(os.environ.get("ANSIBLE_ACCEL_FUZZ_EXAMPLES") or 0)
QUICK_EXAMPLES = 40

STARTED = time.monotonic()
if EXAMPLES:
    # A long run started in the background inherits an ignored SIGINT from the shell: take it
    # back, so that interrupting the run still reports the cases run until then.
    signal.signal(signal.SIGINT, signal.default_int_handler)


class _Cases(collections.Counter):
    """Cases run per engine; a long run says how far it got every 10,000 cases (on stderr)."""

    def __setitem__(self, engine: str, count: int) -> None:
        super().__setitem__(engine, count)
        if EXAMPLES and count % 10_000 == 0:
            print(f"[fuzz] {engine}: {count} cases, {time.monotonic() - STARTED:.0f} s", file=sys.stderr, flush=True)


#: engine -> generated cases run, and engine -> (difference kind -> count) for counted fallbacks
CASES: collections.Counter[str] = _Cases()
FALLBACKS: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)


def fuzz_settings(share: float = 1.0, quick: int = QUICK_EXAMPLES) -> settings:
    """Hypothesis settings: ``share`` of the fuzz budget, or ``quick`` seeded examples."""
    common = dict(deadline=None, database=None, suppress_health_check=list(HealthCheck), print_blob=True)
    if EXAMPLES:
        return settings(max_examples=max(1, int(EXAMPLES * share)), **common)
    return settings(max_examples=quick, derandomize=True, **common)


def pytest_terminal_summary(terminalreporter, exitstatus):
    if not CASES:
        return
    seconds = round(time.monotonic() - STARTED)
    python = f"py{sys.version_info.major}{sys.version_info.minor}"
    terminalreporter.section("fuzz cases run")
    for engine, count in sorted(CASES.items()):
        extra = dict(FALLBACKS.get(engine, {}))
        terminalreporter.write_line(f"{python} {engine}: {count} cases (budget {EXAMPLES or 'quick'}, session {seconds} s)" + (f"; native fallbacks: {extra}" if extra else ""))
    report = os.environ.get("ANSIBLE_ACCEL_FUZZ_REPORT")
    if report:
        with open(report, "a", encoding="utf-8") as out:
            for engine, count in sorted(CASES.items()):
                out.write(json.dumps({"python": python, "engine": engine, "cases": count, "budget": EXAMPLES, "session_seconds": seconds, "exitstatus": int(exitstatus), "fallbacks": dict(FALLBACKS.get(engine, {}))}) + "\n")
