"""Where the controller's and the workers' CPU goes, by stage, per task-host, accelerator off and on.

``python -m benches.profile_stages [--python PY] [--modes off,runner] [--playbooks modules,cheap]
[--hosts 20] [--cheap-hosts 100] [--cheap-forks 10] [--json FILE]``

Two playbooks, each run once per mode with the same inputs: ``modules.yml`` of the end-to-end
benchmark (``benches/e2e``) on its local host aliases, and a many-host run of cheap tasks
(``command: true``, ``set_fact``, ``debug``, ``ping``, ``assert``; 100 hosts, ``-f 10``).  Modes
are the end-to-end benchmark's (``off``: plain ``ansible-playbook``; ``on``: ``ansible-accel``
with the warm runner off; ``runner``: ``ansible-accel`` as installed).

Sampling (low distortion; cProfile would double Python-heavy code): in the controller and in each
worker it forks, every 2 ms of the process's CPU (``ITIMER_PROF``; the kernel rounds that up to
its tick, ~4 ms here) a signal handler reads how much CPU each thread has used since it last
looked (the thread's own CPU clock) and charges the main thread's to the stage its stack is in,
another thread's to that thread (walking another thread's frames can crash CPython 3.12 once the
thread's frames end).  Waiting costs nothing, and the handler's own CPU is counted apart (a
sampling thread, as ``benches/e2e/sampler.py`` has, would wake every few milliseconds of wall
time in every short-lived worker, and cost it a third of its CPU).  Garbage collection is timed
apart (``gc.callbacks`` with the collecting thread's CPU clock); a worker's CPU from the fork to
the sampler's start is charged to its start, and from the last sample to its end to its end.  A
stage is the first in the lists below whose functions are anywhere on the stack: templating
inside ``post_validate`` counts as templating, a plugin looked up while building a payload as
payload building.  Each process writes its stages at its end (ansible-core ends the workers
still exiting when the run ends: a few of the last may write nothing); the table sums them over
the run and divides by the task-hosts (one worker each).  ``--render JSON`` prints the tables of
an earlier run's ``--json`` file.  Each process also records its system CPU and minor page faults
(``getrusage``; a worker's at its last Python line), printed under each kind's measured CPU.

The run's own wrapper: ``python profile_stages.py --inner OUTDIR INTERVAL WORKER_INTERVAL SCRIPT
ARGS...`` runs the ansible console script ``SCRIPT`` in this process, sampled, and its workers
sampled too.
"""

from __future__ import annotations

import argparse
import atexit
import collections
import gc
import json
import multiprocessing.util
import os
import resource
import runpy
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# --- stages ----------------------------------------------------------------------------------------
# (stage, [(fragment of the file name or None, function name or None), ...]); the first stage with a
# frame on the stack wins.  Paths with "/" so that site-packages and source trees both match.

STRATEGY = "ansible/plugins/strategy/__init__.py"
TQM = "ansible/executor/task_queue_manager.py"
ACTION = "ansible/plugins/action/__init__.py"
GC_STAGE = "garbage collection"
START_STAGE = "worker start (from the fork to the sampler's start)"
EXIT_STAGE = "worker exit (from the last sample on)"
END_STAGE = "end (from the last sample on)"
OTHER_CONTROLLER = "start-up, parsing, other"
OTHER_WORKER = "other"

