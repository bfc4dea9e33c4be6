"""The ``controller`` path: the controller waits for events instead of polling.

ansible-core's strategies poll (``linear`` and the ones built on ``StrategyBase``'s loops; the
``free`` strategy keeps its own sleep): while results are pending they process what has arrived, then
``time.sleep(C.DEFAULT_INTERNAL_POLL_INTERVAL)`` (1 ms) and look again; while every worker
slot is busy, ``_queue_task`` checks the workers, then ``time.sleep(0.0001)``.  Waiting on 20
hosts' slow tasks, that is a thousand wake-ups a second, each checking every worker.

Here the ``time.sleep`` the strategy modules call returns as soon as something it waits for
has happened — a result reached the strategy (its results thread appended one), a worker asked
the controller to change the inventory (``add_host``, ``group_by``: ansible-core 2.21+ queues the
request for the strategy loop and the worker waits for its answer), or a worker process ended —
and otherwise after at most ``MAX_WAIT`` seconds; while ``_queue_task`` waits for a free worker
slot, results waiting do not end the wait (that loop does not process them).  The loops around it are
ansible-core's own and do exactly what they did after each wake-up, in the same order: the same
results processed, the same callbacks, the same dead-worker and termination checks; they only
run less often for nothing.  Called from any other thread, or with no strategy running, the
sleep is ``time.sleep``.

Counters: ``native`` per strategy run waiting on events; ``events`` count the wake-ups by cause.
Off with ``ANSIBLE_ACCEL_CONTROLLER=0``.
"""

from __future__ import annotations

import collections
import os
import queue
import sys
import threading
import time
import types
import weakref
from multiprocessing import connection as mp_connection

from .. import _counters
from .._activation import Patch, Unavailable
from .._patches import switched_off

PATH = "controller"
ENV = "ANSIBLE_ACCEL_CONTROLLER"
# Longest wait without an event: ansible-core's own checks still run at least this often, for
# what wakes nothing (a worker whose sentinel pipe a process it forked still holds open).  Four a
# second cost the controller about 2 ms of CPU a second while every worker waits on a slow task
# (ansible-core's 1 ms polls: 60-70 ms a second).
MAX_WAIT = 0.25

_current: weakref.ref | None = None  # the strategy whose loop is running
_queue_task_code = None  # the code of ansible-core's StrategyBase._queue_task


class _NotifyingDeque(collections.deque):
    """The strategy's results deque; an append (by the results thread) wakes the waiting loop."""

    def __init__(self, items, wake_fd: int) -> None:
        super().__init__(items)
        self._wake_fd = wake_fd

    def append(self, item) -> None:
        super().append(item)
        _wake(self._wake_fd, b"r")


class _NotifyingQueue(queue.Queue):
    """The strategy's queue of inventory requests from workers (ansible-core 2.21+); a request
    put there (by the thread serving the workers' requests) wakes the waiting loop."""

    def __init__(self, wake_fd: int) -> None:
        super().__init__()
        self._wake_fd = wake_fd

    def put(self, item, block: bool = True, timeout: float | None = None) -> None:
        super().put(item, block, timeout)
        _wake(self._wake_fd, b"i")


def _wake(fd: int, cause: bytes) -> None:
    try:
        os.write(fd, cause)
    except OSError:
        pass  # the pipe is full: a wake-up is already pending


def plan() -> list[Patch]:
    off = switched_off(ENV)
    if off is not None:
        raise Unavailable(off)
    try:
        from ansible.plugins import strategy as strategy_module
        from ansible.plugins.strategy import StrategyBase
    except ImportError as ex:
        raise Unavailable(f"ansible-core's strategies are not importable: {ex}") from None
    if not isinstance(getattr(strategy_module, "time", None), types.ModuleType):
        raise Unavailable("ansible-core's strategy module does not use the time module")
    original_init = vars(StrategyBase)["__init__"]
    global _queue_task_code
    _queue_task_code = getattr(vars(StrategyBase).get("_queue_task"), "__code__", None)

    def __init__(self, *args, **kwargs) -> None:
        original_init(self, *args, **kwargs)
        _adopt(self)

    __init__.__wrapped__ = original_init
    # The free strategy sleeps once per pass over its hosts even when that pass freed work for
    # the next: it keeps its own sleep.
    return [Patch(StrategyBase, "__init__", __init__), Patch(strategy_module, "time", _time_view())]


def _adopt(strategy) -> None:
    global _current
    results = getattr(strategy, "_results", None)
    if type(results) is not collections.deque or not hasattr(strategy, "_workers"):
        _counters.fallback(PATH, "a strategy without ansible-core's results deque or workers")
        return
    requests = getattr(strategy, "_rpc_queue", None)
    if requests is not None and (type(requests) is not queue.Queue or requests.maxsize or not requests.empty()):
        # a wait that such a request could not end would hold the worker that made it
        _counters.fallback(PATH, "a strategy whose inventory request queue is not ansible-core's")
        return
    read_end, write_end = os.pipe2(os.O_CLOEXEC | os.O_NONBLOCK)
    strategy._results = _NotifyingDeque(results, write_end)
    if requests is not None:
        strategy._rpc_queue = _NotifyingQueue(write_end)
    strategy._accel_wake = read_end
    weakref.finalize(strategy, _close, read_end, write_end)
    _current = weakref.ref(strategy)
    _counters.native(PATH)


def _close(*fds: int) -> None:
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass


def _time_view() -> types.ModuleType:
    view = types.ModuleType("time", time.__doc__)
    view.__dict__.update({k: v for k, v in vars(time).items() if not k.startswith("__")})
    view.sleep = _sleep
    return view


def _sleep(seconds: float) -> None:
    strategy = _current() if _current is not None else None
    wake = getattr(strategy, "_accel_wake", None)
    if wake is None or threading.current_thread() is not threading.main_thread():
        time.sleep(seconds)
        return
    # ansible-core's _queue_task waits there for a free worker slot: it does not process results,
    # so results waiting do not end its wait (a worker's end does, or a request it serves)
    queueing = _queue_task_code is not None and sys._getframe(1).f_code is _queue_task_code
    if (strategy._results and not queueing) or _requests_waiting(strategy):
        time.sleep(seconds)  # results or requests already waiting: the loop goes on at once, as it would
        return
    sentinels = {}
    for worker in strategy._workers:
        sentinel = getattr(worker, "_popen", None) and getattr(worker, "sentinel", None)
        if sentinel is not None and worker.exitcode is None:
            sentinels[sentinel] = worker
    ready = mp_connection.wait([wake, *sentinels], timeout=max(seconds, MAX_WAIT))
    if wake in ready:
        causes = b""
        try:
            while chunk := os.read(wake, 4096):
                causes += chunk
        except BlockingIOError:
            pass
        if b"i" in causes:
            _counters.extra(PATH, "woken by an inventory request")
        if b"r" in causes:
            _counters.extra(PATH, "woken by a result")
    elif ready:
        _counters.extra(PATH, "woken by a worker's end")
        if any(sentinels[fd].exitcode is None for fd in ready):
            # Its sentinel closes as the worker starts to exit, a few milliseconds before it can
            # be reaped (and counts as ended): until then, ansible-core's own short sleeps.
            time.sleep(seconds)


def _requests_waiting(strategy) -> bool:
    requests = getattr(strategy, "_rpc_queue", None)
    return requests is not None and requests.qsize() > 0
