"""A full disk in the runner's directory: no task lost, none run twice, the fallbacks counted by
reason, no process left after the controller exits.

The disk is real and really full: each ``ansible-playbook`` runs in a mount namespace of its own
(``unshare --mount``; ``--map-root-user`` too when not root) in which a small size- and
inode-limited tmpfs is mounted on ``$XDG_RUNTIME_DIR``, where the controller puts its private
runner directory, and is then filled until the kernel answers ``ENOSPC``: with data (no block
left: files and sockets can still be made, nothing can be written to them) or with empty files
(no inode left: nothing can be made at all).  Every write of the pool, the runner and the client
there meets the kernel's own error, where it would on a full ``/run/user/UID``; nothing is
stubbed.  (A symlink to ``/dev/full`` would not do: the pool opens its files with
``O_NOFOLLOW`` or ``O_EXCL``, so it would meet ``ELOOP``/``EEXIST`` instead.)  The namespace
also keeps the mount from outliving the run, and names every process the run started: after
the controller has exited, none may be left in it.

The same playbook runs in each case, one host at a time (``forks=1``: each count is exact): two
runners start (the second for modules run with ``TZ`` set, another start-up environment), the
disk fills (a task does it, while both serve), modules keep running on them, modules with yet
another ``TZ`` need a third runner, which cannot be started, the first runner is killed (a task
does it) so that the modules handed to its socket go the ordinary way after hand-over, and the
second runner serves to the last task, so that it has to end with the controller.  The reference
is plain ``ansible-playbook`` on the same files in the same kind of namespace: every task's
result must be the same, and each run of ``accel_observe`` (which appends a line per run to a
file outside the tmpfs) must appear once.
"""

from __future__ import annotations

import collections
import json
import os
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BIN = os.path.dirname(sys.executable)
RUNNER_SCRIPT = "_runner_server.py"

TMPFS_OPTIONS = "size=2m,nr_inodes=200,mode=0700"
HOSTS = ("h1", "h2")

PLAY = """\
- hosts: all
  gather_facts: false
  vars:
    d: "{{ work }}/{{ inventory_hostname }}"
    helper: "{{ ansible_python_interpreter }} {{ helper_script }}"
    observe: {record: "{{ record }}", label: "{{ inventory_hostname }} {{ stage }}"}
  tasks:
    - file: {path: "{{ d }}", state: directory}
    - accel_observe: "{{ observe }}"
      vars: {stage: first}
    - ping: {data: second runner}
      environment: {TZ: UTC}
    - accel_observe: "{{ observe }}"
      vars: {stage: second runner}
      environment: {TZ: UTC}
    - raw: "{{ helper }} wait-runners {{ xdg }}"
      run_once: true
    - accel_observe: "{{ observe }}"
      vars: {stage: served}
    - command: echo hello
    - raw: "{{ helper }} fill {{ xdg }} {{ fill }}"
      run_once: true
    - accel_observe: "{{ observe }}"
      vars: {stage: full}
    - copy: {content: "one\\n", dest: "{{ d }}/f.txt", mode: "0644"}
    - accel_observe: "{{ observe }}"
      vars: {stage: full second runner}
      environment: {TZ: UTC}
    - accel_observe: "{{ observe }}"
      vars: {stage: third runner}
      environment: {TZ: EST5EDT}
    - ping: {data: third runner}
      environment: {TZ: EST5EDT}
    - raw: "{{ helper }} kill-runners {{ xdg }} {{ killed }}"
      run_once: true
    - accel_observe: "{{ observe }}"
      vars: {stage: killed}
    - stat: {path: "{{ d }}/f.txt"}
    - file: {path: "{{ d }}", state: absent}
    - accel_observe: "{{ observe }}"
      vars: {stage: last second runner}
      environment: {TZ: UTC}
"""
STAGES = ("first", "second runner", "served", "full", "full second runner", "third runner", "killed",
          "last second runner")
MODULE_RUNS = 16 * len(HOSTS)  # copy runs two modules: stat, then copy
# Module runs after the first runner was killed, handed to its socket (accel_observe, stat, file).
AFTER_KILL = 3
NO_SPACE = "runner could not start: No space left on device"


# --- helpers run as ``python test_faults_disk.py COMMAND ...`` (in the namespace) -----------------


