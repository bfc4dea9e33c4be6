"""End to end over SSH: real ``ansible-playbook`` runs against a private sshd on this machine,
accelerator off and on, on with the remote runner (``on+remote``), and Mitogen, with
ansible-core's defaults (no pipelining) and with pipelining.

``python -m benches.e2e.ssh [--python PY] [--hosts N] [--addresses N] [--mode M]... [--pipelining {off,on,both}]
[--repeats N] [--playbook modules] [--json FILE] [--markdown FILE]``

The server is the SSH test bed's (``tests/ssh/_sshd.py``): Debian's sshd on 127.0.0.1..N (each
alias its own SSH connection and ControlPersist master, as distinct hosts), generated keys,
host keys checked against a generated ``known_hosts``, in a cgroup of its own.  The hosts'
interpreter is the controller environment's Python (the playbook's collections need its
packages on the host), given as ``ansible_python_interpreter``.

Each run starts with no SSH connection open and ends when every ControlPersist master of the
run has been ended (``ssh`` exits cleanly on SIGTERM) and the server has no process left for it, so a
run pays for its own connections and nothing carries over to the next.  Measured per run:

- wall: until ``ansible-playbook`` exits;
- controller: the CPU of every process the run started on the controller's side (``ansible-playbook``,
  its workers, ``ssh`` clients and masters, Mitogen's processes), by ``RUSAGE_CHILDREN`` with this
  process as their subreaper (``tree.py``);
- hosts: the CPU of the sshd's cgroup over the run (each connection's sshd, the shells, the module
  interpreters, anything they started);
- tree: the two together.

Every run's task results and printed lines are compared with the first "off" run of the same
pipelining setting (``compare.py``): a difference in an accelerated run is a problem; Mitogen's
are counted and listed, not failures.
"""

from __future__ import annotations

import datetime
import json
import os
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

from . import compare, tree
from .playbook_run import (
    HERE,
    accelerated,
    clean_environment,
    command_for,
    environment_of,
    unavailable,
)
from .run_e2e import make_inputs, run_order

REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "ssh"))
import _sshd

MODES = ("off", "on", "runner", "remote", "remote-py", "remote-sshproc", "remote-cmd", "mitogen")
# "on+remote": the accelerator as it comes, with the remote runner, which runs the modules in a
# warm runner on each host; "remote-py" the same with the Python client on every host
# (ANSIBLE_ACCEL_REMOTE_CLIENT=python) instead of the native one, shown as on+remote/py;
# "remote-sshproc" the same with an ssh process for every SSH command (ANSIBLE_ACCEL_SSH_CLIENT=0)
# instead of sessions opened in the ControlPersist master from the worker, on+remote/ssh;
# "remote-cmd" the same with an SSH command for every module
# (ANSIBLE_ACCEL_REMOTE_DIRECT=0) instead of a run through the host's keeper, on+remote/cmd.  The
# other accelerated modes have the remote runner switched off (ANSIBLE_ACCEL_REMOTE_RUNNER=0):
# "runner" ("on/no-remote") the controller-side paths alone, "on" the local runner off as well.
LABELS = {"off": "off", "on": "on/no-runners", "runner": "on/no-remote", "remote": "on+remote",
          "remote-py": "on+remote/py", "remote-sshproc": "on+remote/ssh", "remote-cmd": "on+remote/cmd",
          "mitogen": "mitogen"}
REMOTE_MODES = ("remote", "remote-py", "remote-sshproc", "remote-cmd")
NOT_BY_DEFAULT = ("on", "remote-py", "remote-sshproc", "remote-cmd")
SETTLE_SECONDS = 30.0
MAX_LISTEN_ADDRESSES = 16  # sshd's limit on the sockets it listens on


def inventory(server: _sshd.Sshd, hosts: int, python: str, remote_tmp: str) -> str:
    lines = ["[e2e]"]
    for i in range(1, hosts + 1):
        values = dict(server.host_vars(server.addresses[(i - 1) % len(server.addresses)]),
                      ansible_python_interpreter=python, ansible_remote_tmp=remote_tmp)
        lines.append(f"host{i:02d}" + "".join(f" {k}='{v}'" if " " in v else f" {k}={v}" for k, v in values.items()))
    return "\n".join(lines) + "\n"


def _end_connections(server: _sshd.Sshd) -> None:
    """End this run's ControlPersist masters and wait (bounded) for the server's processes for it to end."""
    for pid in server.control_masters():
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + SETTLE_SECONDS
    while (server.control_masters() or server.host_processes()) and time.monotonic() < deadline:
        time.sleep(0.05)


