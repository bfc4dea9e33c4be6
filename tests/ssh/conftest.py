"""Fixtures for tests that reach hosts over SSH: a private sshd on this machine (``_sshd.py``)."""

from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _sshd


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


@pytest.fixture(scope="session")
def host_interpreters() -> list[str]:
    """The hosts' interpreters: this environment's base Python first, then the other versions'."""
    found = _sshd.interpreters()
    mine = os.path.realpath(os.path.join(os.path.dirname(sys.executable), f"python{sys.version_info[0]}.{sys.version_info[1]}"))
    return [mine] + [path for version, path in sorted(found.items()) if path != mine]
