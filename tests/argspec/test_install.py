"""install()/uninstall() swap ArgumentSpecValidator.validate and put the original back;
ModuleArgumentSpecValidator keeps its own warn/deprecate side effects."""

from __future__ import annotations

import ansible_accel
from ansible.module_utils.common import arg_spec, warnings as core_warnings


def test_uninstall_restores_original():
    patched = arg_spec.ArgumentSpecValidator.__dict__["validate"]
    original = patched.__ansible_accel_original__
    ansible_accel.uninstall()
    try:
        assert arg_spec.ArgumentSpecValidator.__dict__["validate"] is original
    finally:
        ansible_accel.install()
    assert arg_spec.ArgumentSpecValidator.__dict__["validate"] is not original
    assert ansible_accel.status()["argspec"]["active"]


def _module_validate(spec, params):
    """Result fields and the warnings ModuleArgumentSpecValidator emitted."""
    core_warnings._global_warnings = {} if isinstance(getattr(core_warnings, "_global_warnings", None), dict) else []
    before = list(core_warnings.get_warning_messages())
    result = arg_spec.ModuleArgumentSpecValidator(spec).validate(params)
    emitted = [w for w in core_warnings.get_warning_messages() if w not in before]
    return result.validated_parameters, [str(e) for e in result.errors], result._warnings, emitted


def test_module_validator_warns_alike():
    spec = {"path": {"type": "path", "aliases": ["dest", "name"]}, "mode": {"type": "raw"}}
    params = {"path": "/a", "dest": "/b", "junk": 1}
    from ansible_accel import _counters

    before = _counters.snapshot()["argspec"]["native"]
    native = _module_validate(spec, params)
    assert _counters.snapshot()["argspec"]["native"] == before + 1
    ansible_accel.uninstall()
    try:
        pure = _module_validate(spec, params)
    finally:
        ansible_accel.install()
    assert native == pure
    assert any("Both option path and its alias dest are set" in str(w) for w in native[3])