def one_run(env: dict, server: _sshd.Sshd, playbook: str, mode: str, pipelining: bool, work: str, inputs: str,
            hosts: int, remote_tmp: str) -> dict:
    root = os.path.join(work, "files")
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root)
    results_file, stats_file = os.path.join(work, "results.json"), os.path.join(work, "stats.json")
    for path in (results_file, stats_file):
        if os.path.exists(path):
            os.remove(path)
    inventory_file = os.path.join(work, "inventory.ini")
    with open(inventory_file, "w") as handle:
        handle.write(inventory(server, hosts, env["executable"], remote_tmp))
    environ = clean_environment(
        ANSIBLE_CONFIG=os.path.join(HERE, "ssh.cfg"),
        ANSIBLE_CALLBACK_PLUGINS=os.path.join(HERE, "callback_plugins"),
        ANSIBLE_CALLBACKS_ENABLED="e2e_results",
        ANSIBLE_LIBRARY=os.path.join(HERE, "library"),
        ANSIBLE_LOCAL_TEMP=os.path.join(work, "local-tmp"),
        ANSIBLE_PIPELINING=str(pipelining),
        E2E_RESULTS_FILE=results_file,
    )
    args = ["-i", inventory_file, os.path.join(HERE, f"{playbook}.yml"), "-e", f"e2e_root={root}", "-e", f"e2e_inputs={inputs}"]
    command = command_for(env, "runner" if mode in REMOTE_MODES else mode, environ, work, stats_file)
    environ["ANSIBLE_ACCEL_REMOTE_RUNNER"] = "1" if mode in REMOTE_MODES else "0"
    if mode == "remote-py":
        environ["ANSIBLE_ACCEL_REMOTE_CLIENT"] = "python"
    if mode == "remote-sshproc":
        environ["ANSIBLE_ACCEL_SSH_CLIENT"] = "0"
    if mode == "remote-cmd":
        environ["ANSIBLE_ACCEL_REMOTE_DIRECT"] = "0"
    _end_connections(server)  # nothing open from before
    load_before = list(os.getloadavg())
    hosts_before = server.cpu()
    with tree.Tree() as processes:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        completed = subprocess.run([*command, *args], check=False, env=environ, cwd=HERE, stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, text=True, errors="replace")
        wall = time.perf_counter() - started
        _end_connections(server)
        outcome = processes.settle()
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    hosts_cpu = server.cpu() - hosts_before if hosts_before is not None else None
    controller = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    left_on_hosts = [f"{p} {_sshd.command_line(p)[:200]}" for p in server.host_processes()]
    server.kill_host_processes()
    return {
        "mode": mode, "pipelining": pipelining, "returncode": completed.returncode, "wall": wall,
        "controller_cpu": controller, "hosts_cpu": hosts_cpu, "cpu": controller + (hosts_cpu or 0.0),
        "left_behind": outcome.left_behind, "left_on_hosts": left_on_hosts,
        "outlived": outcome.programs(), "load_before": load_before, "load_after": list(os.getloadavg()),
        "output": completed.stdout, "results": _load(results_file),
        "stats": _load(stats_file) if _accelerated(mode) else None,
    }


def _accelerated(mode: str) -> bool:
    return mode in REMOTE_MODES or accelerated(mode)


def remote_counts(run: dict, path: str = "remote_runner") -> dict | None:
    """The counters of ``path`` in a run (native, fallbacks by reason), or None: the remote
    runner's by default."""
    paths = ((run.get("stats") or {}).get("run") or {}).get("paths") or {}
    return paths.get(path)


def _load(path: str) -> dict | None:
    try:
        with open(path) as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return None


def describe(run: dict) -> str:
    hosts = "n/a" if run["hosts_cpu"] is None else f"{run['hosts_cpu']:.1f}s"
    return (f"{run['wall']:.1f}s wall, tree {run['cpu']:.1f}s CPU (controller {run['controller_cpu']:.1f}s, "
            f"sshd and hosts {hosts}), load {run['load_before'][0]:.2f} -> {run['load_after'][0]:.2f}"
            + ("" if run["returncode"] == 0 else f", EXIT STATUS {run['returncode']}")
            + (f", {len(run['left_behind'])} PROCESSES LEFT BEHIND" if run["left_behind"] else "")
            + (f", {len(run['left_on_hosts'])} PROCESSES LEFT ON THE HOSTS" if run["left_on_hosts"] else "")
            + (f", remote runner {counts['native']} native, {sum(counts['fallback'].values())} fallbacks"
               if run["mode"] in REMOTE_MODES and (counts := remote_counts(run)) else "")
            + (f", ssh sessions through the master {counts['native']}, by ssh {sum(counts['fallback'].values())}"
               if (counts := remote_counts(run, "ssh_client")) else ""))


