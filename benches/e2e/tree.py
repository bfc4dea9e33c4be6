"""Every process of one run, counted: also those that outlive the process that started them.

A warm runner is started by a forked worker and outlives it, and Mitogen's processes may outlive
theirs: an orphan is re-parented to the nearest ancestor that is a child subreaper, or to init,
and then ``RUSAGE_CHILDREN`` around ``ansible-playbook`` never sees its CPU.  ``Tree`` makes this
process a child subreaper for the run, notes the command line of each process re-parented to it
while it lives (the only way to tell a runner from another orphan once it has exited), and after
``ansible-playbook`` has exited waits, bounded, for every remaining descendant to end, reaping
each with ``wait4``: its CPU, with that of the children it reaped itself (a runner's modules), is
then both in ``RUSAGE_CHILDREN`` and known on its own.  Descendants still alive at the bound are
listed, killed and reaped.

The CPU time of this process's cgroup is read before and after too, where that cgroup is this
process's alone (its ``cgroup.procs`` names only this process when the run starts): it counts
whatever escaped even a subreaper (a process that daemonised into another session still counts).
"""

from __future__ import annotations

import ctypes
import dataclasses
import os
import signal
import threading
import time

PR_SET_CHILD_SUBREAPER = 36
RUNNER_SCRIPT = "_runner_server.py"  # in the command line of every warm runner
SETTLE_SECONDS = 30.0


@dataclasses.dataclass
class Orphan:
    """A process re-parented to the benchmark and reaped by it."""

    pid: int
    command: str  # as seen while it lived; "" when it ended before it was seen
    cpu: float  # its own and its reaped children's
    kind: str  # "runner" or "other"


@dataclasses.dataclass
class Outcome:
    orphans: list[Orphan]
    left_behind: list[str]  # "pid command" of each descendant still alive at the bound (killed)
    settle: float  # seconds from the main process's exit until the last descendant was reaped
    cgroup_cpu: float | None  # the cgroup's CPU time over the run, where it is this process's alone

    def cpu(self, kind: str) -> float:
        return sum(o.cpu for o in self.orphans if o.kind == kind)

    def programs(self) -> dict[str, list]:
        """The orphans by program (the command's first two words' base names): [count, CPU]."""
        found: dict[str, list] = {}
        for orphan in self.orphans:
            words = orphan.command.split()[:2]
            name = " ".join(os.path.basename(w) for w in words) or "(ended before it was seen)"
            entry = found.setdefault(name, [0, 0.0])
            entry[0] += 1
            entry[1] += orphan.cpu
        return found


def _set_subreaper(on: bool) -> bool:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0) == 0
    except (OSError, AttributeError):  # not Linux
        return False


def children(pid: int | None = None) -> list[int]:
    """The live children of ``pid`` (default: this process), over all its threads."""
    pid = pid or os.getpid()
    found = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as handle:
                found += [int(p) for p in handle.read().split()]
        except OSError:
            continue
    return found


def descendants(pid: int | None = None) -> list[int]:
    found, queue = [], children(pid)
    while queue:
        child = queue.pop()
        found.append(child)
        queue += children(child)
    return found


