"""The ``ansible-accel`` command: status, config, and running ansible commands accelerated."""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys

from . import _activation

# ansible command name -> module under ansible.cli holding its main()
ANSIBLE_COMMANDS = {
    "ansible": "adhoc",
    "ansible-playbook": "playbook",
    "ansible-console": "console",
    "ansible-galaxy": "galaxy",
    "ansible-pull": "pull",
    "ansible-inventory": "inventory",
    "ansible-doc": "doc",
}


def format_status(report: dict) -> str:
    """``status()`` for people: the versions, then one aligned row per path."""
    lines = [
        f"ansible-accel {_version()}",
        f"ansible-core  {report['ansible_core'] or 'not importable'}"
        f" ({_activation.support_word(report['ansible_core']) if report['supported'] else 'not supported'})",
        f"installed     {'yes' if report['installed'] else 'no'}"
        + (f" ({report['reason']})" if report.get("reason") else ""),
        "",
    ]
    rows = [("path", "active", "native", "fallbacks", "top fallback reason / why inactive")]
    for path in _activation.PATH_MODULES:
        info = report[path]
        fallbacks = info.get("fallback", {})
        rows.append(
            (path, "yes" if info["active"] else "no", str(info.get("native", 0)), str(sum(fallbacks.values())),
             info["reason"] or _top_fallback(fallbacks))
        )  # fmt: skip
    module_side = report.get("module_side")
    if module_side:  # the same paths inside the modules the warm runners run
        for path in ("argspec", "no_log", "masking"):
            info = module_side.get(path) or {}
            fallbacks = {**module_side.get("fallback", {}), **info.get("fallback", {})}
            controller_side = report.get(path) or {}
            active = module_side["active"] and controller_side.get("active", False)
            why = module_side.get("reason") or (None if active else controller_side.get("reason"))
            rows.append(
                (f"{path} (modules)", "yes" if active else "no", str(info.get("native", 0)),
                 str(sum(fallbacks.values())), why or _top_fallback(fallbacks))
            )  # fmt: skip
    path_w, active_w, native_w, fallback_w = (max(len(row[column]) for row in rows) for column in range(4))
    for name, active, native, fallback_count, detail in rows:
        line = f"{name:<{path_w}}  {active:<{active_w}}  {native:>{native_w}}  {fallback_count:>{fallback_w}}  {detail}"
        lines.append(line.rstrip())
    return "\n".join(lines)


def _top_fallback(fallbacks: dict[str, int]) -> str:
    """The most frequent fallback reason, its count, and how many other reasons there are."""
    if not fallbacks:
        return ""
    reason, count = max(sorted(fallbacks.items()), key=lambda item: item[1])
    others = len(fallbacks) - 1
    return f"{reason} ({count})" + (f", and {others} other reason{'s' if others > 1 else ''}" if others else "")


def config_lines() -> str:
    plugin_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ansible_plugins", "callback")
    return f"""\
# ansible-accel: switch the accelerator on from ansible.cfg (execution environments, AWX).
# The callback is loaded by the controller before any worker forks.  If you already set
# callback_plugins or callbacks_enabled, add these values to your lists.
[defaults]
callback_plugins = {plugin_dir}
callbacks_enabled = ansible_accel
# ad-hoc `ansible` loads enabled callbacks only with this set:
bin_ansible_callbacks = True

# The same as environment variables:
#   ANSIBLE_CALLBACK_PLUGINS={plugin_dir}
#   ANSIBLE_CALLBACKS_ENABLED=ansible_accel
#   ANSIBLE_LOAD_CALLBACK_PLUGINS=True
"""


def _version() -> str:
    from . import __version__

    return __version__


BENCH_SOURCE_HELP = """\
The benchmarks are not in the wheel (it holds only the ansible_accel package); they are in the
source distribution and the git repository, under benches/.  Get them, for example with
  pip download --no-deps --no-binary :all: ansible-accel==VERSION && tar xf ansible_accel-VERSION.tar.gz
and run `ansible-accel bench --source ansible_accel-VERSION` (or from inside that directory)."""


def find_bench_source(start: str) -> str | None:
    """The directory holding ``benches/suite.py``: ``start`` or one of its parents."""
    directory = os.path.abspath(start)
    while True:
        if os.path.isfile(os.path.join(directory, "benches", "suite.py")):
            return directory
        parent = os.path.dirname(directory)
        if parent == directory:
            return None
        directory = parent


