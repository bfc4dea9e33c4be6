"""A module's start on the controller's machine: a fresh interpreter against the warm runner.

Each module's AnsiBallZ file (built by ``modify_module``, as a worker builds it) is run the way
the local connection runs it: ``/bin/sh -c 'PYTHON SCRIPT'``, and ``/bin/sh -c 'ansible-accel-run
SOCKET PYTHON SCRIPT'`` through a runner started for the benchmark.  The figure is CPU per run
of everything involved: the shell, the interpreter or the client, and the runner with the child
it forks (read from /proc, since the runner is not a child of this process), once the runner has
served as many children as it takes to make its heap immortal.  The module's result (its JSON,
times of day left out) and exit status must be the same both ways."""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

from ._harness import Row

MODULES = (
    ("ping", {}),
    ("command", {"_raw_params": "true"}),
    ("copy", {"content": "x", "dest": "/nonexistent-dir/x"}),
    ("stat", {"path": "/"}),
    ("community.general.ini_file", {"path": "/nonexistent-dir/x.ini", "section": "s", "option": "o", "value": "v", "create": False}),
)
QUICK_MODULES = MODULES[:1]
_VOLATILE_KEYS = ("start", "end", "delta")
_TICK = os.sysconf("SC_CLK_TCK")
_loader_ready = False


def _build(module: str, args: dict, workdir: str) -> bytes | None:
    from ansible.executor import module_common
    from ansible.parsing.dataloader import DataLoader
    from ansible.plugins.loader import init_plugin_loader, module_loader
    from ansible.template import Templar

    global _loader_ready
    if not _loader_ready:  # once: it warns when redone
        init_plugin_loader()
        _loader_ready = True
    path = module_loader.find_plugin(module)
    if path is None:
        return None
    task_vars = {"ansible_python_interpreter": sys.executable, "ansible_connection": "local"}
    built = module_common.modify_module(
        module_name=module.rpartition(".")[2], module_path=path, module_args=args,
        templar=Templar(loader=DataLoader(), variables=task_vars), task_vars=task_vars, module_compression="ZIP_DEFLATED",
    )
    return built.b_module_data


def _build_with_bytecode(module: str, args: dict, workdir: str) -> bytes | None:
    """The payload the accelerator's ``bytecode`` path builds for this interpreter."""
    import ansible_accel
    from ansible_accel._integrations import bytecode

    saved = {k: os.environ.get(k) for k in ("ANSIBLE_ACCEL_BYTECODE", "ANSIBLE_ACCEL_BYTECODE_CACHE")}
    os.environ.update(ANSIBLE_ACCEL_BYTECODE="1", ANSIBLE_ACCEL_BYTECODE_CACHE=os.path.join(workdir, "pyc-cache"))
    installed = ansible_accel.status()["installed"]
    from ansible import constants as C

    local_tmp = C.DEFAULT_LOCAL_TMP
    C.DEFAULT_LOCAL_TMP = tempfile.mkdtemp(dir=workdir)  # ansible-core's payload cache of its own
    ansible_accel.install()
    try:
        if not bytecode._active:
            return None
        return _build(module, args, workdir)
    finally:
        C.DEFAULT_LOCAL_TMP = local_tmp
        if not installed:
            ansible_accel.uninstall()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _tree_cpu(pid: int) -> float:
    """CPU of a process and of the children it has reaped."""
    with open(f"/proc/{pid}/stat") as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    return sum(int(x) for x in fields[11:15]) / _TICK


def _run(command: str, runner_pid: int | None) -> tuple[float, object]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    runner_before = _tree_cpu(runner_pid) if runner_pid else 0.0
    done = subprocess.run(["/bin/sh", "-c", command], capture_output=True, timeout=120, cwd="/")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    if runner_pid:
        cpu += _tree_cpu(runner_pid) - runner_before
    try:
        result = json.loads(done.stdout)
        for key in _VOLATILE_KEYS:
            result.pop(key, None)
    except ValueError:
        result = ("not JSON", done.stdout, done.stderr)
    return cpu, (done.returncode, result)