CONTROLLER_STAGES = [
    ("accelerator: work done once before the first fork", [("ansible_accel/_integrations/workers.py", "_prewarm")]),
    ("fork (worker start in the controller)", [("multiprocessing/popen_fork.py", None), ("multiprocessing/process.py", "start"),
                                               ("ansible/executor/process/worker.py", "start"),
                                               ("ansible_accel/_integrations/workers.py", "start")]),
    ("callbacks", [(TQM, "send_callback")]),
    ("task vars", [("ansible/vars/manager.py", "get_vars")]),
    ("result processing", [(STRATEGY, "_process_pending_results")]),
    ("queueing", [(STRATEGY, "_queue_task")]),
    ("strategy wait", [(STRATEGY, "_wait_on_pending_results"), ("ansible_accel/_integrations/controller.py", "_sleep")]),
    ("strategy loop (other)", [("ansible/plugins/strategy/", None), ("ansible/executor/play_iterator.py", None)]),
]
# Threads other than the main one, by a part of their name: their CPU, all of it, to one stage.
RESULTS_THREAD = "results thread (receiving, unpickling; the display and callbacks workers send)"
CONTROLLER_THREADS = (("results_thread_main", RESULTS_THREAD),)
WORKER_STAGES = [
    (EXIT_STAGE, [("multiprocessing/util.py", "_exit_function")]),
    ("result shipping", [(TQM, "send_task_result"), (TQM, "send_callback"), (TQM, "send_display"), (TQM, "send_prompt"),
                         ("multiprocessing/queues.py", "put")]),
    ("payload build", [(ACTION, "_configure_module")]),
    ("module output parsing", [(ACTION, "_parse_returned_data")]),
    ("connection/exec", [(ACTION, "_low_level_execute_command"), ("ansible/plugins/connection/", None)]),
    ("plugin lookup and load", [("ansible/plugins/loader.py", None)]),
    ("plugin options and config", [("ansible/config/manager.py", None), (None, "set_options"), (None, "_set_plugin_options"),
                                   (None, "_set_connection_options")]),
    ("templating", [("ansible/_internal/_templating/", None), ("ansible/template/", None), ("/jinja2/", None)]),
    ("post_validate", [(None, "post_validate"), (None, "_post_validate_attribute"), (None, "post_validate_attribute")]),
    ("imports", [("<frozen importlib._bootstrap>", "_find_and_load")]),
    ("result building", [("ansible/_internal/_task.py", None), ("ansible/executor/task_result.py", None),
                         ("ansible/vars/clean.py", None)]),
    ("action plugin (other)", [("ansible/plugins/action/", None)]),
    ("task executor (other)", [("ansible/executor/task_executor.py", None)]),
    ("worker setup", [("ansible/executor/process/worker.py", None), ("multiprocessing/process.py", "_bootstrap")]),
]


class Classifier:
    """A stack's stage, from each file's matches (computed once per file name)."""

    def __init__(self, rules: list, fallback: str, threads: tuple = ()):
        self.rules, self.fallback, self.threads = rules, fallback, threads
        self.names = [name for name, _ in rules]
        self._files: dict[str, tuple[int, dict[str, int]]] = {}

    def _of_file(self, filename: str) -> tuple[int, dict[str, int]]:
        """(the stages any function of the file is in, those of named functions)"""
        found = self._files.get(filename)
        if found is None:
            path, whole, named = filename.replace(os.sep, "/"), 0, {}
            for index, (_, patterns) in enumerate(self.rules):
                for part, function in patterns:
                    if part is not None and part not in path:
                        continue
                    if function is None:
                        whole |= 1 << index
                    else:
                        named[function] = named.get(function, 0) | 1 << index
            found = self._files[filename] = (whole, named)
        return found

    def thread_stage(self, name: str) -> str:
        for part, stage in self.threads:
            if part in name:
                return stage
        return f"other threads ({self.fallback})"

    def warm(self, filenames) -> None:
        for filename in filenames:
            self._of_file(filename)

    def stage_of_frame(self, frame) -> tuple[str, tuple]:
        bits, leaf, last = 0, None, None
        while frame is not None:
            code = frame.f_code
            filename = code.co_filename
            whole, named = self._of_file(filename)
            bits |= whole | named.get(code.co_name, 0)
            last = code
            if leaf is None and filename != __file__:  # the sampler's own frames are no leaf
                leaf = (filename, code.co_firstlineno, code.co_name)
            frame = frame.f_back
        if leaf is None and last is not None:
            leaf = (last.co_filename, last.co_firstlineno, last.co_name)
        stage = self.names[(bits & -bits).bit_length() - 1] if bits else self.fallback
        return stage, leaf or ("?", 0, "?")