def check(run: dict, reference: dict | None) -> tuple[list[str], list[str]]:
    """(problems, differences reported for Mitogen) of ``run`` against the reference off run."""
    problems: list[str] = []
    if run["returncode"] != 0:
        fatal = [line[:300] for line in run["output"].splitlines() if line.startswith(("fatal:", "failed:", "ERROR"))]
        problems.append(f"exit status {run['returncode']}: {fatal[:4] or run['output'][-600:]}")
    if run["left_behind"] or run["left_on_hosts"]:
        problems.append(f"processes left behind: {(run['left_behind'] + run['left_on_hosts'])[:4]}")
    if _accelerated(run["mode"]):
        stats = run["stats"] or {}
        if not stats.get("installed"):
            problems.append(f"the accelerator was not installed ({stats.get('reason')})")
        elif run["mode"] in REMOTE_MODES and not (remote_counts(run) or {}).get("native"):
            problems.append(f"no module ran in a remote runner ({remote_counts(run)})")
    if reference is None:
        return problems, []
    if run["mode"] == "mitogen":
        return problems, compare.differences_by_task(reference["results"], reference["output"], run["results"],
                                                     run["output"], labels=("off", "mitogen"))
    problems += compare.differences(reference["results"], reference["output"], run["results"], run["output"],
                                    labels=("off run 1", run["mode"]))
    return problems, []


def _median(runs: list[dict], key: str) -> float | None:
    values = [r[key] for r in runs if r.get(key) is not None]
    return statistics.median(values) if values else None


def table(report: dict) -> list[str]:
    header = (f"{'setting':<12} {'mode':<16} {'runs':>4} {'wall s':>8} {'tree CPU s':>10} {'controller':>10} {'hosts':>8}"
              f" {'CPU/off':>8} {'wall/off':>8} {'CPU/mitogen':>11} {'wall/mitogen':>12}  results")
    lines = [header]
    for setting, entry in report["settings"].items():
        runs = entry["runs"]
        medians = {m: {k: _median([r for r in runs if r["mode"] == m], k) for k in ("wall", "cpu", "controller_cpu", "hosts_cpu")}
                   for m in report["modes"]}
        for mode in report["modes"]:
            mine = [r for r in runs if r["mode"] == mode]
            if not mine:
                continue
            m, off, mit = medians[mode], medians.get("off", {}), medians.get("mitogen", {})

            def ratio(a, b):
                return f"{a / b:.3f}" if a is not None and b else "-"
            compared = any(r["mode"] == "off" for r in runs)  # results are compared with the first off run
            if entry["problems"].get(mode):
                result = f"{len(entry['problems'][mode])} PROBLEMS"
            elif not compared or mode == "off":
                result = "not compared (no off run)" if not compared else "identical"
            elif mode == "mitogen":
                result = f"{len(entry['reported'])} differences (reported)"
            else:
                result = "identical"
            hosts = "-" if m["hosts_cpu"] is None else f"{m['hosts_cpu']:.1f}"
            lines.append(f"{setting:<12} {LABELS[mode]:<16} {len(mine):>4} {m['wall']:>8.1f} {m['cpu']:>10.1f} "
                         f"{m['controller_cpu']:>10.1f} {hosts:>8} {ratio(m['cpu'], off.get('cpu')):>8} "
                         f"{ratio(m['wall'], off.get('wall')):>8} {ratio(m['cpu'], mit.get('cpu')):>11} "
                         f"{ratio(m['wall'], mit.get('wall')):>12}  {result}")
    return lines


