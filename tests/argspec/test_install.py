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
    """Result fields and the warnings/deprecations ModuleArgumentSpecValidator emitted."""
    core_warnings._global_warnings = {}
    core_warnings._global_deprecations = {}
    result = arg_spec.ModuleArgumentSpecValidator(spec).validate(params)
    return (
        result.validated_parameters, [str(e) for e in result.errors], result._warnings, result._deprecations,
        list(core_warnings.get_warning_messages()), [str(d) for d in core_warnings.get_deprecation_messages()],
    )


def test_module_validator_warns_alike(module_context):
    spec = {
        "path": {"type": "path", "aliases": ["dest", "name"], "deprecated_aliases": [{"name": "name", "version": "3.0"}]},
        "mode": {"type": "raw", "removed_at_date": "2030-02-02", "removed_from_collection": "ns.col"},
    }
    params = {"path": "/a", "dest": "/b", "name": "/c", "mode": "0644", "junk": 1}
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
    assert any("Both option path and its alias dest are set" in str(w) for w in native[4])
    assert len(native[5]) == 2, native[5]
