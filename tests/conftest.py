"""Fixtures shared by every engine's tests."""

from __future__ import annotations

import pytest

import ansible_accel
from ansible_accel import _activation


@pytest.fixture
def accel():
    """The accelerator switched on for one test, and off again after it."""
    ansible_accel.install()
    try:
        yield ansible_accel
    finally:
        ansible_accel.uninstall()


@pytest.fixture(scope="session")
def core_minor() -> tuple[int, int]:
    """(2, 19), (2, 21), (2, 22)...: the ansible-core this environment tests against."""
    return _activation.core_minor()
