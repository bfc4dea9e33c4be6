"""2.22: validate() registers the no_log values it found in the process-wide masker.  With
ansible-core's own shared masker in place (the other tests each get a fresh one), a result
with no no_log values registers nothing, and one with some registers them."""

from __future__ import annotations

import pytest
from _compare import native_count
from ansible.module_utils.common import arg_spec

secrets = pytest.importorskip("ansible.module_utils.secrets", reason="no secret registry before 2.22")
_secrets = pytest.importorskip("ansible.module_utils._internal._secrets")
SHARED = _secrets._secret_masker  # as found at collection, before any test's own masker

SECRET = "accel-argspec-shared-masker-5c0d1e"


def test_registration_in_the_shared_masker(monkeypatch):
    monkeypatch.setattr(_secrets, "_secret_masker", SHARED)
    monkeypatch.setattr(secrets, "_secret_masker", SHARED)
    validator = arg_spec.ArgumentSpecValidator({"a": {"type": "str"}, "pw": {"type": "str", "no_log": True}})
    tracker = SHARED.track_new_secrets()
    try:
        before = native_count()
        result = validator.validate({"a": "x"})
        assert native_count() == before + 1
        assert not result._no_log_values and not result.errors.errors
        assert not tracker.flush()
    finally:
        tracker.unregister()
    result = validator.validate({"a": "x", "pw": SECRET})
    assert native_count() == before + 2
    assert result._no_log_values == {SECRET}
    assert secrets.mask_secrets(f"<{SECRET}>") == "<$REDACTED$>"
