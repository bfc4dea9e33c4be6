"""The ``finder`` counters in ``ansible_accel.status()``: native scans, cache hits, walks and
fallbacks by reason, all from real recursive_finder calls."""

from __future__ import annotations

import datetime
import io
import zipfile

import ansible_accel
from ansible._internal._ansiballz import _builder
from ansible.executor import module_common as mc

import pytest

from ansible_accel import _counters
from ansible_accel._integrations import finder as integration

NOW = datetime.datetime(2024, 1, 2, 3, 4, 6, tzinfo=datetime.timezone.utc)


def _walk(source: bytes) -> None:
    with zipfile.ZipFile(io.BytesIO(), mode="w") as zf:
        mc.recursive_finder("probe", "ansible.modules.probe", source, zf, NOW, _builder.ExtensionManager())


@pytest.fixture
def accel_without_prewarm(monkeypatch):
    """The accelerator on, without scanning ansible-core's module_utils ahead of need."""
    monkeypatch.setenv("ANSIBLE_ACCEL_FINDER_PREWARM", "0")
    ansible_accel.install()
    try:
        yield ansible_accel
    finally:
        ansible_accel.uninstall()


def test_counters_follow_the_walk(accel_without_prewarm):
    _counters.reset()
    status = ansible_accel.status()["finder"]
    assert status["active"] and status["reason"] is None and status["native"] == 0

    _walk(b"from ansible.module_utils.basic import AnsibleModule\n")
    first = ansible_accel.status()["finder"]
    assert first["native"] >= 10  # the module and each module_util ansible-core's basic needs
    assert first["events"]["recursive_finder"] == 1

    _walk(b"from ansible.module_utils.basic import AnsibleModule\n")
    second = ansible_accel.status()["finder"]
    assert second["native"] == first["native"]  # nothing scanned twice, not even the module:
    assert second["events"].get("scan_cache_hit", 0) == first["events"].get("scan_cache_hit", 0)
    assert second["events"]["closure_memo_hit"] == 1  # its whole closure is remembered
    assert second["events"]["recursive_finder"] == 2

    try:
        _walk(b"def broken(:\n")
    except Exception as ex:  # noqa: BLE001 - ansible-core's own error, checked elsewhere
        assert "Unable to compile" in str(ex)
    assert ansible_accel.status()["finder"]["fallback"] == {"syntax_error": 1}


def test_uninstalled_path_reports_why_and_counts_nothing():
    ansible_accel.uninstall()
    _counters.reset()
    _walk(b"from ansible.module_utils.basic import AnsibleModule\n")
    status = ansible_accel.status()["finder"]
    assert status == {"active": False, "reason": "not installed", "native": 0, "fallback": {}}


def test_forked_worker_starts_from_the_parents_scans(accel):
    """What the controller scanned before forking, a worker (as ansible-playbook's) reuses."""
    import json
    import os

    _walk(b"from ansible.module_utils.basic import AnsibleModule\n")
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the worker: its counters start at zero (register_at_fork)
        try:
            _walk(b"from ansible.module_utils.basic import AnsibleModule\n")
            os.write(write_end, json.dumps(ansible_accel.status()["finder"]).encode())
        finally:
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end) as pipe:
        child = json.loads(pipe.read())
    os.waitpid(pid, 0)
    # the module's closure, remembered by the parent: nothing scanned
    assert child["native"] == 0 and "scan_cache_hit" not in child["events"] and child["events"]["closure_memo_hit"] == 1


def test_prewarm_scans_core_module_utils_so_a_walk_scans_nothing(accel):
    integration.wait_for_prewarm()
    prewarmed = ansible_accel.status()["finder"]["events"]["prewarm_scan"]
    assert prewarmed > 100  # every .py of ansible-core's module_utils
    _counters.reset()
    _walk(b"from ansible.module_utils.basic import AnsibleModule\n")
    status = ansible_accel.status()["finder"]
    assert status["native"] == 1  # the module itself; every module_util came from the cache
    assert status["events"]["scan_cache_hit"] >= 10


def test_prewarm_locates_core_module_utils_so_a_walk_runs_few_locators(accel):
    """Where ansible-core's module_utils import each other is found in the controller too:
    a first walk then takes those locations from memory, and still equals ansible-core's."""
    integration.wait_for_prewarm()
    assert ansible_accel.status()["finder"]["events"]["prewarm_locate"] > 50
    source = b"from ansible.module_utils.basic import AnsibleModule\nfrom ansible.module_utils.urls import fetch_url\n"
    _counters.reset()
    with zipfile.ZipFile(io.BytesIO(), mode="w") as zf:
        got = mc.recursive_finder("probe", "ansible.modules.probe", source, zf, NOW, _builder.ExtensionManager())
        names = zf.namelist()
    hits = ansible_accel.status()["finder"]["events"]["location_memo_hit"]
    assert hits >= len(names) - 5  # every file but the module's own imports (and the package stubs)
    with zipfile.ZipFile(io.BytesIO(), mode="w") as zf:
        expected = mc.recursive_finder.__wrapped_original__("probe", "ansible.modules.probe", source, zf, NOW,
                                                            _builder.ExtensionManager())
        assert zf.namelist() == names and expected == got