def command_of(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read().replace(b"\0", b" ").decode("utf-8", "replace").strip()
    except OSError:
        return ""


class Tree:
    """``with Tree() as tree: <start and wait for the main process>; outcome = tree.settle()``."""

    def __init__(self, interval: float = 0.2, bound: float = SETTLE_SECONDS):
        self.interval, self.bound = interval, bound
        self.commands: dict[int, str] = {}
        self.subreaper = False
        self._cgroup = cgroup_usage_file()[0]
        self._cgroup_before: float | None = None
        self._stop = threading.Event()
        self._watcher = threading.Thread(target=self._watch, name="e2e-orphan-watcher", daemon=True)

    def __enter__(self) -> Tree:
        self.subreaper = _set_subreaper(True)
        self._cgroup_before = _read_usage(self._cgroup)
        self._watcher.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._watcher.join()
        if self.subreaper:
            _set_subreaper(False)

    def _watch(self) -> None:
        while not self._stop.wait(self.interval):
            self.look()

    def look(self) -> None:
        """Note the command line of every child not seen yet (orphans are re-parented here)."""
        for pid in children():
            if not self.commands.get(pid):
                self.commands[pid] = command_of(pid)

    def settle(self) -> Outcome:
        """After the main process has been waited for: reap every other descendant."""
        self.look()
        exited = time.monotonic()
        orphans: list[Orphan] = []
        left: list[str] = []
        deadline = exited + self.bound
        while True:
            try:
                pid, _, usage = os.wait4(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid:
                command = self.commands.pop(pid, "")
                kind = "runner" if RUNNER_SCRIPT in command else "other"
                orphans.append(Orphan(pid, command[:300], usage.ru_utime + usage.ru_stime, kind))
                continue
            if time.monotonic() > deadline:
                left += self._kill_all()
                deadline = time.monotonic() + 5.0  # killed: what is left ends within moments
                continue
            self.look()
            time.sleep(0.05)
        settled = time.monotonic() - exited
        after = _read_usage(self._cgroup)
        cgroup = after - self._cgroup_before if after is not None and self._cgroup_before is not None else None
        return Outcome(orphans, left, settled, cgroup)

    def _kill_all(self) -> list[str]:
        killed = []
        for pid in descendants():
            command = command_of(pid) or self.commands.get(pid, "")
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                continue
            killed.append(f"{pid} {command[:200]}")
        return killed


# --- the cgroup's own CPU time ---------------------------------------------------------------


def cgroup_usage_file() -> tuple[str | None, str]:
    """The file holding the CPU time of this process's cgroup and a description, or None and
    why it is not used: it must be this process's alone (the root cgroup never is)."""
    try:
        with open("/proc/self/cgroup") as handle:
            lines = [line.rstrip("\n").split(":", 2) for line in handle if line.count(":") >= 2]
        with open("/proc/self/mountinfo") as handle:
            mounts = [line.split() for line in handle]
    except OSError as ex:
        return None, f"cgroups not readable ({ex})"
    candidates = []
    for _, controllers, path in lines:
        if "cpuacct" in controllers.split(","):
            candidates.append((_mount_of(mounts, "cgroup", "cpuacct"), path, "cpuacct.usage"))
        elif controllers == "":
            candidates.append((_mount_of(mounts, "cgroup2", None), path, "cpu.stat"))
    for mount, path, name in candidates:
        if mount is None:
            continue
        root, point = mount
        if not (path + "/").startswith(root.rstrip("/") + "/"):
            continue
        directory = os.path.join(point, path[len(root.rstrip("/")):].lstrip("/"))
        try:
            with open(os.path.join(directory, "cgroup.procs")) as handle:
                members = {int(p) for p in handle.read().split()}
        except OSError:
            continue
        usage = os.path.join(directory, name)
        if members != {os.getpid()}:
            return None, f"the benchmark's cgroup ({path}) holds {len(members)} processes, not only the benchmark"
        if _read_usage(usage) is not None:
            return usage, f"{usage}"
    return None, "no cgroup CPU accounting found for this process"


def _mount_of(mounts: list[list[str]], fstype: str, option: str | None) -> tuple[str, str] | None:
    """(root within the hierarchy, mount point) of a cgroup file system."""
    for fields in mounts:
        if "-" not in fields:
            continue
        tail = fields[fields.index("-") + 1:]
        if len(tail) >= 3 and tail[0] == fstype and (option is None or option in tail[2].split(",")):
            return fields[3], fields[4]
    return None


def _read_usage(path: str | None) -> float | None:
    """Seconds of CPU: ``cpuacct.usage`` (nanoseconds) or ``cpu.stat``'s ``usage_usec``."""
    if not path:
        return None
    try:
        with open(path) as handle:
            text = handle.read()
    except OSError:
        return None
    if path.endswith("cpu.stat"):
        for line in text.splitlines():
            key, _, value = line.partition(" ")
            if key == "usage_usec":
                return int(value) / 1e6
        return None
    return int(text.strip()) / 1e9
