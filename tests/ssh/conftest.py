"""Fixtures for tests that reach hosts over SSH: a private sshd on this machine (``_sshd.py``)."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _sshd

# The runs over the test bed's sshd reach hosts on all three interpreters from any controller:
# they are made from Python 3.12's environment only (ANSIBLE_ACCEL_TESTS_ALL_INTERPRETERS=1: from
# each), which keeps make test within its time.  A test naming another environment
# (``test.controller = (3, 11)``) is made from that one instead, one saying ``"all"`` from each.
ALL_CONTROLLERS = os.environ.get("ANSIBLE_ACCEL_TESTS_ALL_INTERPRETERS") == "1"
DEFAULT_CONTROLLER = (3, 12)


def pytest_collection_modifyitems(config, items):
    if ALL_CONTROLLERS:
        return
    here = os.path.dirname(os.path.abspath(__file__))
    for item in items:
        if "sshd" not in getattr(item, "fixturenames", ()) or not str(item.fspath).startswith(here):
            continue
        controller = getattr(getattr(item, "function", None), "controller", DEFAULT_CONTROLLER)
        if controller != "all" and controller != sys.version_info[:2]:
            item.add_marker(pytest.mark.skip(reason=f"runs over sshd are made from Python {controller[0]}.{controller[1]}'s "
                                                    "environment only (ANSIBLE_ACCEL_TESTS_ALL_INTERPRETERS=1: from each)"))


@pytest.fixture(scope="session")
def sshd():
    """One private sshd for the test run, on 127.0.0.1-3; stopped (with all it started) at the end."""
    try:
        server = _sshd.Sshd(addresses=3)
    except _sshd.Unavailable as error:
        pytest.fail(f"the SSH test bed cannot start: {error}")
    try:
        yield server
    finally:
        server.stop()


# Interpreters to put before the test environments' as the hosts' (paths, separated by ":"): a
# run on hosts with Pythons the test bed lacks (3.14, 3.15: tests/ssh/_older.py).  Those the
# ansible-core under test does not support on targets are left out; a path that is not there
# fails the test.
EXTRA_HOST_PYTHONS = [p for p in os.environ.get("ANSIBLE_ACCEL_TESTS_HOST_PYTHONS", "").split(os.pathsep) if p]


@pytest.fixture(scope="session")
def host_interpreters() -> list[str]:
    """The hosts' interpreters: this environment's base Python first, then the other versions'
    (after those of ANSIBLE_ACCEL_TESTS_HOST_PYTHONS this ansible-core supports, where set)."""
    found = _sshd.interpreters()
    mine = os.path.realpath(os.path.join(os.path.dirname(sys.executable), f"python{sys.version_info[0]}.{sys.version_info[1]}"))
    return _extra_host_pythons() + [mine] + [path for version, path in sorted(found.items()) if path != mine]


def _extra_host_pythons() -> list[str]:
    import subprocess

    from _older import target_versions

    supported = target_versions()
    chosen = []
    for path in EXTRA_HOST_PYTHONS:
        if not os.access(path, os.X_OK):
            pytest.fail(f"ANSIBLE_ACCEL_TESTS_HOST_PYTHONS names {path}, which is not there")
        done = subprocess.run([path, "-c", "import sys; print(sys.version_info[0], sys.version_info[1])"],
                              capture_output=True, text=True, timeout=60, check=True)
        if tuple(int(part) for part in done.stdout.split()) in supported:
            chosen.append(path)
    return chosen


@pytest.fixture
def remote_tmp():
    """The hosts' remote tmp for runs with the remote runner: a short path, as ``~/.ansible/tmp``
    is (the runner's socket path must fit in 107 bytes; pytest's own temporary paths are long)."""
    path = tempfile.mkdtemp(prefix="rt", dir="/tmp")
    yield path
    shutil.rmtree(path, ignore_errors=True)
