from __future__ import annotations

import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).parent))


@pytest.fixture(autouse=True)
def _accel_on(accel):
    """Every argspec test runs with the accelerator installed."""
    yield accel