def run_bench(source: str | None, args: list[str]) -> int:
    """``python -m benches.suite ARGS`` from a source tree, measuring the ansible_accel installed
    beside this interpreter (and the ansible-core installed there) unless ``--python`` says otherwise."""
    import subprocess

    root = find_bench_source(source or os.getcwd())
    if root is None:
        print(f"ansible-accel bench: no benches/suite.py in {source or 'the current directory or its parents'}.\n"
              + BENCH_SOURCE_HELP, file=sys.stderr)
        return 2
    if "--python" not in args:
        args = ["--python", sys.executable, *args]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])))
    return subprocess.run([sys.executable, "-m", "benches.suite", *args], cwd=os.getcwd(), env=env).returncode


def run_ansible(command: str, args: list[str]) -> int:
    """Run an ansible command in this process with the accelerator on; its exit code."""
    _activation.install()
    module = importlib.import_module(f"ansible.cli.{ANSIBLE_COMMANDS[command]}")
    # ansible-core reads sys.argv[0] too (``--version``'s executable location, ansible-pull,
    # the ssh connection's askpass helper): make it the command's own script beside ours.
    argv0 = os.path.join(os.path.dirname(os.path.abspath(sys.argv[0])), command) if sys.argv and sys.argv[0] else ""
    argv = [argv0 if os.path.isfile(argv0) else command, *args]
    saved_argv, sys.argv = sys.argv, argv
    try:
        module.main(list(argv))
    except SystemExit as ex:
        code = ex.code
        if code is None:
            return 0
        if isinstance(code, int):
            return code
        print(code, file=sys.stderr)
        return 1
    finally:
        sys.argv = saved_argv
    return 0


# The status of a process killed by SIGPIPE as shells report it (128 + 13), for output cut off by
# a closed pipe (``ansible-accel status | head -1``).  Exiting rather than dying by the signal
# lets atexit work (the ANSIBLE_ACCEL_STATS file of a wrapped command) still run.
EXIT_BROKEN_PIPE = 141

OWN_COMMANDS = ("status", "config", "bench")


def main(argv: list[str] | None = None) -> int:
    try:
        try:
            return _main(sys.argv[1:] if argv is None else argv)
        finally:
            sys.stdout.flush()  # a closed pipe shows here, not as a traceback at interpreter exit
    except BrokenPipeError:
        _discard_stdout()
        return EXIT_BROKEN_PIPE


def _discard_stdout() -> None:
    """Point stdout at /dev/null, so that the interpreter's own flush at exit has nowhere to fail."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


class _VersionAction(argparse.Action):
    """``--version``: ansible-accel's version and the ansible-core it would run with."""

    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        core = _activation.core_version()
        support = _activation.support_word(core)
        print(f"ansible-accel {_version()}")
        print(f"ansible-core {core} ({support})" if core else "ansible-core not importable")
        parser.exit()


def _main(argv: list[str]) -> int:
    if argv and argv[0] in ANSIBLE_COMMANDS:
        return run_ansible(argv[0], argv[1:])
    parser = argparse.ArgumentParser(
        prog="ansible-accel",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Native hot paths for ansible-core.",
        epilog="ansible-accel ANSIBLE-COMMAND ARGS... runs an ansible command accelerated, one of:\n  "
        + ", ".join(ANSIBLE_COMMANDS),
    )
    parser.add_argument("--version", action=_VersionAction, help="show the versions of ansible-accel and ansible-core")
    sub = parser.add_subparsers(dest="command", required=True)
    status_cmd = sub.add_parser("status", help="switch the accelerator on here and show what is active")
    status_cmd.add_argument("--json", action="store_true", help="print status() as JSON")
    sub.add_parser("config", help="print the ansible.cfg lines that switch the accelerator on")
    bench_cmd = sub.add_parser(
        "bench",
        help="time every hot path against ansible-core's pure Python (needs the benches/ sources)",
        description="Runs benches/suite.py from a source tree against this interpreter's ansible-core and "
        "ansible-accel; the remaining arguments go to it (--quick, --out DIR, --e2e, --python PY, engine names).",
    )
    bench_cmd.add_argument("--source", help="the source tree holding benches/ (default: here or a parent)")
    if argv and not argv[0].startswith("-") and argv[0] not in OWN_COMMANDS:
        parser.error(
            f"unknown command {argv[0]!r} (choose from {', '.join(OWN_COMMANDS)}, "
            f"or an ansible command to run accelerated: {', '.join(ANSIBLE_COMMANDS)})"
        )
    if argv and argv[0] == "bench":
        known, rest = bench_cmd.parse_known_args(argv[1:])
        return run_bench(known.source, rest)
    options = parser.parse_args(argv)
    if options.command == "status":
        report = _activation.install()
        print(json.dumps(report, indent=2, sort_keys=True) if options.json else format_status(report))
        return 0
    if options.command == "config":
        print(config_lines(), end="")
        return 0
    parser.error(f"unknown command {options.command}")
    return 2


if __name__ == "__main__":
    sys.exit(main())
