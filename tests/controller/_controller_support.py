"""Real ``ansible-playbook`` runs for the ``controller`` and ``workers`` paths' tests, the two paths
on or both off, and what to compare of them: the results, the callbacks in the order ansible-core
fired them, the printed lines, the exit status and the processes left."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time

BIN = os.path.dirname(sys.executable)
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CALLBACKS = os.pathsep.join([os.path.join(ROOT, "benches", "e2e", "callback_plugins"), os.path.join(HERE, "callback_plugins")])
VOLATILE = ("start", "end", "delta")
BOTH_OFF = {"ANSIBLE_ACCEL_CONTROLLER": "0", "ANSIBLE_ACCEL_WORKERS": "0"}
# Callbacks about the play rather than one host: in a linear play they mark where each task's
# host events begin and end.
PLAY_EVENTS = ("v2_playbook_on_start", "v2_playbook_on_play_start", "v2_playbook_on_task_start",
               "v2_playbook_on_handler_task_start", "v2_playbook_on_no_hosts_matched",
               "v2_playbook_on_no_hosts_remaining", "v2_playbook_on_stats")


class Run:
    def __init__(self, returncode: int, stdout: str, stderr: str, results: dict | None, events: list, stats: dict,
                 left: list[str]):
        self.returncode, self.stdout, self.stderr, self.results = returncode, stdout, stderr, results
        self.events, self.stats, self.left = events, stats, left


def inventory(tmp_path, names) -> str:
    path = tmp_path / "hosts"
    path.write_text("".join(f"{n} ansible_connection=local ansible_python_interpreter={sys.executable}\n" for n in names))
    return str(path)


def run(tmp_path, play: str, hosts, *, off: bool, forks: int = 3, interrupt_when: tuple[str, ...] = (),
        interrupt_after: float = 0.5, interrupt_running: tuple[str, int] | None = None, timeout: float = 120) -> Run:
    """``ansible-accel ansible-playbook`` of ``play`` on local ``hosts``; with ``off`` the
    ``controller`` and ``workers`` paths switched off.  With ``interrupt_when``: SIGINT to the
    run's process group, as a terminal's Ctrl-C, ``interrupt_after`` seconds after all those
    texts have been printed and, with ``interrupt_running`` (a command line and a count), once
    that many processes of the run have that command line: the moment modules are running is
    then seen, not guessed, however loaded the machine.  Processes the run leaves are killed
    after they have been noted."""
    work = tmp_path / ("off" if off else "on")
    work.mkdir(exist_ok=True)
    (tmp_path / "play.yml").write_text(play)  # one path for both runs: printed in error messages
    hosts_file = inventory(tmp_path, hosts)
    results, stats, order = work / "results.json", work / "stats.json", work / "order.jsonl"
    for path in (results, stats, order):
        path.unlink(missing_ok=True)
    env = dict(os.environ, ANSIBLE_CALLBACK_PLUGINS=CALLBACKS, ANSIBLE_CALLBACKS_ENABLED="e2e_results,accel_order",
               ANSIBLE_ACTION_PLUGINS=os.path.join(HERE, "action_plugins"), E2E_RESULTS_FILE=str(results),
               ACCEL_ORDER_FILE=str(order), ANSIBLE_ACCEL_STATS=str(stats), ANSIBLE_NOCOLOR="1", ANSIBLE_FORKS=str(forks),
               PYTHONUNBUFFERED="1", **(BOTH_OFF if off else {}))
    process = subprocess.Popen([os.path.join(BIN, "ansible-accel"), "ansible-playbook", "-i", hosts_file, str(tmp_path / "play.yml")],
                               env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    seen: dict[int, str] = {}
    watching = threading.Event()
    watcher = threading.Thread(target=_watch, args=(process.pid, seen, watching), daemon=True)
    watcher.start()
    out: list[str] = []
    reader = threading.Thread(target=lambda: out.extend(process.stdout), daemon=True)
    reader.start()
    err_reader = []
    err_thread = threading.Thread(target=lambda: err_reader.append(process.stderr.read()), daemon=True)
    err_thread.start()
    deadline = time.monotonic() + timeout
    if interrupt_when:
        while (not (all(text in "".join(out) for text in interrupt_when) and _running(process.pid, interrupt_running))
               and process.poll() is None and time.monotonic() < deadline):
            time.sleep(0.05)
        time.sleep(interrupt_after)
        os.killpg(process.pid, signal.SIGINT)
    try:
        returncode = process.wait(max(deadline - time.monotonic(), 1))
    except subprocess.TimeoutExpired:
        for pid in [process.pid, *_descendants(process.pid)]:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        raise
    watching.set()
    watcher.join()
    reader.join(10)
    err_thread.join(10)
    left = _left(seen)
    for entry in left:
        try:
            os.kill(int(entry.split()[0]), signal.SIGKILL)
        except ProcessLookupError:
            pass
    report = json.loads(results.read_text()) if results.exists() else None
    if report:
        for tasks in report["hosts"].values():
            for task in tasks:
                for key in VOLATILE:
                    task["result"].pop(key, None)
    events = [json.loads(line) for line in order.read_text().splitlines()] if order.exists() else []
    return Run(returncode, "".join(out), err_reader[0] if err_reader else "", report, events,
               json.loads(stats.read_text()) if stats.exists() else {}, left)


def _descendants(pid: int) -> list[int]:
    found, queue = [], [pid]
    while queue:
        parent = queue.pop()
        try:
            tasks = os.listdir(f"/proc/{parent}/task")
        except OSError:
            continue
        for tid in tasks:
            try:
                with open(f"/proc/{parent}/task/{tid}/children") as handle:
                    children = [int(p) for p in handle.read().split()]
            except OSError:
                continue
            found += children
            queue += children
    return found


def _running(pid: int, wanted: tuple[str, int] | None) -> bool:
    if wanted is None:
        return True
    command, count = wanted
    return sum(_command(child) == command for child in _descendants(pid)) >= count


def _command(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def _state(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rpartition(")")[2].split()[0]
    except OSError:
        return "gone"


def _watch(pid: int, seen: dict[int, str], stop: threading.Event) -> None:
    """Every process the run starts (workers start sessions of their own, so the process group
    does not hold them), noted while the run lasts."""
    while not stop.is_set():
        for child in _descendants(pid):
            seen.setdefault(child, _command(child))
        stop.wait(0.02)


def _left(seen: dict[int, str], grace: float = 5.0) -> list[str]:
    """The processes of the run still alive (not a zombie) ``grace`` seconds after it ended."""
    deadline = time.monotonic() + grace
    while True:
        alive = [f"{pid} {command}" for pid, command in seen.items()
                 if _state(pid) not in ("gone", "Z", "X") and _command(pid) == command]
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.1)


def canonical_events(events: list, free_plays: tuple[str, ...] = ()) -> list:
    """The callbacks fired, as far as their order does not depend on which host finishes first
    (it differs from run to run, with or without the accelerator): in a linear play, the host
    events between two play events sorted; in a free play, each host's events in order and the
    play events sorted."""
    plays: list[tuple[str, list]] = [("", [])]
    for event in events:
        if event[0] == "v2_playbook_on_play_start":
            plays.append((event[1][0], []))
        plays[-1][1].append(event)
    canonical = []
    for name, play in plays:
        if name in free_plays:
            hosts: dict[str, list] = {}
            for event in play:
                if event[0] not in PLAY_EVENTS:
                    hosts.setdefault(_host_of(event), []).append(event)
            # a free play starts a task once for each host that reaches it, as the hosts progress
            canonical.append([name, sorted((e for e in play if e[0] in PLAY_EVENTS), key=json.dumps), sorted(hosts.items())])
            continue
        segment: list = []
        for event in play:
            if event[0] in PLAY_EVENTS:
                canonical += sorted(segment, key=json.dumps)
                canonical.append(event)
                segment = []
            else:
                segment.append(event)
        canonical += sorted(segment, key=json.dumps)
    return canonical


def _host_of(event: list) -> str:
    for arg in event[1]:
        if isinstance(arg, dict) and "host" in arg:
            return arg["host"]
    if event[0] == "v2_playbook_on_notify":
        return str(event[1][1])
    return str(event[1][0])


def printed(output: str, free_plays: tuple[str, ...] = ()) -> list:
    """The printed lines, sorted within each task (hosts report in the order they finish); of a
    free play only the hosts' result lines, sorted (task headers interleave with them as the
    hosts progress)."""
    blocks, current = [], []
    for line in output.splitlines():
        if line.startswith(("PLAY [", "TASK [", "RUNNING HANDLER [", "PLAY RECAP")):
            blocks.append(current)
            current = [line]
        else:
            current.append(line)
    blocks.append(current)
    lines, free = [], False
    reports = ("ok: [", "changed: [", "skipping: [", "fatal: [", "failed: [", "included: [")
    for block in blocks:
        if block and block[0].startswith("PLAY ["):
            free = any(f"PLAY [{name}]" in block[0] for name in free_plays)
            lines.append(block[0])
            continue
        if free:
            lines += [("free", line) for line in block if line.startswith(reports)]
        else:
            lines.append(sorted(block))
    if any(isinstance(line, tuple) for line in lines):
        lines = [line for line in lines if not isinstance(line, tuple)] + sorted(l for l in lines if isinstance(l, tuple))
    return lines
