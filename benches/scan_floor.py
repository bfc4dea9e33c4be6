"""``python -m benches.scan_floor`` (``make scan-floor``): how far a native import scan can beat
ansible-core's ``compile()`` + ``ModuleDepFinder`` with ruff's parser underneath.

Times, over every ``.py`` file of the installed ansible-core's ``module_utils`` (best of 15
passes): the Python side; ``ansible_accel.finder.scan_imports`` from Python; and, from
``cargo bench --bench scan_floor``, the same scan in plain Rust and ruff's parse alone.  The
parse is the floor: no scan built on this parser can be faster than python / parse times.
"""

from __future__ import annotations

import pathlib
import re
import subprocess
import sys
import time

import ansible
from ansible.release import __version__

# The same inputs and the same work per file as the benchmark's scan rows (both sides keep
# only the two sets of each file's answer).
from .bench_finder import _native_scan, _python_files, _python_scan

PASSES = 15
REPO = pathlib.Path(__file__).resolve().parent.parent


def _best_ms(work, files) -> float:
    best = float("inf")
    for _ in range(PASSES):
        started = time.perf_counter()
        work(files)
        best = min(best, time.perf_counter() - started)
    return best * 1000


def main() -> int:
    root = pathlib.Path(ansible.__file__).parent / "module_utils"
    files = _python_files(root, ("ansible", "module_utils"))
    if _python_scan(files) != _native_scan(files):
        print("the native scan differs from ModuleDepFinder", file=sys.stderr)
        return 1
    python = _best_ms(_python_scan, files)
    native = _best_ms(_native_scan, files)
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    out = subprocess.run(["cargo", "bench", "--quiet", "--bench", "scan_floor", "--", str(root), version],
                         cwd=REPO, check=True, capture_output=True, text=True).stdout
    stages = {name: float(value) for name, value in re.findall(r"^(\w+)_ms ([\d.]+)$", out, re.MULTILINE)}
    print(f"ansible-core {__version__}, Python {sys.version.split()[0]}: {out.splitlines()[0]}")
    print(f"{'stage':<44}{'ms':>9}{'python / stage':>16}")
    print(f"{'compile() + ModuleDepFinder (python)':<44}{python:>9.2f}")
    for label, ms in (("scan_imports from Python", native), ("scan in plain Rust", stages["scan"]),
                      ("ruff parse + drop", stages["parse_drop"]), ("ruff parse alone (the floor)", stages["parse"])):
        print(f"{label:<44}{ms:>9.2f}{python / ms:>15.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
