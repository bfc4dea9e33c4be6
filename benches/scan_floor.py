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
from ansible.executor import module_common as mc
from ansible.release import __version__

from ansible_accel.finder import scan_imports

PASSES = 15
REPO = pathlib.Path(__file__).resolve().parent.parent


def _files(root: pathlib.Path) -> list[tuple[str, bytes, bool]]:
    files = []
    for path in sorted(root.rglob("*.py")):
        parts = ("ansible", "module_utils") + path.relative_to(root).with_suffix("").parts
        is_pkg_init = parts[-1] == "__init__"
        files.append((".".join(parts[:-1] if is_pkg_init else parts), path.read_bytes(), is_pkg_init))
    return files


# Both sides keep only the two sets per file, as benches/bench_finder.py's scan rows do (a
# ModuleDepFinder kept alive keeps its tree, which would slow the Python side unfairly).
def _python_pass(files) -> list:
    out = []
    new_style = tuple(int(p) for p in __version__.split(".")[:2]) >= (2, 21)
    for fqn, data, init in files:
        if new_style:
            finder = mc.ModuleDepFinder(fqn, data, is_pkg_init=init)
        else:
            finder = mc.ModuleDepFinder(fqn, mc._compile_module_ast(fqn, data), init)
        out.append((set(finder.submodules), set(finder.optional_imports)))
    return out


def _native_pass(files) -> list:
    out = []
    for fqn, data, init in files:
        scan = scan_imports(data, fqn, init)
        out.append((set(scan.submodules), set(scan.optional_imports)))
    return out


def _best_ms(work, files) -> float:
    best = float("inf")
    for _ in range(PASSES):
        started = time.perf_counter()
        work(files)
        best = min(best, time.perf_counter() - started)
    return best * 1000


def main() -> int:
    root = pathlib.Path(ansible.__file__).parent / "module_utils"
    files = _files(root)
    if _python_pass(files) != _native_pass(files):
        print("the native scan differs from ModuleDepFinder", file=sys.stderr)
        return 1
    python = _best_ms(_python_pass, files)
    native = _best_ms(_native_pass, files)
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
