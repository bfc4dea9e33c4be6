"""``python -m benches [--quick] [--json FILE] [ENGINE...]``: the ``bench_*.py`` modules'
``run(quick)`` in this interpreter, one table.

This is one interpreter's part of a run; ``python -m benches.suite`` (``make bench``,
``ansible-accel bench``) runs it under every ansible-core and gathers the results.
Exit status 1 when a row's outputs differ or a benchmark module fails.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import pkgutil
import sys
import traceback

from . import _harness


def engines() -> list[str]:
    """The engine names, from the ``bench_<engine>.py`` files beside this one."""
    here = os.path.dirname(os.path.abspath(__file__))
    return sorted(info.name.removeprefix("bench_") for info in pkgutil.iter_modules([here]) if info.name.startswith("bench_"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="benches")
    parser.add_argument("--quick", action="store_true", help="small inputs, few repeats")
    parser.add_argument("--json", metavar="FILE", help="also write the rows (and any failure) as JSON")
    parser.add_argument("only", nargs="*", help="engine names (default: all)")
    options = parser.parse_args(argv)
    from ansible.release import __version__

    python = sys.version.split()[0]
    print(f"== benchmarks on ansible-core {__version__}, Python {python}", flush=True)
    rows: list[_harness.Row] = []
    errors: dict[str, str] = {}
    for name in engines():
        if options.only and name not in options.only:
            continue
        try:
            module = importlib.import_module(f"benches.bench_{name}")
            new_rows = module.run(options.quick)
        except Exception:  # noqa: BLE001 - one broken benchmark must not hide the others
            errors[name] = traceback.format_exc()
            print(f"FAILURE: benchmark {name} raised:\n{errors[name]}", file=sys.stderr, flush=True)
            continue
        for row in new_rows:
            row.ansible_core, row.python = __version__, python
        rows.extend(new_rows)
    if not rows and not errors:
        print("no benchmark applies to this ansible-core version")
    if options.json:
        with open(options.json, "w") as handle:
            json.dump({"ansible_core": __version__, "python": python, "executable": sys.executable,
                       "rows": [row.to_dict() for row in rows], "errors": errors}, handle, indent=1)
    status = _harness.report(rows)
    return 1 if errors else status


if __name__ == "__main__":
    sys.exit(main())