# --- garbage collection, timed apart --------------------------------------------------------------

_gc_started: dict[int, float] = {}
_gc_used: collections.Counter[int] = collections.Counter()  # CPU in collections, per thread


# (ident, CPU, name) of each thread as it ends: its CPU since the sampler's last look is not lost
_ended: collections.deque[tuple[int, float, str]] = collections.deque()
_bootstrap_inner = threading.Thread._bootstrap_inner


def _bootstrap_and_tell(self) -> None:
    try:
        _bootstrap_inner(self)
    finally:
        _ended.append((threading.get_ident(), time.thread_time(), self.name))


threading.Thread._bootstrap_inner = _bootstrap_and_tell


def _gc_callback(phase: str, info: dict) -> None:
    ident = threading.get_ident()
    now = time.thread_time()
    if phase == "start":
        _gc_started[ident] = now
    else:
        _gc_used[ident] += now - _gc_started.pop(ident, now)


class StageSampler:
    """Charges each thread's CPU to its stack's stage (and its leaf function), sampled on the
    process's CPU time: ``ITIMER_PROF`` delivers SIGPROF after every ``interval`` seconds of CPU
    the process uses, and the handler (in the main thread, between two bytecodes) reads how much
    CPU each thread used since the last look (its own CPU clock) and charges it to where that
    thread's stack is.  Waiting costs nothing; the handler's own CPU is kept apart."""

    def __init__(self, classifier: Classifier, interval: float):
        self.classifier, self.interval = classifier, interval
        self.stages: collections.Counter[str] = collections.Counter()
        self.leaves: collections.Counter[tuple] = collections.Counter()
        self.samples = 0
        self.own = 0.0  # the handler's CPU
        self.errors = 0
        self._clocks: dict[int, float] = {}
        self._gc_seen: dict[int, float] = {}

    def start(self) -> None:
        for thread in threading.enumerate():
            self._clocks[thread.ident] = _clock(thread.ident) or 0.0
            self._gc_seen[thread.ident] = _gc_used[thread.ident]
        main = threading.main_thread().ident
        self._clocks[main] = time.thread_time()  # the caller's thread: not charged for what it did before
        signal.signal(signal.SIGPROF, self._handler)
        signal.setitimer(signal.ITIMER_PROF, self.interval, self.interval)

    def _handler(self, signum, frame) -> None:
        entered = time.thread_time()
        try:
            self.look(frame)
        except BaseException:  # noqa: BLE001 - never into the code it interrupted
            self.errors += 1
        # the handler's own CPU is not charged to the stack it interrupted
        me = threading.get_ident()
        now = time.thread_time()
        self.own += now - entered
        self._clocks[me] = self._clocks.get(me, now) + (now - entered)

    def look(self, frame, stage: str | None = None) -> None:
        """The main thread's CPU to ``frame``'s stack (``stage`` if given); every other thread's to
        that thread (another thread's frames are not walked: in CPython 3.12 that can crash the
        interpreter when the thread's frames end afterwards)."""
        main = threading.main_thread().ident
        ended = []
        while _ended:
            ended.append(_ended.popleft())
        for ident, last, name in ended:  # its CPU up to its end; then it is gone (its ident may be reused)
            self._charge(ident, last - self._clocks.pop(ident, 0.0), main, frame, stage, name)
        for ident in list(self._clocks) + [i for i in threading._active if i not in self._clocks]:
            now = _clock(ident)
            if now is None:  # ended: what it used since the last look comes with its entry in _ended
                continue
            used = now - self._clocks.get(ident, 0.0)  # a thread first seen now: all its CPU so far
            self._clocks[ident] = now
            self._charge(ident, used, main, frame, stage)

    def _charge(self, ident: int, used: float, main: int, frame, stage: str | None, name: str | None = None) -> None:
        collected = _gc_used[ident] - self._gc_seen.get(ident, _gc_used[ident])
        self._gc_seen[ident] = _gc_used[ident]
        if collected > 0:
            collected = min(collected, max(used, 0.0))
            self.stages[GC_STAGE] += collected
            used -= collected
        if used <= 0:
            return
        self.samples += 1
        if ident == main:
            found, leaf = self.classifier.stage_of_frame(frame)
            found = stage or found
        else:
            if name is None:
                thread = threading._active.get(ident)
                name = thread.name if thread is not None else str(ident)
            found = self.classifier.thread_stage(name)
            leaf = ("(thread)", 0, name)
        self.stages[found] += used
        self.leaves[(found, *leaf)] += used

    def finish(self, stage: str) -> None:
        """Stop; what ran since the last look is charged to ``stage``."""
        signal.setitimer(signal.ITIMER_PROF, 0, 0)
        signal.signal(signal.SIGPROF, signal.SIG_IGN)  # one still pending must not end the process
        entered = time.thread_time()
        self.look(sys._getframe(), stage)
        self.own += time.thread_time() - entered

    def record(self, **extra) -> dict:
        leaves = [[*key, cpu] for key, cpu in self.leaves.most_common(300)]
        return {"stages": dict(self.stages), "samples": self.samples, "errors": self.errors, "leaves": leaves,
                "sampler_cpu": self.own, **extra}