def _start_runner(workdir: str, script: bytes):
    from ansible_accel import _native, _runner_pool

    pool = _runner_pool._Pool
    rundir = os.path.join(workdir, "run")
    os.mkdir(rundir, 0o700)
    client = _runner_pool._install_client(workdir, _native.runner_client_binary())
    saved = (pool.rundir, pool.lifeline, pool.core_version, pool.spawned)
    lifeline = os.pipe2(os.O_CLOEXEC)
    pool.rundir, pool.lifeline, pool.core_version, pool.spawned = rundir, lifeline, "bench", []
    try:
        env = dict(os.environ)
        sock = None
        for _ in range(_runner_pool.START_AFTER + 1):
            sock, _reason = _runner_pool.runner_socket(sys.executable, env, script)
        process = pool.spawned[0]
        sock = os.path.join(rundir, _runner_pool.runner_key(sys.executable, env) + ".sock")
    finally:
        pool.rundir, pool.lifeline, pool.core_version, pool.spawned = saved
    deadline = time.monotonic() + 60
    while not os.path.exists(sock):
        if time.monotonic() > deadline or process.poll() is not None:
            raise RuntimeError("the runner did not start")
        time.sleep(0.02)
    return client, sock, process, lifeline


def run(quick: bool) -> list[Row]:
    if not sys.platform.startswith("linux"):
        print("runner: Linux only")
        return []
    rows: list[Row] = []
    repeat = 5 if quick else 20
    with tempfile.TemporaryDirectory(prefix="bench-runner-") as workdir:
        os.chmod(workdir, 0o700)
        scripts = {}
        for module, args in QUICK_MODULES if quick else MODULES:
            data = _build(module, args, workdir)
            if data is None:
                print(f"runner: {module} is not installed here; skipped")
                continue
            scripts[module] = os.path.join(workdir, f"AnsiballZ_{module.rpartition('.')[2]}.py")
            with open(scripts[module], "wb") as handle:
                handle.write(data)
        if not scripts:
            return rows
        client, sock, process, lifeline = _start_runner(workdir, open(next(iter(scripts.values())), "rb").read())
        try:
            # A runner that has served a while: it makes its heap immortal once it has started
            # IMMORTAL_AFTER children (docs/runner.md), which the figures below are with.
            from ansible_accel._runner_server import IMMORTAL_AFTER

            first = next(iter(scripts.values()))
            for _ in range(IMMORTAL_AFTER):
                _run(f"{client} {sock} {sys.executable} {first}", None)
            for module, path in scripts.items():
                fresh_cmd = f"{sys.executable} {path}"
                warm_cmd = f"{client} {sock} {sys.executable} {path}"
                _, expected = _run(fresh_cmd, None)
                for _ in range(3):  # the runner keeps what the first children compile
                    _, got = _run(warm_cmd, process.pid)
                # The runner's side is read from /proc in clock ticks: summed over every warm run
                # and shared out evenly, so its rounding is one tick over all of them, not one a run.
                fresh_cpu, client_cpu = [], []
                runner_before = _tree_cpu(process.pid)
                for _ in range(repeat):
                    fresh_cpu.append(_run(fresh_cmd, None)[0])
                    client_cpu.append(_run(warm_cmd, None)[0])
                runner_share = (_tree_cpu(process.pid) - runner_before) / repeat
                warm_cpu = [c + runner_share for c in client_cpu]
                row = Row("runner", "module start, CPU per run", module, statistics.mean(fresh_cpu),
                          statistics.mean(warm_cpu), _spread(fresh_cpu), _spread(warm_cpu), expected == got)
                print(row.line(), flush=True)
                rows.append(row)
            rows += _bytecode_rows(scripts, workdir, client, sock, process, quick, repeat)
        finally:
            for fd in lifeline:
                os.close(fd)
            process.wait(timeout=30)
        fallbacks = sock + ".fallbacks"
        if os.path.exists(fallbacks):
            print(f"runner: modules that went the ordinary way: {open(fallbacks).read().splitlines()}")
    return rows


