"""What the masking tests share: the cases, and ansible-core 2.22's masker where it exists."""

from __future__ import annotations

import json
import pathlib

import pytest

from ansible_accel import _activation

CASES_FILE = pathlib.Path(__file__).with_name("secret_masking_cases.json")
_DOC = json.loads(CASES_FILE.read_text(encoding="utf-8"))
PLACEHOLDER: str = _DOC["placeholder_in_cases"]
CASES: list[dict] = _DOC["cases"]

IS_222 = _activation.core_minor() == (2, 22)
needs_222 = pytest.mark.skipif(not IS_222, reason="ansible-core before 2.22 has no registered-secret masker to compare with")


def core_secrets():
    """ansible-core 2.22's _secrets and _secrets_object modules."""
    from ansible.module_utils._internal import _secrets, _secrets_object

    return _secrets, _secrets_object