def _clock(ident: int) -> float | None:
    try:
        return time.clock_gettime(time.pthread_getcpuclockid(ident))
    except (OSError, OverflowError):
        return None


# --- the wrapper: one sampled run of an ansible console script ---------------------------------------


class _Token:
    """Weak-referenceable owner for ``register_after_fork``."""


_token = _Token()


def _write(path: str, record: dict) -> None:
    with open(path + ".part", "w") as handle:
        json.dump(record, handle)
    os.replace(path + ".part", path)


# Made in the controller: each worker starts with the stages of the code objects seen so far.
_worker_classifier = Classifier(WORKER_STAGES, OTHER_WORKER)


def _loaded_files() -> list[str]:
    return [getattr(module, "__file__", None) or "" for module in list(sys.modules.values())]


def _sample_worker(directory: str, interval: float) -> None:
    """In a worker just forked: its own sampler (only the forking thread lives on after a fork)."""
    started = time.process_time()  # since the fork: the child's clocks start at zero
    _gc_started.clear()
    _gc_used.clear()
    sampler = StageSampler(_worker_classifier, interval)
    sampler.stages[START_STAGE] += started
    sampler.start()

    def finish() -> None:
        entered = time.thread_time()
        problem = None
        try:
            sampler.finish(EXIT_STAGE)
        except Exception as ex:  # noqa: BLE001 - the record says so
            problem = f"{type(ex).__name__}: {ex}"
        sampler.own += time.thread_time() - entered
        children, usage = resource.getrusage(resource.RUSAGE_CHILDREN), resource.getrusage(resource.RUSAGE_SELF)
        process = multiprocessing.current_process()
        try:
            task = f"{getattr(process, '_host', '?')}/{getattr(process, '_task', '?')}"
        except Exception as ex:  # noqa: BLE001
            task = f"? ({type(ex).__name__})"
        _write(os.path.join(directory, f"worker-{os.getpid()}-{time.monotonic_ns()}.json"),
               sampler.record(kind="worker", task=task, problem=problem, cpu=time.process_time(),
                              system_cpu=usage.ru_stime, minor_faults=usage.ru_minflt,
                              children_cpu=children.ru_utime + children.ru_stime))

    multiprocessing.util.Finalize(None, finish, exitpriority=0)


