from __future__ import annotations

import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).parent))


@pytest.fixture(autouse=True)
def _accel_on(accel):
    """Every argspec test runs with the accelerator installed."""
    yield accel


@pytest.fixture
def module_context(monkeypatch):
    """warn()/deprecate() collected as they are inside a module, not sent to Display.

    install() imports controller code (module_common), which makes ansible-core's
    module_utils route warnings to the controller's Display; a module on a managed node
    collects them instead, and these tests check that collection.
    """
    from ansible.module_utils import _internal

    monkeypatch.setattr(_internal, "is_controller", False)


@pytest.fixture(autouse=True)
def _own_secret_registry(monkeypatch):
    """On 2.22 validate() registers no_log values in the process-wide secret masker, and a
    registered secret can never be unregistered: give each test its own masker, so the short
    values these tests use as no_log values do not mask the masking tests' output."""
    try:
        from ansible.module_utils import secrets
        from ansible.module_utils._internal import _secrets
    except ImportError:  # before 2.22
        return
    fresh = _secrets.SecretMasker()
    monkeypatch.setattr(_secrets, "_secret_masker", fresh)
    monkeypatch.setattr(secrets, "_secret_masker", fresh)
