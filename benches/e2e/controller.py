"""Run an ansible console script in this process and record what the controller itself cost.

``python controller.py --rusage FILE [--workers FILE] [--profile DIR] SCRIPT ARGS...``

``SCRIPT`` is ``ansible-playbook`` or ``ansible-accel`` from the same virtual environment; it
runs as ``__main__`` here (``ansible-accel ansible-playbook`` runs the playbook in-process too),
so at exit ``RUSAGE_SELF`` is the controller process's own CPU time and ``RUSAGE_CHILDREN`` that
of the workers it forked and the module processes under them.

With ``--workers FILE``: every worker ``multiprocessing`` forks appends one JSON line when it
finishes, its own CPU time (``self_cpu``) and that of the module processes it waited for
(``children_cpu``), so the tree's CPU splits into controller, workers and modules.

With ``--profile DIR``: the controller's CPU by function over all its threads, sampled
(``sampler.py``: ``DIR/controller-sampled.json``), and cProfile of every worker ``multiprocessing``
forks from it (``DIR/worker-<pid>.prof``, written when the worker finishes, timed in CPU time:
``time.process_time``), so waiting on workers and modules does not count.
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

from sampler import CpuSampler  # beside this script, which is sys.path[0]


class _Token:
    """Weak-referenceable owner for ``register_after_fork``."""


_token = _Token()


def _write_rusage(path: str) -> None:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    with open(path, "w") as handle:
        json.dump({"self_cpu": own.ru_utime + own.ru_stime, "children_cpu": children.ru_utime + children.ru_stime,
                   "self_max_rss_kib": own.ru_maxrss}, handle)


def _profile_worker(directory: str) -> None:
    # Only the forking thread lives on in the worker: the controller's sampler is not there.
    profile = cProfile.Profile(time.process_time)
    path = os.path.join(directory, f"worker-{os.getpid()}.prof")
    multiprocessing.util.Finalize(None, lambda: _dump(profile, path), exitpriority=100)
    profile.enable()


def _record_worker(path: str) -> None:
    def write() -> None:
        own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        line = json.dumps({"pid": os.getpid(), "self_cpu": own.ru_utime + own.ru_stime,
                           "children_cpu": children.ru_utime + children.ru_stime}) + "\n"
        # One write of a short line to a file opened for appending: workers never interleave.
        descriptor = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(descriptor, line.encode())
        finally:
            os.close(descriptor)

    multiprocessing.util.Finalize(None, write, exitpriority=50)


def _dump(profile: cProfile.Profile, path: str) -> None:
    # Written aside then renamed: a worker ansible-core terminates mid-write leaves no torn file.
    profile.disable()
    profile.dump_stats(path + ".part")
    os.replace(path + ".part", path)


def main(argv: list[str]) -> None:
    rusage, workers, profile_dir = None, None, None
    while argv and argv[0].startswith("--"):
        option, value, argv = argv[0], argv[1], argv[2:]
        if option == "--rusage":
            rusage = value
        elif option == "--workers":
            workers = value
        elif option == "--profile":
            profile_dir = value
        else:
            raise SystemExit(f"unknown option {option}")
    script, args = argv[0], argv[1:]
    if rusage:
        atexit.register(_write_rusage, rusage)
    sys.argv = [script, *args]
    if workers:
        multiprocessing.util.register_after_fork(_token, lambda _: _record_worker(workers))
    if profile_dir:
        sampler = CpuSampler()
        multiprocessing.util.register_after_fork(_token, lambda _: _profile_worker(profile_dir))
        controller_pid = os.getpid()

        def dump() -> None:
            if os.getpid() == controller_pid:
                sampler.stop()
                sampler.dump(os.path.join(profile_dir, "controller-sampled.json"))

        atexit.register(dump)
        sampler.start()
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])