def inner(argv: list[str]) -> None:
    directory, interval, worker_interval, script, args = argv[0], float(argv[1]), float(argv[2]), argv[3], argv[4:]
    gc.callbacks.append(_gc_callback)
    sampler = StageSampler(Classifier(CONTROLLER_STAGES, OTHER_CONTROLLER, CONTROLLER_THREADS), interval)
    controller = os.getpid()
    multiprocessing.util.register_after_fork(_token, lambda _: _sample_worker(directory, worker_interval))
    warmed = [0]

    def before_fork() -> None:
        """The workers' stages of every file loaded so far, worked out before the fork: not again in
        every worker (counted as the sampler's own CPU)."""
        if len(sys.modules) == warmed[0]:
            return
        entered = time.thread_time()
        _worker_classifier.warm(_loaded_files())
        warmed[0] = len(sys.modules)
        spent = time.thread_time() - entered
        sampler.own += spent
        me = threading.get_ident()
        if me in sampler._clocks:
            sampler._clocks[me] += spent

    os.register_at_fork(before=before_fork)

    def finish() -> None:
        if os.getpid() != controller:
            return
        sampler.finish(END_STAGE)
        usage, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        _write(os.path.join(directory, "controller.json"),
               sampler.record(kind="controller", cpu=usage.ru_utime + usage.ru_stime, start_cpu=start_cpu,
                              system_cpu=usage.ru_stime, minor_faults=usage.ru_minflt,
                              children_cpu=children.ru_utime + children.ru_stime))

    atexit.register(finish)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    start_cpu = usage.ru_utime + usage.ru_stime  # this wrapper's own start, before the script
    sampler.stages[OTHER_CONTROLLER] += start_cpu
    sampler.start()
    sys.argv = [script, *args]
    runpy.run_path(script, run_name="__main__")


# --- the profile: playbooks, modes, table --------------------------------------------------------------

CHEAP_PLAY = """\
- name: Cheap tasks on many hosts
  hosts: all
  gather_facts: false
  tasks:
    - name: Run true
      ansible.builtin.command: "true"
      changed_when: false
    - name: Set a fact
      ansible.builtin.set_fact:
        where: "{{ inventory_hostname }}"
    - name: Say it
      ansible.builtin.debug:
        msg: "{{ where }}"
    - name: Ping
      ansible.builtin.ping:
    - name: Check the fact
      ansible.builtin.assert:
        that: where == inventory_hostname
        quiet: true
"""
MODE_LABELS = {"off": "off", "on": "on (runner off)", "runner": "on"}


def cheap_files(work: str, hosts: int) -> tuple[str, str]:
    playbook, inventory = os.path.join(work, "cheap.yml"), os.path.join(work, "cheap-hosts.ini")
    with open(playbook, "w") as handle:
        handle.write(CHEAP_PLAY)
    with open(inventory, "w") as handle:
        handle.write("[cheap]\n" + "".join(f"cheap{i:03d}\n" for i in range(1, hosts + 1)))
        handle.write('[cheap:vars]\nansible_connection=local\nansible_python_interpreter="{{ ansible_playbook_python }}"\n')
    return playbook, inventory


def profile_run(env: dict, mode: str, playbook_args: list[str], work: str, forks: int | None, interval: float,
                worker_interval: float) -> dict:
    from .e2e import playbook_run, tree

    samples = os.path.join(work, f"samples-{mode}")
    shutil.rmtree(samples, ignore_errors=True)
    os.makedirs(samples)
    root = os.path.join(work, "files")
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root)
    results_file, stats_file = os.path.join(work, "results.json"), os.path.join(work, "stats.json")
    for path in (results_file, stats_file):
        if os.path.exists(path):
            os.remove(path)
    environ = playbook_run.clean_environment(
        ANSIBLE_CONFIG=os.path.join(playbook_run.HERE, "ansible.cfg"),
        ANSIBLE_CALLBACK_PLUGINS=os.path.join(playbook_run.HERE, "callback_plugins"),
        ANSIBLE_CALLBACKS_ENABLED="e2e_results",
        ANSIBLE_LIBRARY=os.path.join(playbook_run.HERE, "library"),
        ANSIBLE_LOCAL_TEMP=os.path.join(work, "local-tmp"),
        E2E_RESULTS_FILE=results_file,
    )
    if forks:
        environ["ANSIBLE_FORKS"] = str(forks)
    script = playbook_run.command_for(env, mode, environ, work, stats_file)
    wrapper = [env["executable"], os.path.abspath(__file__), "--inner", samples, str(interval), str(worker_interval)]
    load_before = os.getloadavg()
    with tree.Tree() as processes:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        done = subprocess.run([*wrapper, *script, *playbook_args, "-e", f"e2e_root={root}"], env=environ,
                              cwd=playbook_run.HERE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              errors="replace")
        wall = time.perf_counter() - started
        outcome = processes.settle()
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    load_after = os.getloadavg()
    tree_cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"mode": mode, "returncode": done.returncode, "wall": wall, "tree_cpu": tree_cpu,
            "outlived_cpu": outcome.cpu("runner") + outcome.cpu("other"), "load": [load_before[0], load_after[0]],
            "output": done.stdout, "results": _load(results_file), "stats": _load(stats_file) if mode != "off" else None,
            **aggregate(samples)}


