"""A module's run through a warm runner, with the module-side paths off and on.

The module-side paths (docs/module-side.md) validate a module's arguments, scrub its
``no_log`` values (ansible-core 2.19-2.21) and mask the secrets it registers (2.22) natively,
inside the modules a warm runner forks.  Each module's AnsiBallZ file is built by
``modify_module``, as a worker builds it, and run through two runners of this interpreter
started for the benchmark: one with ``ANSIBLE_ACCEL_MODULE_SIDE=0`` (the "python" column: the
module runs on ansible-core's own module_utils, as shipped) and one without (the "native"
column).  The figure is the CPU per module run of the runner and the child it forks for it
(read from /proc; the runner's share of each request is small and the same both ways).  The
module's output and exit status must be the same both ways, and the runner with the paths on
must have reported native argument validations: otherwise the row is a failure.

Modules: argument-validation heavy ones (``user``, ``uri``, ``amazon.aws.ec2_instance`` when the
collection is installed, and a module with a spec of every kind of option); a module returning
about 1 MB holding ``no_log`` values; on 2.22, one masking about 1 MB of text it registered
secrets for.
"""

from __future__ import annotations

import json
import os
import re
import statistics
import sys
import tempfile

from ._harness import Row
from .bench_runner import _build, _tree_cpu

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.join(os.path.dirname(HERE), "tests", "runner")
LIBRARY = os.path.join(TESTS, "library")
ENV = "ANSIBLE_ACCEL_MODULE_SIDE"

_OPTIONS = {
    "name": "bench", "password": "pw-one-secret", "count": "7", "ratio": 0.5, "flag": "yes", "mode": "slow",
    "items": "a,b,c", "legacy_name": "old", "nested": {"user": "u", "secret": "nested-two-secret"},
    "servers": [{"host": "h1", "key": "key-three-secret"}, {"host": "h2"}], "repeat": 1,
}  # fmt: skip
# (label, module, its arguments, whether it is one of the quick mode's)
MODULES = (
    ("argspec: user, check mode", "user", {"name": "root", "state": "present", "_ansible_check_mode": True}, False),
    ("argspec: uri, refused", "uri", {"url": "http://127.0.0.1:9/", "url_password": "uri-secret", "timeout": 2}, False),
    ("argspec: amazon.aws.ec2_instance", "amazon.aws.ec2_instance",
     {"instance_ids": ["i-0123456789abcdef0"], "state": "running", "region": "us-east-1",
      "tags": {"Name": "bench"}, "network": {"assign_public_ip": True}, "aws_secret_key": "aws-secret"}, False),
    ("argspec: every kind of option", os.path.join(LIBRARY, "accel_modside.py"), _OPTIONS, True),
    ("no_log: 1 MB result", os.path.join(LIBRARY, "accel_modside.py"),
     {"name": "bench-big", "password": "pw-big-secret", "nested": {"user": "u", "secret": "two-big-secret"},
      "repeat": 2500}, True),
)  # fmt: skip
# 2.22: a module that registers secrets and masks about 1 MB of text with them.
MASKING = ("masking: 1 MB masked", os.path.join(LIBRARY, "accel_modside_mask.py"),
           {"texts": ["a line with sec-ret-one and sec-ret-two, " * 4 + "and more text " * 8] * 4,
            "words": ["sec-ret-one", "ret-two", "x"], "repeat": 700}, True)  # fmt: skip
_VOLATILE = re.compile(rb'"(start|end|delta|elapsed)": [^,}]*')


def _script(workdir: str, label: str, module: str, args: dict) -> str | None:
    if module.startswith("/"):
        from ansible.executor import module_common
        from ansible.parsing.dataloader import DataLoader
        from ansible.template import Templar

        _build("ping", {}, workdir)  # (sets up the plugin loader once)
        task_vars = {"ansible_python_interpreter": sys.executable, "ansible_connection": "local"}
        data = module_common.modify_module(
            module_name=os.path.basename(module)[:-3], module_path=module, module_args=args,
            templar=Templar(loader=DataLoader(), variables=task_vars), task_vars=task_vars,
            module_compression="ZIP_DEFLATED",
        ).b_module_data  # fmt: skip
    else:
        data = _build(module, args, workdir)
    if data is None:
        return None
    path = os.path.join(workdir, re.sub(r"\W+", "_", label) + ".py")
    with open(path, "wb") as handle:
        handle.write(data)
    return path