def _bytecode_rows(scripts, workdir, client, sock, process, quick, repeat) -> list[Row]:
    """The same modules through the same runner, their payload without bytecode against with it
    (the ``bytecode`` path's, for this interpreter): CPU per run once each script has run a few
    times, results compared."""
    rows = []
    args = dict(QUICK_MODULES if quick else MODULES)
    pairs = {}
    for module, path in scripts.items():
        data = _build_with_bytecode(module, args[module], workdir)
        if data is None:
            print(f"runner: no bytecode payload for {module} (the bytecode path is not active)")
            continue
        with_path = os.path.join(workdir, f"bytecode-{module}", f"AnsiballZ_{module.rpartition('.')[2]}.py")
        os.makedirs(os.path.dirname(with_path))
        with open(with_path, "wb") as handle:
            handle.write(data)
        pairs[module] = (path, with_path)
    if not pairs:
        return rows
    rows.append(_first_runs(pairs, workdir, client))
    for module, (path, with_path) in pairs.items():
        data = open(with_path, "rb").read()
        commands = [f"{client} {sock} {sys.executable} {p}" for p in (path, with_path)]
        results = []
        for command in commands:
            for _ in range(3):
                results.append(_run(command, process.pid)[1])
        cpu = ([], [])
        for _ in range(repeat):  # alternating; the runner's side of each read around each run
            for i, command in enumerate(commands):
                before = _tree_cpu(process.pid)
                own = _run(command, None)[0]
                cpu[i].append((own, _tree_cpu(process.pid) - before))
        # per run: its own processes, plus the runner's side averaged over the runs of that kind
        figures = [[own + sum(r for _, r in runs) / len(runs) for own, _ in runs] for runs in cpu]
        row = Row("runner", "module start through the runner, CPU per run: payload without / with bytecode", module,
                  statistics.mean(figures[0]), statistics.mean(figures[1]), _spread(figures[0]), _spread(figures[1]),
                  all(r == results[0] for r in results))
        print(row.line(), f"(script {os.path.getsize(path)} / {len(data)} bytes)", flush=True)
        rows.append(row)
    return rows


def _first_runs(pairs, workdir, client) -> Row:
    """Each module's first run in a runner that has not seen it (most runs of a host's runner
    are): a new runner, then per module its script without bytecode and with, alternating which
    goes first.  Per module, whichever runs second finds nothing kept by the first (the runner
    keeps code from a file's second compile); the module_utils that several modules share are
    kept by the third that compiles them, which favours the runs without bytecode.  The runner's
    side is read in clock ticks, so the figure is its sum over all modules, shared out evenly."""
    paths = [p for pair in pairs.values() for p in pair]
    sub = tempfile.mkdtemp(prefix="first-", dir=workdir)
    _, sock, process, lifeline = _start_runner(sub, open(paths[0], "rb").read())
    try:
        own, runner_side, results = ([], []), [0.0, 0.0], ([], [])
        for index, pair in enumerate(pairs.values()):
            order = (0, 1) if index % 2 == 0 else (1, 0)
            for kind in order:
                before = _tree_cpu(process.pid)
                cpu, result = _run(f"{client} {sock} {sys.executable} {pair[kind]}", None)
                runner_side[kind] += _tree_cpu(process.pid) - before
                own[kind].append(cpu)
                results[kind].append(result)
    finally:
        for fd in lifeline:
            os.close(fd)
        process.wait(timeout=30)
    figures = [[c + runner_side[k] / len(own[k]) for c in own[k]] for k in (0, 1)]
    row = Row("runner", "first run of a module in a new runner, CPU per run: payload without / with bytecode",
              f"{len(pairs)} modules", statistics.mean(figures[0]), statistics.mean(figures[1]),
              _spread(figures[0]), _spread(figures[1]), results[0] == results[1])
    print(row.line(), flush=True)
    return row


def _spread(values: list[float]) -> float:
    middle = statistics.median(values)
    return (max(values) - min(values)) / middle if middle else 0.0