def _load(path: str) -> dict | None:
    try:
        with open(path) as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return None


def aggregate(directory: str) -> dict:
    """The controller's record and the workers' summed."""
    controller = _load(os.path.join(directory, "controller.json")) or {"stages": {}, "cpu": 0.0, "sampler_cpu": 0.0,
                                                                        "children_cpu": 0.0, "leaves": []}
    workers = {"stages": collections.Counter(), "cpu": 0.0, "sampler_cpu": 0.0, "children_cpu": 0.0, "count": 0,
               "system_cpu": 0.0, "minor_faults": 0, "leaves": collections.Counter()}
    for name in os.listdir(directory):
        if not (name.startswith("worker-") and name.endswith(".json")):
            continue
        record = _load(os.path.join(directory, name))
        if record is None:
            continue
        workers["count"] += 1
        workers["stages"].update(record["stages"])
        for key in ("cpu", "sampler_cpu", "children_cpu"):
            workers[key] += record[key]
        for key in ("system_cpu", "minor_faults"):
            workers[key] += record.get(key, 0)
        for *key, cpu in record["leaves"]:
            workers["leaves"][tuple(key)] += cpu
    workers["stages"] = dict(workers["stages"])
    workers["leaves"] = [[*key, cpu] for key, cpu in workers["leaves"].most_common(300)]
    return {"controller": controller, "workers": workers}


# What the system CPU of each kind of process is mostly made of (its rusage: a worker's until its
# last Python line, so not its exit).
KERNEL_WORK = {"controller": "system CPU: forking the workers, page faults",
               "workers": "system CPU until their last Python line: page faults, their own commands"}

# Printed names of stages whose recorded names say less than they could.
PRINTED = {EXIT_STAGE: "worker end: its exit, and what ran after the last sample (sampled every ~4 ms of CPU)",
           END_STAGE: "end: what ran after the last sample"}


