"""The ways of switching ansible-accel on without the wrapper, checked with real runs:
the ``ansible-accel config`` lines as an ansible.cfg file and as environment variables
(ansible-playbook and ad-hoc ``ansible``), and ``ANSIBLE_ACCEL=0`` switching it off.
Each run's workers report whether the accelerator was on in them, and the
ANSIBLE_ACCEL_STATS file must count every worker's probe."""

from __future__ import annotations

import importlib.util
import os
import sys

import pytest

_spec = importlib.util.spec_from_file_location(
    "ansible_accel_run_demo", os.path.join(os.path.dirname(os.path.abspath(__file__)), "run_demo.py")
)
run_demo = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = run_demo  # dataclasses look their module up
_spec.loader.exec_module(run_demo)


@pytest.mark.parametrize("route", run_demo.ROUTES)
def test_route(tmp_path, route):
    check = run_demo.check_route(str(tmp_path), route)
    assert check.ok, check.detail


def test_config_lines_as_environment():
    settings = run_demo.config_as_environment(run_demo.accel_config_text())
    assert settings["ANSIBLE_CALLBACKS_ENABLED"] == "ansible_accel"
    assert os.path.isfile(os.path.join(settings["ANSIBLE_CALLBACK_PLUGINS"], "ansible_accel.py"))


def test_route_check_fails_without_the_settings(tmp_path):
    """The check can fail: with no settings the workers run without the accelerator."""
    run, stats = run_demo.route_run(str(tmp_path), "none", {}, expect_installed=True)
    assert run.returncode == 2
    assert stats is None  # nothing switched the accelerator on, so nothing wrote the file


def test_normalise_only_touches_volatile_values():
    result = {
        "delta": "0:00:00.1", "start": "x", "stat": {"mtime": 1.0, "checksum": "abc", "inode": 5},
        "src": "/root/.ansible/tmp/ansible-tmp-1796016776.5-4176-2138/.source.txt",
        "msg": "fetched /tmp/x/ansible-moduletmp-1796016824.5-5w0ars0d/tmpsvbmgxyf ok", "rc": 0,
    }  # fmt: skip
    assert run_demo.compare.normalise(result) == {
        "stat": {"checksum": "abc"}, "src": "<ansible-tmp>", "msg": "fetched <ansible-tmp> ok", "rc": 0,
    }  # fmt: skip


def test_differences_are_reported():
    results = {"hosts": {"h1": [{"task": "t", "result": {"rc": 0, "delta": "1"}}]}, "stats": {}}
    other = {"hosts": {"h1": [{"task": "t", "result": {"rc": 1, "delta": "2"}}]}, "stats": {}}
    same = {"hosts": {"h1": [{"task": "t", "result": {"rc": 0, "delta": "9"}}]}, "stats": {}}
    off = run_demo.Run(0, 1.0, 1.0, "ok: [h1]\n", results)
    assert run_demo.differences(off, run_demo.Run(0, 1.0, 1.0, "ok: [h1]\n", same)) == []
    found = run_demo.differences(off, run_demo.Run(0, 1.0, 1.0, "ok: [h1]\n", other))
    assert found == ["h1: task 't': .result.rc: 0 (off) != 1 (on)"]
    printed = run_demo.differences(off, run_demo.Run(0, 1.0, 1.0, "failed: [h1]\n", same))
    assert len(printed) == 1 and printed[0].startswith("printed output differs")


def test_cpu_counts_processes_that_outlive_their_parent(tmp_path):
    """A process started in a session of its own by a child that then exits (as a worker
    starts a warm runner) is counted: its CPU time is in the run's."""
    spin = "import time\nend = time.process_time() + 0.5\nwhile time.process_time() < end: pass\n"
    starter = (
        "import subprocess, sys\n"
        f"subprocess.Popen([sys.executable, '-c', {spin!r}], start_new_session=True)\n"
    )  # exits at once, without waiting for the spinning process
    run = run_demo.run_ansible([sys.executable, "-c", starter], dict(os.environ), str(tmp_path))
    assert run.returncode == 0, run.output
    assert run.subreaper, "this process could not be made a child subreaper"
    assert [o.kind for o in run.outlived.orphans] == ["other"], run.outlived
    assert run.outlived.orphans[0].cpu >= 0.45, run.outlived
    assert run.cpu >= 0.45, run  # the spinning process is in the run's CPU time