def _outcome(runner, script: str, env: dict[str, str]) -> tuple:
    import _pyclient
    from _runner_support import normalized

    done = _pyclient.run(runner.socket, [sys.executable, script], env, cwd="/")
    if done.refused is not None:
        return ("refused", done.refused)
    return done.returncode, _VOLATILE.sub(b"", normalized(done.stdout)), normalized(done.stderr)


def _cpu_per_run(runner, script: str, env: dict[str, str], repeat: int) -> tuple[float, list]:
    """CPU of the runner and its children per run (summed over ``repeat`` runs: /proc counts
    in clock ticks), and the outcomes."""
    before = _tree_cpu(runner.pid)
    outcomes = [_outcome(runner, script, env) for _ in range(repeat)]
    return (_tree_cpu(runner.pid) - before) / repeat, outcomes


def run(quick: bool) -> list[Row]:
    if not sys.platform.startswith("linux"):
        print("modside: Linux only")
        return []
    from ansible.release import __version__

    from ansible_accel import _runner_modside

    if TESTS not in sys.path:
        sys.path.insert(0, TESTS)
    from _runner_support import Runner

    minor = tuple(int(part) for part in __version__.split(".")[:2])
    modules = [m for m in MODULES if m[3] or not quick]
    if minor >= (2, 22):
        modules.append(MASKING)
    rounds, per_round = (2, 3) if quick else (5, 6)
    # One hash secret for both runners' children: 2.22 names the secrets a module registered in
    # a set's order (``_ansible_new_secrets``), which follows it.
    env_on = dict({k: v for k, v in os.environ.items() if k != ENV}, PYTHONHASHSEED="0")
    env_off = dict(env_on, **{ENV: "0"})
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="bench-modside-") as workdir:
        os.chmod(workdir, 0o700)
        scripts = {}
        for label, module, args, _quick in modules:
            path = _script(workdir, label, module, args)
            if path is None:
                print(f"modside: {module} is not installed here; skipped", flush=True)
            else:
                scripts[label] = path
        probe = open(scripts["argspec: every kind of option"], "rb").read()
        runners = {}
        try:
            for mode, env in (("off", env_off), ("on", env_on)):
                rundir = os.path.join(workdir, mode)
                os.mkdir(rundir, 0o700)
                runners[mode] = Runner(rundir, probe, env)
            for label, script in scripts.items():
                counted = _runner_modside.status(runners["on"].rundir, True)["argspec"]["native"]
                first = {mode: _outcome(runners[mode], script, env) for mode, env in (("off", env_off), ("on", env_on))}
                cpu: dict[str, list[float]] = {"off": [], "on": []}
                same = first["off"] == first["on"]
                for _ in range(rounds):  # alternating, so a change of load falls on both
                    for mode, env in (("off", env_off), ("on", env_on)):
                        seconds, outcomes = _cpu_per_run(runners[mode], script, env, per_round)
                        cpu[mode].append(seconds)
                        same = same and all(outcome == first["off"] for outcome in outcomes)
                native_ran = _runner_modside.status(runners["on"].rundir, True)["argspec"]["native"] > counted
                if not native_ran:
                    print(f"modside: {label}: the runner with the paths on reported no native argument validation")
                row = Row("modside", "module run in a runner, CPU", label, statistics.mean(cpu["off"]),
                          statistics.mean(cpu["on"]), _spread(cpu["off"]), _spread(cpu["on"]), same and native_ran)
                print(row.line(), flush=True)
                rows.append(row)
            total = _runner_modside.status(runners["on"].rundir, True)
            off_records = _runner_modside.status(runners["off"].rundir, True)["modules"]
            print("modside: counts reported by the modules with the paths on: "
                  + json.dumps({k: total[k] for k in ("modules", "fallback", *_runner_modside.PATHS)}, sort_keys=True)
                  + f"; with the paths off: {off_records} module runs reported", flush=True)  # fmt: skip
        finally:
            for runner in runners.values():
                runner.stop()
    return rows


def _spread(values: list[float]) -> float:
    middle = statistics.median(values)
    return (max(values) - min(values)) / middle if middle else 0.0