def table(runs: list[dict], task_hosts: int) -> str:
    """The markdown table: each stage's CPU, in total and per task-host, in each mode."""
    modes = [run["mode"] for run in runs]
    header = "| stage | " + " | ".join(f"{MODE_LABELS.get(m, m)}: s | {MODE_LABELS.get(m, m)}: ms per task-host" for m in modes)
    if len(runs) == 2:
        header += " | on ÷ off"
    lines = [header + " |", "|---|" + "---:|" * (2 * len(runs) + (len(runs) == 2))]

    def row(label: str, values: list[float], bold: bool = False) -> None:
        cells = []
        for value in values:
            cells += [f"{value:.2f}", f"{1000 * value / task_hosts:.2f}"]
        if len(values) == 2:
            cells.append(f"{values[1] / values[0]:.2f}" if values[0] > 0.005 else "-")
        text = f"**{label}**" if bold else label
        lines.append(f"| {text} | " + " | ".join(cells) + " |")

    for kind, names, fallback in (("controller", CONTROLLER_STAGES, OTHER_CONTROLLER), ("workers", WORKER_STAGES, OTHER_WORKER)):
        order = ([GC_STAGE, START_STAGE] + [name for name, _ in names] + [fallback, END_STAGE]
                 + [stage for _, stage in CONTROLLER_THREADS if kind == "controller"])
        order += sorted({s for run in runs for s in run[kind]["stages"]} - set(order))
        for name in order:
            values = [run[kind]["stages"].get(name, 0.0) for run in runs]
            if any(v >= 0.0005 * task_hosts for v in values):  # less than 0.5 ms per task-host in every mode: left out
                row(f"{kind}: {PRINTED.get(name, name)}", values)
        row(f"{kind}: sampled", [sum(run[kind]["stages"].values()) for run in runs], bold=True)
        row(f"{kind}: measured (process CPU)", [run[kind]["cpu"] for run in runs], bold=True)
        row(f"{kind}: of which the sampler itself", [run[kind]["sampler_cpu"] for run in runs])
        row(f"{kind}: of which in the kernel ({KERNEL_WORK[kind]})", [run[kind].get("system_cpu", 0.0) for run in runs])
        faults = [run[kind].get("minor_faults", 0) for run in runs]
        cells = " | ".join(f"{count} | {count / task_hosts:.0f}" for count in faults)
        if len(faults) == 2:
            cells += f" | {faults[1] / faults[0]:.2f}" if faults[0] else " | -"
        lines.append(f"| {kind}: minor page faults (count, per task-host) | {cells} |")
    row("modules (the processes the workers ran, runners)",
        [max(run["controller"]["children_cpu"] - run["workers"]["cpu"], 0.0) + run["outlived_cpu"] for run in runs])
    row("controller + workers, less the samplers",
        [run["controller"]["cpu"] + run["workers"]["cpu"] - run["controller"]["sampler_cpu"] - run["workers"]["sampler_cpu"]
         for run in runs], bold=True)
    return "\n".join(lines)


def top_leaves(run: dict, kind: str, count: int = 8) -> list[str]:
    return [f"{cpu:7.2f}s  {stage:<32} {os.path.basename(file)}:{line} {function}"
            for stage, file, line, function, cpu in run[kind]["leaves"][:count]]


def profile_playbook(env: dict, name: str, playbook_args: list[str], task_hosts: int, modes: list[str], work: str,
                     forks: int | None, interval: float, worker_interval: float) -> dict:
    from .e2e import compare, playbook_run

    runs = []
    for mode in modes:
        print(f"  {name}, {MODE_LABELS.get(mode, mode)} ...", end="", flush=True)
        run = profile_run(env, mode, playbook_args, work, forks, interval, worker_interval)
        print(f" {run['wall']:.1f}s wall, tree CPU {run['tree_cpu']:.1f}s, {run['workers']['count']} workers, load "
              f"{run['load'][0]:.2f} -> {run['load'][1]:.2f}, exit {run['returncode']}", flush=True)
        runs.append(run)
    problems, notes = [], []
    for run in runs:
        if run["returncode"] != 0:
            problems.append(f"{run['mode']}: exit status {run['returncode']}: {run['output'][-1500:]}")
        missing = task_hosts - run["workers"]["count"]
        # ansible-core terminates the workers still exiting when the run ends: their records are lost
        if missing > (forks or 5) or missing < 0:
            problems.append(f"{run['mode']}: {run['workers']['count']} workers sampled for {task_hosts} task-hosts")
        elif missing:
            notes.append(f"{MODE_LABELS.get(run['mode'], run['mode'])}: {missing} of the last workers ended before writing"
                         " their samples")
    for run in runs[1:]:
        found = compare.differences(runs[0]["results"], runs[0]["output"], run["results"], run["output"])
        problems += [f"{runs[0]['mode']} vs {run['mode']}: {d}" for d in found]
    report = {"playbook": name, "ansible_core": env["ansible_core"], "python": env["python"], "task_hosts": task_hosts,
              "forks": forks, "problems": problems, "notes": notes,
              "runs": [{k: v for k, v in run.items() if k not in ("output", "results")} for run in runs]}
    print(render(report), flush=True)
    return report


