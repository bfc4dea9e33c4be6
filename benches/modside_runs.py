"""A module's run through a warm runner with the module-side paths on and off.

Builds the AnsiBallZ scripts of a few tasks with this environment's ansible-playbook (kept
remote files), starts two runners for this interpreter (``ANSIBLE_ACCEL_MODULE_SIDE`` unset and
``0``), runs each script through both, alternating, and prints the median wall time per run
(the client's request to the module's exit status) and the ratio.  The outputs must be the
same both ways.  Run: ``python -m benches.modside_runs [RUNS]`` (not one of ``make bench``'s
``bench_<engine>.py`` modules: it measures wall time of whole module runs, by hand)."""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.join(os.path.dirname(HERE), "tests", "runner")

TASKS = {
    # argspec heavy: a spec of every kind of option, small result
    "argspec: accel_modside options": (
        "accel_modside: {name: ms-options, pass: ms-pw-one, count: '7', ratio: 0.5, flag: 'yes', mode: slow,"
        " items: 'a,b,c', legacy_name: old, nested: {user: u, secret: ms-nested-two},"
        " servers: [{host: h1, key: ms-key-three}, {host: h2}], repeat: 1}"),
    "argspec: user (choices error)": "user: {name: ms-user, password: ms-user-secret, state: bogus}",
    # no_log heavy: about 1 MB of result holding no_log values
    "no_log: 1 MB result": "accel_modside: {name: ms-big, pass: ms-pw-big, nested: {user: u, secret: ms-two-big}, repeat: 2500}",
}


def main(argv: list[str]) -> int:
    runs = int(argv[0]) if argv else 20
    sys.path.insert(0, TESTS)
    import _runner_support
    import test_modside
    from _runner_support import normalized

    test_modside.TASKS = {f"t{i}": task for i, task in enumerate(TASKS.values())}
    for i, key in enumerate(test_modside.TASKS):
        test_modside.TASKS[key] = TASKS[list(TASKS)[i]].replace("name: ms-", f"name: ms-t{i}-", 1)
    test_modside.TASKS["observe"] = "accel_observe: {label: ms-observe}"

    class Factory:
        def __init__(self, root):
            self.root, self.n = root, 0

        def mktemp(self, name):
            self.n += 1
            path = __import__("pathlib").Path(self.root) / f"{name}{self.n}"
            path.mkdir(mode=0o700)
            return path

    with tempfile.TemporaryDirectory(prefix="bench-modside-") as root:
        factory = Factory(root)
        scripts = test_modside.scripts.__wrapped__(factory)
        runner_script = test_modside.runner_script.__wrapped__()
        generator = test_modside.runners.__wrapped__(factory, scripts, runner_script)
        on, off = next(generator)
        try:
            print(f"{'module run through a warm runner':<34} {'paths off':>10} {'paths on':>10} {'ratio':>7}")
            for i, label in enumerate(TASKS):
                script = scripts[f"t{i}"]
                assert normalized(test_modside.warm(on, script)[1]) == normalized(test_modside.warm(off, script)[1])
                times = {"on": [], "off": []}
                for _ in range(runs):
                    for name, runner in (("off", off), ("on", on)):
                        start = time.perf_counter()
                        test_modside.warm(runner, script)
                        times[name].append(time.perf_counter() - start)
                off_s, on_s = statistics.median(times["off"]), statistics.median(times["on"])
                print(f"{label:<34} {off_s * 1e3:>8.1f}ms {on_s * 1e3:>8.1f}ms {off_s / on_s:>6.2f}x")
            total = _runner_support and test_modside._runner_modside.status(on.rundir, True, runner_script)
            print(f"module-side counts: argspec {total['argspec']['native']} native, no_log {total['no_log']['native']} native,"
                  f" fallbacks {total['argspec']['fallback'] or total['no_log']['fallback'] or 'none'}")
        finally:
            next(generator, None)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
