"""What ``make demo`` sets up: one environment (PY's) with ansible-core and the build tools,
nothing of the test bed's (the other interpreters, the test tools, the collections, matplotlib)."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _dry_run(*args: str) -> str:
    if not shutil.which("make"):
        pytest.skip("no make")
    # Run from make test, the outer make's flags must not reach this one.
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES")}
    completed = subprocess.run(["make", "-n", "-B", "--no-print-directory", *args], cwd=ROOT, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=True)
    return completed.stdout


@pytest.mark.parametrize("version", ["3.12", "3.13"])
def test_demo_sets_up_one_environment(version):
    commands = _dry_run("demo", f"PY={version}")
    own = f"/.venv/py{version.replace('.', '')}/"
    others = {"/.venv/py311/", "/.venv/py312/", "/.venv/py313/", "/.venv/packaging/"} - {own}
    assert own in commands
    assert [other for other in others if other in commands] == []
    for unwanted in ("ansible==14.5.0", "matplotlib", "pytest", "hypothesis", "auditwheel"):
        assert unwanted not in commands
    assert "maturin==" in commands and "ziglang==" in commands
    assert "--zig --compatibility manylinux2014" in commands
    assert "tests/demo/run_demo.py" in commands


def test_test_checks_the_package():
    commands = _dry_run("test")
    assert "tests/packaging/check_package.py --wheel" in commands
    assert "benches.suite" in commands and "--quick --check" in commands