def render(report: dict) -> str:
    runs, task_hosts, problems = report["runs"], report["task_hosts"], report["problems"]
    loads = ", ".join(f"{MODE_LABELS.get(r['mode'], r['mode'])} {r['load'][0]:.2f} → {r['load'][1]:.2f}" for r in runs)
    walls = ", ".join(f"{MODE_LABELS.get(r['mode'], r['mode'])} {r['wall']:.1f}s" for r in runs)
    text = [f"### {report['playbook']}: {task_hosts} task-hosts, ansible-core {report['ansible_core']} (Python {report['python']})",
            "", f"Wall: {walls}. Load average (1 min) before → after: {loads} (2 CPUs).",
            "Results: " + ("; ".join(problems) if problems else "identical" if len(runs) > 1 else "not compared (one mode)")
            + "".join(f"; {n}" for n in report.get("notes", [])), "", table(runs, task_hosts), ""]
    for run in runs:
        for kind in ("controller", "workers"):
            text.append(f"Top leaf functions, {kind}, {MODE_LABELS.get(run['mode'], run['mode'])}:")
            text += ["    " + line for line in top_leaves(run, kind)]
    return "\n".join(text)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--inner":
        inner(argv[1:])
        return 0
    from .e2e import playbook_run, run_e2e

    parser = argparse.ArgumentParser(prog="python -m benches.profile_stages", description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", default=os.path.join(ROOT, ".venv", "py312", "bin", "python"))
    parser.add_argument("--modes", default="off,runner")
    parser.add_argument("--playbooks", default="modules,cheap")
    parser.add_argument("--hosts", type=int, default=20, help="hosts of modules.yml")
    parser.add_argument("--cheap-hosts", type=int, default=100)
    parser.add_argument("--cheap-forks", type=int, default=10)
    parser.add_argument("--interval", type=float, default=0.002, help="the controller's sampling interval, seconds of CPU")
    parser.add_argument("--worker-interval", type=float, default=0.002, help="a worker's sampling interval, seconds of CPU")
    parser.add_argument("--json")
    parser.add_argument("--render", metavar="JSON", help="print the tables of an earlier run's --json file, and run nothing")
    options = parser.parse_args(argv)
    if options.render:
        with open(options.render) as handle:
            for report in json.load(handle):
                print(render(report))
        return 0
    env = playbook_run.environment_of(os.path.abspath(options.python))
    modes = options.modes.split(",")
    reports = []
    with tempfile.TemporaryDirectory(prefix="profile-stages-") as work:
        for name in options.playbooks.split(","):
            if name == "modules":
                inputs = os.path.join(work, "inputs")
                if not os.path.isdir(inputs):
                    run_e2e.make_inputs(env, inputs)
                limit = ",".join(f"host{i:02d}" for i in range(1, options.hosts + 1))
                args = ["-i", os.path.join(playbook_run.HERE, "inventory.ini"), "--limit", limit,
                        os.path.join(playbook_run.HERE, "modules.yml"), "-e", f"e2e_inputs={inputs}"]
                tasks = _modules_task_count()
                reports.append(profile_playbook(env, f"modules.yml, {options.hosts} hosts", args, options.hosts * tasks,
                                                modes, work, None, options.interval, options.worker_interval))
            elif name == "cheap":
                playbook, inventory = cheap_files(work, options.cheap_hosts)
                reports.append(profile_playbook(env, f"cheap tasks, {options.cheap_hosts} hosts × 5, -f {options.cheap_forks}",
                                                ["-i", inventory, playbook], options.cheap_hosts * 5, modes, work,
                                                options.cheap_forks, options.interval, options.worker_interval))
            else:
                parser.error(f"unknown playbook {name}")
    if options.json:
        with open(options.json, "w") as handle:
            json.dump(reports, handle, indent=1)
    return 1 if any(r["problems"] for r in reports) else 0


def _modules_task_count() -> int:
    """modules.yml's tasks (a loop's items run in one worker: one task-host each)."""
    import yaml

    with open(os.path.join(HERE, "e2e", "modules.yml")) as handle:
        return sum(len(play.get("tasks", [])) for play in yaml.safe_load(handle))


if __name__ == "__main__":
    sys.exit(main())