def runner_pids(xdg: str) -> dict[int, tuple[str, bool]]:
    """The live runners whose socket is under ``xdg``: pid -> (socket, whether TZ is set in
    its environment)."""
    found = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as handle:
                words = handle.read().split(b"\0")
            if len(words) > 2 and words[1].endswith(RUNNER_SCRIPT.encode()) and words[2].startswith(os.fsencode(xdg) + b"/"):
                with open(f"/proc/{name}/environ", "rb") as handle:
                    tz = any(entry.startswith(b"TZ=") for entry in handle.read().split(b"\0"))
                if _state(int(name)) not in ("Z", None):
                    found[int(name)] = (os.fsdecode(words[2]), tz)
        except OSError:
            continue
    return found


def _state(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def fill(path: str, what: str) -> None:
    """Fill the file system of ``path`` until ENOSPC: with data ("blocks") or empty files
    ("inodes")."""
    if what == "inodes":
        n = 0
        while True:
            try:
                os.close(os.open(os.path.join(path, f"fill-{n}"), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
            except FileExistsError:
                pass
            except OSError as ex:
                assert ex.errno == 28, ex
                return
            n += 1
    fd = os.open(os.path.join(path, "fill"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        while True:
            os.write(fd, bytes(65536))
    except OSError as ex:
        assert ex.errno == 28, ex
    finally:
        os.close(fd)
    fd = os.open(os.path.join(path, "fill"), os.O_WRONLY | os.O_APPEND)
    try:
        while True:  # the last partial block
            os.write(fd, b"\0")
    except OSError as ex:
        assert ex.errno == 28, ex
    finally:
        os.close(fd)


def enter(xdg: str, setup: str, ns_file: str, command: list[str]) -> None:
    """In a new mount namespace: the tmpfs on ``xdg``, prepared as ``setup`` says, then exec
    ``command``."""
    subprocess.run(["mount", "-t", "tmpfs", "-o", TMPFS_OPTIONS, "tmpfs", xdg], check=True)
    if setup == "full-client-installed":  # as a run before the disk filled up left it
        from ansible_accel import _native, _runner_pool

        base = _runner_pool.private_base()
        assert base.startswith(xdg + "/"), base
        _runner_pool.ensure_private_dir(base)
        _runner_pool._install_client(base, _native.runner_client_binary())
    if setup.startswith("full"):
        fill(xdg, "blocks")
    with open(ns_file, "w") as handle:
        handle.write(os.readlink("/proc/self/ns/mnt"))
    os.execv(command[0], command)


def wait_runners(xdg: str) -> None:
    """Wait until every runner started under ``xdg`` serves (its socket is there)."""
    deadline = time.monotonic() + 120
    while not all(os.path.exists(sock) for sock, _ in runner_pids(xdg).values()):
        if time.monotonic() > deadline:
            raise SystemExit("a runner did not start serving")
        time.sleep(0.05)


def kill_runners(xdg: str, out: str) -> None:
    """SIGKILL the runners under ``xdg`` started without TZ in their environment, and wait
    until they are dead; ``out`` gets a line "killed PID" or "spared PID" per runner."""
    runners = runner_pids(xdg)
    killed = [pid for pid, (_, tz) in runners.items() if not tz]
    for pid in killed:
        os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while set(killed) & set(runner_pids(xdg)) and time.monotonic() < deadline:
        time.sleep(0.02)
    with open(out, "w") as handle:
        handle.write("".join(f"{'killed' if p in killed else 'spared'} {p}\n" for p in runners))


if __name__ == "__main__":
    what, *args = sys.argv[1:]
    if what == "enter":
        enter(args[0], args[1], args[2], args[4:])
    elif what == "fill":
        fill(*args)
    elif what == "wait-runners":
        wait_runners(*args)
    elif what == "kill-runners":
        kill_runners(*args)
    sys.exit(0)


# --- the tests ----------------------------------------------------------------------------------

import pytest  # noqa: E402

# Four playbooks off and on, a few minutes: what fills the disk is the controller's pool, the
# same code on every interpreter, so make test runs them on one (3.12, ansible-core 2.21);
# ANSIBLE_ACCEL_TESTS_ALL_INTERPRETERS=1 runs them on each.
pytestmark = pytest.mark.skipif(
    sys.version_info[:2] != (3, 12) and os.environ.get("ANSIBLE_ACCEL_TESTS_ALL_INTERPRETERS") != "1",
    reason="the full-disk runs are made on Python 3.12 only (ANSIBLE_ACCEL_TESTS_ALL_INTERPRETERS=1: on each)")

sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))
from _playbook_run import RESULTS_CALLBACK  # noqa: E402
from test_playbook import _differences, _normalise  # noqa: E402


def _unshare() -> list[str]:
    return ["unshare", "--mount"] if os.geteuid() == 0 else ["unshare", "--map-root-user", "--mount"]


@pytest.fixture(scope="module")
def layout(tmp_path_factory):
    """One set of paths for every run (the results name them), and whether a tmpfs can be
    mounted in a namespace here."""
    base = tmp_path_factory.mktemp("disk")
    paths = {name: str(base / name) for name in
             ("xdg", "work", "record", "killed", "ns", "stats.json", "results.json", "play.yml", "hosts", "tmp")}
    os.mkdir(paths["xdg"], 0o700)
    os.mkdir(paths["tmp"], 0o700)
    probe = subprocess.run([*_unshare(), "mount", "-t", "tmpfs", "-o", TMPFS_OPTIONS, "tmpfs", paths["xdg"]],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(f"no tmpfs can be mounted in a mount namespace here: {probe.stderr.strip()}")
    with open(paths["play.yml"], "w") as handle:
        handle.write(PLAY)
    with open(paths["hosts"], "w") as handle:
        handle.write("".join(f"{h} ansible_connection=local ansible_python_interpreter={sys.executable}\n" for h in HOSTS))
    return paths


def _namespace_processes(ns: str) -> list[str]:
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                if os.readlink(f"/proc/{name}/ns/mnt") == ns:
                    with open(f"/proc/{name}/cmdline", "rb") as handle:
                        command = handle.read().replace(b"\0", b" ").decode(errors="replace")
                    found.append(f"{name} {command[:200]}")
            except OSError:
                continue
    return found


def _run(paths: dict, accel: bool, setup: str, fill_with: str) -> dict:
    for name in ("record", "killed", "ns", "stats.json", "results.json"):
        if os.path.exists(paths[name]):
            os.remove(paths[name])
    shutil.rmtree(paths["work"], ignore_errors=True)  # a failed run may have left it
    env = dict(os.environ, XDG_RUNTIME_DIR=paths["xdg"], ANSIBLE_LIBRARY=os.path.join(HERE, "library"),
               ANSIBLE_CALLBACK_PLUGINS=RESULTS_CALLBACK, ANSIBLE_CALLBACKS_ENABLED="e2e_results",
               E2E_RESULTS_FILE=paths["results.json"], ANSIBLE_ACCEL_STATS=paths["stats.json"],
               ANSIBLE_PIPELINING="1", ANSIBLE_NOCOLOR="1", ANSIBLE_FORKS="1", ANSIBLE_ACCEL_RUNNER="1",
               ANSIBLE_REMOTE_TMP=os.path.join(paths["tmp"], "remote"), ANSIBLE_LOCAL_TEMP=os.path.join(paths["tmp"], "local"))
    env.pop("PYTEST_CURRENT_TEST", None)  # the modules see the environment: the same in every run
    command = [os.path.join(BIN, "ansible-accel"), "ansible-playbook"] if accel else [os.path.join(BIN, "ansible-playbook")]
    command += ["-i", paths["hosts"], paths["play.yml"], "-e", f"work={paths['work']}", "-e", f"xdg={paths['xdg']}",
                "-e", f"record={paths['record']}", "-e", f"killed={paths['killed']}", "-e", f"fill={fill_with}",
                "-e", f"helper_script={os.path.abspath(__file__)}"]
    done = subprocess.run([*_unshare(), sys.executable, os.path.abspath(__file__), "enter", paths["xdg"], setup,
                           paths["ns"], "--", *command], env=env, capture_output=True, text=True, timeout=900)
    assert os.path.exists(paths["ns"]), done.stdout[-2000:] + done.stderr[-2000:]
    with open(paths["ns"]) as handle:
        ns = handle.read()
    # The runners end when they see the controller gone; every other process already has.
    deadline = time.monotonic() + 20
    while (left := _namespace_processes(ns)) and time.monotonic() < deadline:
        time.sleep(0.1)
    for entry in left:  # failed: reported below, and ended so that nothing outlives the test
        try:
            os.kill(int(entry.split()[0]), signal.SIGKILL)
        except ProcessLookupError:
            pass
    with open(paths["record"]) as handle:
        records = collections.Counter(" ".join(line.split()[:-1]) for line in handle)
    killed = collections.defaultdict(list)
    if os.path.exists(paths["killed"]):
        for line in open(paths["killed"]):
            what, pid = line.split()
            killed[what].append(int(pid))
    # Each run of accel_observe, before anything else: a module run twice must show as such.
    assert set(records.values()) == {1}, f"modules that ran more than once: {records}"
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-3000:]
    with open(paths["results.json"]) as handle:
        report = _normalise(json.load(handle))
    stats = None
    if accel:
        with open(paths["stats.json"]) as handle:
            stats = json.load(handle)
    return {"report": report, "stats": stats, "records": records, "killed": killed, "left": left,
            "runners_left": runner_pids(paths["xdg"]), "output": done.stdout}


@pytest.fixture(scope="module")
def reference(layout) -> dict:
    """Plain ansible-playbook (no runner) on the same play, in the same kind of namespace."""
    plain = _run(layout, accel=False, setup="space", fill_with="blocks")
    assert set(plain["records"]) == {f"{h} {s}" for h in HOSTS for s in STAGES}
    assert not plain["killed"] and plain["left"] == []
    return plain


def _check_common(run: dict, reference: dict) -> dict:
    """The checks of every case; returns the runner path's counts."""
    assert run["report"] == reference["report"], "\n".join(_differences(reference["report"], run["report"])[:20])
    assert run["records"] == reference["records"], "a module ran a different number of times"
    assert run["left"] == [], f"processes left after the controller exited: {run['left']}"
    assert run["runners_left"] == {}
    assert run["stats"]["installed"] is True, run["stats"]
    counts = run["stats"]["run"]["paths"]["runner"]
    if run["stats"]["runner"]["active"]:
        assert counts["native"] + sum(counts["fallback"].values()) == MODULE_RUNS, counts
    return counts


@pytest.mark.parametrize("fill_with", ["blocks", "inodes"])
def test_disk_fills_while_runners_serve(layout, reference, fill_with):
    """Modules keep running on the runners that serve; the runner that cannot be started and the
    modules handed to the killed runner's socket go the ordinary way, each counted by reason; the
    runner still serving at the end ends with the controller."""
    run = _run(layout, accel=True, setup="space", fill_with=fill_with)
    counts = _check_common(run, reference)
    assert len(run["killed"]["killed"]) == 1 and len(run["killed"]["spared"]) == 1, run["killed"]
    fallback = counts["fallback"]
    # On a full disk: accel_observe "served", "full", "full second runner" and "last second
    # runner", command, copy.
    assert counts["native"] >= 6 * len(HOSTS), counts
    # The third runner (TZ=EST5EDT): with no block left the first two runs are still noted (empty
    # files), then the runner's files cannot be written; with no inode left all four runs stop there.
    assert fallback.get(NO_SPACE) == (1 if fill_with == "blocks" else 2) * len(HOSTS), counts
    after = {k: v for k, v in fallback.items() if k.startswith("after hand-over")}
    assert list(after) and all(k.startswith("after hand-over: runner not reachable") for k in after), counts
    assert sum(after.values()) == AFTER_KILL * len(HOSTS), counts


def test_disk_full_before_the_client_is_installed(layout, reference):
    """The client cannot be written: the runner path is not used, and says why."""
    run = _run(layout, accel=True, setup="full", fill_with="blocks")
    counts = _check_common(run, reference)
    assert run["stats"]["runner"]["active"] is False
    assert "No space left on device" in (run["stats"]["runner"]["reason"] or ""), run["stats"]["runner"]
    assert counts == {"native": 0, "fallback": {}}, counts
    assert not run["killed"]


def test_disk_full_with_the_client_installed(layout, reference):
    """No runner can be started: every module goes the ordinary way, counted."""
    run = _run(layout, accel=True, setup="full-client-installed", fill_with="blocks")
    counts = _check_common(run, reference)
    assert run["stats"]["runner"]["active"] is True, run["stats"]["runner"]
    assert counts["native"] == 0, counts
    # The first two runs of each of the three kinds are noted (empty files still fit); then a
    # runner's files cannot be written.
    assert counts["fallback"] == {"too few modules yet to start a runner": 3 * 2, NO_SPACE: MODULE_RUNS - 3 * 2}, counts
    assert not run["killed"]["killed"] and not run["killed"]["spared"]
