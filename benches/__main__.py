"""``python -m benches [--quick]``: every ``bench_*.py`` module's ``run(quick)``, one table."""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import sys

from . import _harness


def main() -> int:
    parser = argparse.ArgumentParser(prog="benches")
    parser.add_argument("--quick", action="store_true", help="small inputs, few repeats")
    parser.add_argument("only", nargs="*", help="bench module names (default: all)")
    options = parser.parse_args()
    from ansible.release import __version__

    print(f"== benchmarks on ansible-core {__version__}, Python {sys.version.split()[0]}", flush=True)
    rows: list[_harness.Row] = []
    for info in pkgutil.iter_modules([os.path.dirname(os.path.abspath(__file__))]):
        if not info.name.startswith("bench_"):
            continue
        if options.only and info.name.removeprefix("bench_") not in options.only:
            continue
        module = importlib.import_module(f"benches.{info.name}")
        rows.extend(module.run(options.quick))
    if not rows:
        print("no benchmark applies to this ansible-core version")
    return _harness.report(rows)


if __name__ == "__main__":
    sys.exit(main())