def markdown(report: dict) -> str:
    about = (f"`{report['playbook']}.yml` on ansible-core {report['env']['ansible_core']} (Python {report['env']['python']}), "
           f"{report['hosts']} host aliases on {report['addresses']} loopback addresses of one private sshd, "
           f"remote tmp `{report.get('remote_tmp', 'an absolute path')}`, {report['repeats']} repeat(s); Mitogen {report['env']['mitogen'].get('version') or 'not run'}. "
           f"Machine: {report['machine']['cpus']} CPUs, load average at the start {report['machine']['load'][0]:.2f}. "
           "Tree CPU = the controller's processes plus the sshd's cgroup (every process it started for the hosts).")
    out = [f"# End to end over SSH ({report['started']})", "", about, "", "```", *table(report), "```", ""]
    for setting, entry in report["settings"].items():
        for mode, problems in entry["problems"].items():
            out += [f"- PROBLEM ({setting}, {mode}): {p}" for p in problems]
        out += [f"- mitogen differs ({setting}): {d}" for d in entry["reported"][:40]]
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m benches.e2e.ssh", description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", default=sys.executable, help="interpreter of a venv with ansible and ansible-accel")
    parser.add_argument("--hosts", type=int, default=2, help="host aliases (default 2)")
    parser.add_argument("--addresses", type=int, default=0, help="loopback addresses to spread them over (default: one each, at most 16)")
    parser.add_argument("--mode", action="append", choices=MODES, help="only these modes (default: off, runner (shown as on/no-remote), remote (on+remote), mitogen)")
    parser.add_argument("--pipelining", choices=("off", "on", "both"), default="both")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--playbook", default="modules", choices=("modules",))
    parser.add_argument("--remote-tmp", choices=("home", "absolute"), default="home",
                        help="the hosts' remote tmp: under ~ as ansible-core's default (~/.ansible/tmp) is, expanded "
                             "by the hosts (default), or an absolute path")
    parser.add_argument("--json")
    parser.add_argument("--markdown")
    options = parser.parse_args(argv)
    modes = tuple(m for m in MODES if (options.mode and m in options.mode) or (not options.mode and m not in NOT_BY_DEFAULT))
    env = environment_of(options.python)
    skipped = {m: r for m in modes if (r := unavailable(env, m))}
    modes = tuple(m for m in modes if m not in skipped)
    settings = {"off": [False], "on": [True], "both": [False, True]}[options.pipelining]
    # One loopback address per host alias, up to the 16 addresses sshd listens on at most.
    addresses = options.addresses or min(options.hosts, MAX_LISTEN_ADDRESSES)
    report = {"started": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
              "playbook": options.playbook, "hosts": options.hosts, "addresses": addresses, "repeats": options.repeats,
              "modes": list(modes), "skipped": skipped, "finished": False,
              "env": {k: env[k] for k in ("python", "ansible_core", "mitogen")},
              "machine": {"cpus": os.cpu_count(), "load": list(os.getloadavg())}, "settings": {}}
    for mode, reason in skipped.items():
        print(f"   no {LABELS[mode]} runs: {reason}")
    work = tempfile.mkdtemp(prefix="ansible-accel-e2e-ssh-")
    # Short: the remote runner's socket lives under it, and a socket's path has at most 107 bytes.
    home_tmp = f".accel-e2e-{os.getpid()}"
    remote_tmp = f"~/{home_tmp}/tmp" if options.remote_tmp == "home" else os.path.join(work, "rt")
    report["remote_tmp"] = remote_tmp.replace(str(os.getpid()), "PID")
    server = _sshd.Sshd(addresses=addresses, detach=True)
    try:
        inputs = os.path.join(work, "inputs")
        make_inputs(env, inputs)
        print(f"== e2e over SSH: {options.playbook}.yml, ansible-core {env['ansible_core']}, {options.hosts} hosts on "
              f"sshd port {server.port} ({'cgroup ' + server.cgroup if server.cgroup else 'no cgroup: hosts CPU not read'})",
              flush=True)
        for pipelining in settings:
            setting = "pipelining" if pipelining else "defaults"
            entry = report["settings"][setting] = {"runs": [], "problems": {}, "reported": []}
            reference = None
            for repeat in range(options.repeats):
                for mode in run_order(modes, repeat):
                    print(f"   [{setting}, repeat {repeat + 1}] {LABELS[mode]} ...", end="", flush=True)
                    run = one_run(env, server, options.playbook, mode, pipelining, work, inputs, options.hosts, remote_tmp)
                    print(" " + describe(run), flush=True)
                    problems, reported = check(run, reference)
                    if reference is None and mode == "off":
                        reference = run
                    if problems:
                        entry["problems"].setdefault(mode, []).extend(problems)
                    for difference in reported:
                        if difference not in entry["reported"]:
                            entry["reported"].append(difference)
                    kept = {k: v for k, v in run.items() if k not in ("output", "results", "stats")}
                    if mode in REMOTE_MODES:
                        kept["remote_runner"] = remote_counts(run)
                    if _accelerated(mode):
                        kept["ssh_client"] = remote_counts(run, "ssh_client")
                    entry["runs"].append(kept)
                    _write(report, options)
        report["finished"] = True
        _write(report, options)
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(os.path.join(os.path.expanduser("~"), home_tmp), ignore_errors=True)
    print()
    for line in table(report):
        print(line)
    failed = False
    for setting, entry in report["settings"].items():
        for mode, problems in entry["problems"].items():
            for problem in problems:
                print(f"   PROBLEM ({setting}, {LABELS[mode]}): {problem}")
                failed = True
        for difference in entry["reported"][:20]:
            print(f"   mitogen differs ({setting}): {difference}")
    return 1 if failed else 0


def _write(report: dict, options) -> None:
    for path, text in ((options.json, lambda: json.dumps(report, indent=1)), (options.markdown, lambda: markdown(report))):
        if path:
            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
            with open(path + ".part", "w") as handle:
                handle.write(text())
            os.replace(path + ".part", path)


if __name__ == "__main__":
    sys.exit(main())
