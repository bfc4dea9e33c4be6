"""The collection loader, as every ansible-core entry point sets it up before building modules."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session", autouse=True)
def _collection_loader():
    from ansible.plugins.loader import init_plugin_loader

    init_plugin_loader()
