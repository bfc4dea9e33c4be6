"""``python -m benches.runner_floor`` (``make runner-floor``): how far any warm start of a module
can beat a fresh interpreter, module by module.

For each module of the runner benchmark (``bench_runner.MODULES``, with its arguments), in one
run, side by side:

- *fresh*: its AnsiBallZ script run as the local connection runs it (``/bin/sh -c 'PYTHON
  SCRIPT'``), CPU of the shell, the interpreter and every process it ran;
- *floor*: the module's own run and nothing else: ``main()`` of the module, imported ahead
  with everything it imports (one run of it in this process first, output thrown away), called
  in a child forked from this process with the script's arguments, CPU of the child and of every
  process it ran.  No shell, no interpreter start, no import, no payload to decode, write or read,
  no runner: less than any way of starting the module can cost, the forked runner included.

``fresh ÷ floor`` is the most a start can gain for that module: a module whose own run costs
more than a twentieth of a fresh interpreter's start cannot start 20× cheaper, however it is
started.  ``fresh ÷ (floor + shell)`` adds what the local connection's ``/bin/sh -c`` costs
(``/bin/sh -c /bin/true`` less ``/bin/true`` alone), which every command it runs pays, the
runner's client included, and *files*: what the script does on disk around its module in any
run that leaves what a fresh run leaves (its zip decoded from the script, written into a new
temporary directory, the directory removed; in a forked child, less an empty child's fork and
exit).  The child's result (exit status and JSON, times of day left out) must equal the fresh
run's, or the row fails.
"""

from __future__ import annotations

import ast
import importlib
import io
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile

from . import bench_runner

RUNS = 20


def _module_name(module: str) -> str:
    """The Python module a module name is imported as (builtin or collection)."""
    if "." not in module:
        return f"ansible.modules.{module}"
    namespace, collection, name = module.split(".")
    return f"ansible_collections.{namespace}.{collection}.plugins.modules.{name}"


def _call_value(script: bytes, name: bytes):
    """The value of ``name=`` in the wrapper's call at the end of the script (a literal)."""
    start = script.rindex(b"\n" + name + b"=") + len(name) + 2
    end = script.index(b"\n", start)
    return ast.literal_eval(script[start:end].rstrip(b",").decode())


def _child_run(main, basic, arguments: tuple[bytes, str], out_fd: int, names_fd: int | None = None) -> None:
    """In a forked child: the module's main() with ``arguments``, its output on ``out_fd`` (and
    the names in ``sys.modules`` after it on ``names_fd``)."""
    os.dup2(out_fd, 1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), write_through=True)
    basic._ANSIBLE_ARGS, basic._ANSIBLE_PROFILE = arguments
    status = 0
    try:
        main()
    except SystemExit as ex:
        status = ex.code if isinstance(ex.code, int) else (0 if ex.code is None else 1)
    except BaseException:  # noqa: BLE001 - a failure shows as a differing result
        status = 99
    try:
        sys.stdout.flush()
        if names_fd is not None:
            os.write(names_fd, json.dumps(list(sys.modules)).encode())
    finally:
        os._exit(status)


def _late_imports(main, basic, arguments: tuple[bytes, str]) -> list[str]:
    """The modules a child running main() has that this process has not, in import order."""
    with tempfile.TemporaryFile() as names:
        pid = os.fork()
        if pid == 0:
            try:
                with tempfile.TemporaryFile() as out:
                    _child_run(main, basic, arguments, out.fileno(), names.fileno())
            finally:
                os._exit(1)
        os.waitpid(pid, 0)
        names.seek(0)
        return [name for name in json.loads(names.read() or b"[]") if name not in sys.modules and name != "__main__"]


def _floor_run(main, basic, arguments: tuple[bytes, str]) -> tuple[float, object]:
    with tempfile.TemporaryFile() as out:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        pid = os.fork()
        if pid == 0:
            _child_run(main, basic, arguments, out.fileno())
        _, status = os.waitpid(pid, 0)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        out.seek(0)
        data = out.read()
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    try:
        result = json.loads(data)
        for key in bench_runner._VOLATILE_KEYS:
            result.pop(key, None)
    except ValueError:
        result = ("not JSON", data)
    return cpu, (os.waitstatus_to_exitcode(status), result)


