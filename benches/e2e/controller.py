"""Run an ansible console script in this process and record what the controller itself cost.

``python controller.py --rusage FILE [--profile DIR] SCRIPT ARGS...``

``SCRIPT`` is ``ansible-playbook`` or ``ansible-accel`` from the same virtual environment; it
runs as ``__main__`` here (``ansible-accel ansible-playbook`` runs the playbook in-process too),
so at exit ``RUSAGE_SELF`` is the controller process's own CPU time and ``RUSAGE_CHILDREN`` that
of the workers it forked and the module processes under them.

With ``--profile DIR``: cProfile of the controller (``DIR/controller.prof``) and of every worker
``multiprocessing`` forks from it (``DIR/worker-<pid>.prof``, written when the worker finishes),
timed in CPU time (``time.process_time``), so waiting on workers and modules does not count.
"""

from __future__ import annotations

import atexit
import cProfile
import json
import multiprocessing.util
import os
import resource
import runpy
import sys
import time


class _Token:
    """Weak-referenceable owner for ``register_after_fork``."""


_token = _Token()
_profiles: dict[str, cProfile.Profile] = {}


def _write_rusage(path: str) -> None:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    with open(path, "w") as handle:
        json.dump({"self_cpu": own.ru_utime + own.ru_stime, "children_cpu": children.ru_utime + children.ru_stime,
                   "self_max_rss_kib": own.ru_maxrss}, handle)


def _profile_worker(directory: str) -> None:
    # The forked worker inherits the controller's running profiler: stop it, start its own.
    inherited = _profiles.pop("controller", None)
    if inherited is not None:
        inherited.disable()
    profile = cProfile.Profile(time.process_time)
    path = os.path.join(directory, f"worker-{os.getpid()}.prof")
    multiprocessing.util.Finalize(None, lambda: _dump(profile, path), exitpriority=100)
    profile.enable()


def _dump(profile: cProfile.Profile, path: str) -> None:
    # Written aside then renamed: a worker ansible-core terminates mid-write leaves no torn file.
    profile.disable()
    profile.dump_stats(path + ".part")
    os.replace(path + ".part", path)


def main(argv: list[str]) -> None:
    rusage, profile_dir = None, None
    while argv and argv[0].startswith("--"):
        option, value, argv = argv[0], argv[1], argv[2:]
        if option == "--rusage":
            rusage = value
        elif option == "--profile":
            profile_dir = value
        else:
            raise SystemExit(f"unknown option {option}")
    script, args = argv[0], argv[1:]
    if rusage:
        atexit.register(_write_rusage, rusage)
    sys.argv = [script, *args]
    if profile_dir:
        profile = _profiles["controller"] = cProfile.Profile(time.process_time)
        multiprocessing.util.register_after_fork(_token, lambda _: _profile_worker(profile_dir))

        def dump() -> None:
            if "controller" in _profiles:
                _dump(profile, os.path.join(profile_dir, "controller.prof"))

        atexit.register(dump)
        profile.enable()
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])
