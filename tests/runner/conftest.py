"""Fixtures for the runner's tests (helpers in _runner_support.py)."""

from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _runner_support import Runner, build_scripts  # noqa: E402


@pytest.fixture(scope="session")
def scripts(tmp_path_factory) -> dict[str, str]:
    """name -> path of the AnsiBallZ script ansible-core wrote for that task."""
    return build_scripts(tmp_path_factory.mktemp("scripts"))


@pytest.fixture(scope="session")
def bytecode_scripts(tmp_path_factory) -> dict[str, str]:
    """The same, built with the accelerator's bytecode path on (payloads carry ``.pyc`` files)."""
    return build_scripts(tmp_path_factory.mktemp("bytecode-scripts"), bytecode=True)


@pytest.fixture
def rundir(tmp_path) -> str:
    path = tmp_path / "run"
    path.mkdir(mode=0o700)
    return str(path)


@pytest.fixture
def runner(rundir, scripts):
    started = Runner(rundir, open(scripts["observe"], "rb").read(), dict(os.environ))
    yield started
    started.stop()
