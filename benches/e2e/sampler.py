"""A CPU-weighted sampling profiler for every thread of one process (the ansible controller).

cProfile cannot profile the controller: since Python 3.12 it is built on ``sys.monitoring``, whose
events come from every thread into one profiler, so the results thread's calls (it unpickles
worker results and runs the callbacks) land inside whatever the main thread's stack holds, and
one process can have only one such profiler.  Instead a background thread wakes every few
milliseconds, reads how much CPU each other thread used since the last look (its own CPU clock)
and charges it to the function that thread is in (own time) and to every function on its stack
(cumulative time).  Waiting costs nothing, so the numbers add up to the threads' CPU time.
"""

from __future__ import annotations

import collections
import json
import sys
import threading
import time

Key = tuple[str, int, str]  # file, first line, function


class CpuSampler:
    def __init__(self, interval: float = 0.005):
        self.interval = interval
        self.own: collections.Counter[Key] = collections.Counter()
        self.cumulative: collections.Counter[Key] = collections.Counter()
        self.threads: collections.Counter[str] = collections.Counter()  # CPU per thread name
        self.samples = 0
        self._clocks: dict[int, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="e2e-cpu-sampler", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(1.0)

    def _loop(self) -> None:
        me = threading.get_ident()
        while not self._stop.wait(self.interval):
            frames = sys._current_frames()
            names = {t.ident: t.name for t in threading.enumerate()}
            for ident, frame in frames.items():
                if ident == me:
                    continue
                try:
                    now = time.clock_gettime(time.pthread_getcpuclockid(ident))
                except (OSError, OverflowError):  # the thread has just ended
                    continue
                used = now - self._clocks.get(ident, now)
                self._clocks[ident] = now
                if used > 0:
                    self._charge(frame, used, names.get(ident, str(ident)))
            del frames

    def _charge(self, frame, used: float, thread: str) -> None:
        self.samples += 1
        self.threads[thread] += used
        seen: set[Key] = set()
        leaf = True
        while frame is not None:
            code = frame.f_code
            key = (code.co_filename, code.co_firstlineno, code.co_name)
            if leaf:
                self.own[key] += used
                leaf = False
            if key not in seen:
                seen.add(key)
                self.cumulative[key] += used
            frame = frame.f_back

    def dump(self, path: str) -> None:
        def rows(counter: collections.Counter[Key]) -> list:
            return [[*key, value] for key, value in counter.most_common(200)]

        with open(path, "w") as handle:
            json.dump({"interval": self.interval, "samples": self.samples, "threads": dict(self.threads),
                       "own": rows(self.own), "cumulative": rows(self.cumulative)}, handle)
