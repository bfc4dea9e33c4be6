"""The collection loader, as every ansible-core entry point sets it up before building modules."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session", autouse=True)
def _collection_loader():
    from ansible.plugins.loader import init_plugin_loader

    init_plugin_loader()


@pytest.fixture(autouse=True)
def _no_shared_closures(monkeypatch):
    """Walks remembered on disk by earlier runs would change what these tests count; the
    tests of that memo switch it back on in a directory of their own."""
    monkeypatch.setenv("ANSIBLE_ACCEL_FINDER_DISK", "0")
