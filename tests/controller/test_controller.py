"""The ``controller`` path (with the ``workers`` path) in real ``ansible-playbook`` runs: the
strategy waits on events instead of polling, with the same results, callbacks and their order
(linear and free strategies, serial, throttle, handlers, max_fail_percentage within and beyond its
limit, failures) as with both paths off."""

from __future__ import annotations

import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _controller_support as _support  # noqa: E402
from _controller_support import run  # noqa: E402

PLAY = """\
- name: linear play
  hosts: all
  gather_facts: false
  serial: [2, 3]
  max_fail_percentage: 60
  tasks:
    - command: "sleep 0.{{ inventory_hostname[-1] }}"
      changed_when: false
    - debug: {msg: "{{ inventory_hostname }}"}
      throttle: 1
    - command: "true"
      notify: a handler
      changed_when: true
    - fail: {msg: "h3 fails"}
      when: inventory_hostname == 'h3'
  handlers:
    - name: a handler
      debug: {msg: "handled {{ inventory_hostname }}"}

- name: free play
  hosts: all
  gather_facts: false
  strategy: free
  tasks:
    - command: "sleep 0.{{ inventory_hostname[-1] }}"
      changed_when: false
    - debug: {msg: "free {{ inventory_hostname }}"}

- name: beyond max_fail_percentage
  hosts: all
  gather_facts: false
  max_fail_percentage: 30
  tasks:
    - fail: {msg: "{{ inventory_hostname }} fails"}
      when: inventory_hostname in ['h1', 'h2']
    - debug: {msg: "never printed"}
"""
HOSTS = [f"h{i}" for i in range(1, 6)]
FREE = ("free play",)


def test_results_callbacks_and_output_are_the_same_waiting_on_events(tmp_path):
    polled = run(tmp_path, PLAY, HOSTS, off=True)
    waited = run(tmp_path, PLAY, HOSTS, off=False)
    assert polled.stats["controller"]["active"] is False and polled.stats["workers"]["active"] is False
    assert waited.stats["controller"]["active"] is True and waited.stats["workers"]["active"] is True
    assert (waited.results, waited.returncode) == (polled.results, polled.returncode)
    assert _support.canonical_events(waited.events, FREE) == _support.canonical_events(polled.events, FREE)
    assert _support.printed(waited.stdout, FREE) == _support.printed(polled.stdout, FREE)
    assert waited.returncode == 2  # h3 failed within max_fail_percentage, h1 and h2 beyond it
    assert "never printed" not in waited.stdout and "NO MORE HOSTS LEFT" in waited.stdout
    assert waited.left == [] and polled.left == []
    controller = waited.stats["run"]["paths"]["controller"]
    assert controller["native"] >= 3  # one per play's strategy
    assert controller["events"].get("woken by a result", 0) > 0 and not controller["fallback"]


INVENTORY_PLAY = """\
- name: changing the inventory
  hosts: all
  gather_facts: false
  tasks:
    - add_host: {name: "new{{ item }}", groups: made, ansible_connection: local}
      loop: "{{ range(12) | list }}"
    - group_by: {key: "by_{{ inventory_hostname }}"}

- name: the hosts added
  hosts: made:by_h1
  gather_facts: false
  tasks:
    - debug: {msg: "{{ inventory_hostname }} in {{ group_names | sort }}"}
"""


def test_inventory_changes_from_workers_are_the_same_and_wake_the_loop(tmp_path, core_minor):
    # ansible-core 2.21+: a worker's add_host and group_by wait on the strategy loop to apply them
    polled = run(tmp_path, INVENTORY_PLAY, ["h1", "h2"], off=True)
    waited = run(tmp_path, INVENTORY_PLAY, ["h1", "h2"], off=False)
    assert (waited.results, waited.returncode) == (polled.results, polled.returncode) and waited.returncode == 0
    assert _support.canonical_events(waited.events) == _support.canonical_events(polled.events)
    assert _support.printed(waited.stdout) == _support.printed(polled.stdout)
    assert "new11 in ['made']" in waited.stdout and "h1 in ['by_h1']" in waited.stdout
    events = waited.stats["run"]["paths"]["controller"]["events"]
    if core_minor >= (2, 21):
        assert events.get("woken by an inventory request", 0) >= 12


def test_a_result_wakes_the_waiting_loop_at_once():
    # The sleep the strategy calls returns when a result arrives, long before its longest wait.
    code = """
import collections, threading, time
import ansible_accel
ansible_accel.install()
from ansible_accel._integrations import controller
from ansible.plugins import strategy as strategy_module
class Strategy:
    _results = collections.deque()
    _workers = []
strategy = Strategy()
controller._adopt(strategy)
threading.Timer(0.02, strategy._results.append, args=("result",)).start()
started = time.monotonic()
strategy_module.time.sleep(10)
print(round(time.monotonic() - started, 3))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert float(done.stdout) < 1.0


def test_an_inventory_request_wakes_the_waiting_loop_at_once():
    # A worker waits for its add_host or group_by to be applied by the strategy loop: the loop's
    # sleep returns when the request is queued, long before its longest wait.
    code = """
import collections, queue, threading, time
import ansible_accel
ansible_accel.install()
from ansible_accel._integrations import controller
from ansible.plugins import strategy as strategy_module
class Strategy:
    _results = collections.deque()
    _workers = []
    _rpc_queue = queue.Queue()
strategy = Strategy()
controller._adopt(strategy)
threading.Timer(0.02, strategy._rpc_queue.put, args=("request",)).start()
started = time.monotonic()
strategy_module.time.sleep(10)
print(round(time.monotonic() - started, 3), strategy._rpc_queue.get_nowait())
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    waited, request = done.stdout.split()
    assert float(waited) < 1.0 and request == "request"  # the request is left for the loop


def test_waiting_for_a_free_worker_slot_is_not_ended_by_waiting_results():
    # ansible-core's _queue_task waits for a worker to end; results waiting (it does not process
    # them) do not make that wait a spin of 0.1 ms sleeps: it ends when the worker does.
    code = """
import collections, multiprocessing, time
import ansible_accel
ansible_accel.install()
from ansible_accel import _counters
from ansible_accel._integrations import controller
from ansible.plugins import strategy as strategy_module
from ansible.plugins.strategy import StrategyBase
assert controller._queue_task_code is StrategyBase._queue_task.__code__
# (a sleep that ends between two of the wait's time bounds, so that the worker's end wakes it)
worker = multiprocessing.get_context("fork").Process(target=time.sleep, args=(6.5 * controller.MAX_WAIT,))
worker.start()
class Strategy:
    _results = collections.deque(["a result waiting"])
    _workers = [worker]
strategy = Strategy()
controller._adopt(strategy)
def queue_task():  # stands for ansible-core's _queue_task: the sleep tells its caller by its code
    passes = 0
    while worker.is_alive():  # as ansible-core's loop: look, then sleep 0.1 ms
        passes += 1
        strategy_module.time.sleep(0.0001)
    return passes
controller._queue_task_code = queue_task.__code__
print(queue_task(), _counters.snapshot()["controller"].get("events", {}).get("woken by a worker's end", 0))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    passes, woken = done.stdout.split()
    # 1.6 s of 0.1 ms sleeps would be thousands of passes
    assert int(passes) < 100 and int(woken) >= 1, done.stdout