def _children_cpu(argv: list[str]) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(argv, check=True, cwd="/")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def shell_cpu() -> float:
    """What the local connection's ``/bin/sh -c`` adds to any command it runs: ``/bin/sh -c
    /bin/true`` less ``/bin/true`` started directly (medians)."""
    through, alone = [], []
    for _ in range(2 * RUNS):
        through.append(_children_cpu(["/bin/sh", "-c", "/bin/true"]))
        alone.append(_children_cpu(["/bin/true"]))
    return max(statistics.median(through) - statistics.median(alone), 0.0)


def payload_files_cpu(script: bytes) -> float:
    """What every run of an AnsiBallZ script does to disk before and after its module, in a child
    forked from this process (medians): its zip decoded from the script's base64 text, written
    into a new temporary directory, and the directory removed."""
    import base64
    import shutil

    encoded = _call_value(script, b"zip_data")
    spent = []
    for _ in range(RUNS):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        pid = os.fork()
        if pid == 0:
            status = 1
            try:
                directory = tempfile.mkdtemp(prefix="floor_payload_")
                with open(os.path.join(directory, "payload.zip"), "wb") as handle:
                    handle.write(base64.b64decode(encoded))
                shutil.rmtree(directory)
                status = 0
            finally:
                os._exit(status)
        _, status = os.waitpid(pid, 0)
        if status:
            raise RuntimeError("the payload files child failed")
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        spent.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    # less an empty child's own fork and exit, which the floor's child pays already
    empty = []
    for _ in range(RUNS):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        empty.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    return max(statistics.median(spent) - statistics.median(empty), 0.0)


def main(argv: list[str] | None = None) -> int:
    global RUNS
    import argparse

    parser = argparse.ArgumentParser(prog="python -m benches.runner_floor", description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=RUNS, help="runs of each kind per module (default: %(default)s)")
    parser.add_argument("only", nargs="*", help="module names (default: the runner benchmark's)")
    options = parser.parse_args(argv)
    RUNS = options.runs
    from ansible.module_utils import basic

    failed = 0
    from ansible.release import __version__

    print(f"ansible-core {__version__} on Python {sys.version.split()[0]}; {RUNS} runs each, alternating; CPU per run in ms "
          f"(load average at the start {os.getloadavg()[0]:.2f})")
    shell = shell_cpu() * 1000
    print(f"the shell the local connection starts every command with: {shell:.2f} ms")
    print(f"{'module':<30} {'fresh':>9} {'floor':>9} {'files':>7} {'fresh÷floor':>12} {'fresh÷(floor+shell+files)':>26}  result")
    with tempfile.TemporaryDirectory() as work:
        for module, args in bench_runner.MODULES:
            if options.only and module not in options.only:
                continue
            script = bench_runner._build(module, args, work)
            if script is None:
                print(f"{module:<30} not installed here")
                continue
            path = os.path.join(work, f"{module}.py")
            with open(path, "wb") as handle:
                handle.write(script)
            arguments = (_call_value(script, b"params").encode(), _call_value(script, b"profile"))
            imported = importlib.import_module(_module_name(module))
            # What main() imports late, imported here once (names read from a child that ran it),
            # so that every child starts with it; main() itself never runs here, whose state
            # (ansible-core 2.22's secrets already seen, for one) would reach the children.
            for name in _late_imports(imported.main, basic, arguments):
                try:
                    importlib.import_module(name)
                except Exception:  # noqa: BLE001 - a module a child may import, not this process
                    pass
            command = f"{sys.executable} {path}"
            fresh, floor = [], []
            fresh_result = floor_result = None
            for _ in range(RUNS):
                cpu, fresh_result = bench_runner._run(command, None)
                fresh.append(cpu)
                cpu, floor_result = _floor_run(imported.main, basic, arguments)
                floor.append(cpu)
            same = fresh_result == floor_result
            failed += not same
            f, g = statistics.median(fresh) * 1000, statistics.median(floor) * 1000
            files = payload_files_cpu(script) * 1000
            print(f"{module:<30} {f:9.2f} {g:9.2f} {files:7.2f} {f / g:11.1f}× {f / (g + shell + files):25.1f}×  "
                  f"{'equal' if same else 'DIFFERS'}")
            if not same:
                print(f"    fresh: {fresh_result!r:.300}\n    floor: {floor_result!r:.300}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
