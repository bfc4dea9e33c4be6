"""The ``payload`` path switched on inside ansible-core: ``modify_module`` gives the same
result and the same cache file as with it off, for the same (pinned) clock."""

from __future__ import annotations

import datetime
import io
import pathlib
import types
import zipfile

import pytest

import ansible_accel


@pytest.fixture
def pinned_clock(monkeypatch, pinned):
    """module_common's ``datetime.datetime.now()`` returns ``pinned``."""
    from ansible.executor import module_common

    class FrozenDatetime(datetime.datetime):
        @classmethod
        def now(cls, tz=None):
            return pinned if tz is not None else pinned.replace(tzinfo=None)

    frozen = types.ModuleType("datetime")
    frozen.__dict__.update(vars(datetime))
    frozen.datetime = FrozenDatetime
    monkeypatch.setattr(module_common, "datetime", frozen)


@pytest.fixture
def build(monkeypatch, tmp_path, pinned_clock, plugin_loader):
    """``build(module, compression, label)``: modify_module's result and its cache file's
    bytes, with the AnsiBallZ cache in a directory of its own (so nothing is reused)."""
    from ansible import constants as C
    from ansible.executor import module_common
    from ansible.parsing.dataloader import DataLoader
    from ansible.plugins.loader import module_loader
    from ansible.template import Templar

    def run(module: str, compression: str, label: str):
        local_tmp = tmp_path / label
        local_tmp.mkdir(mode=0o700)  # as ansible-core makes it (mkdtemp)
        monkeypatch.setattr(C, "DEFAULT_LOCAL_TMP", str(local_tmp), raising=False)
        path = module_loader.find_plugin(module)
        task_vars = {"ansible_python_interpreter": "/usr/bin/python3"}
        built = module_common.modify_module(
            module_name=module,
            module_path=path,
            module_args={"_raw_params": "echo hi", "name": "x"},
            templar=Templar(loader=DataLoader(), variables=task_vars),
            task_vars=task_vars,
            module_compression=compression,
        )
        caches = sorted(p for p in (local_tmp / "ansiballz_cache").iterdir() if not p.name.endswith(".lock"))
        return built, [(p.name, p.read_bytes()) for p in caches]

    return run


def payload_counts():
    counts = ansible_accel.status()["payload"]
    return counts["native"], dict(counts["fallback"])


@pytest.mark.parametrize("compression", ["ZIP_DEFLATED", "ZIP_STORED"])
@pytest.mark.parametrize("module", ["command", "copy", "ping", "user"])
def test_modify_module_is_identical_with_the_payload_path_on(module, compression, build, tmp_path):
    from ansible_accel import payload

    expected, expected_cache = build(module, compression, "off")
    from ansible_accel._integrations import finder

    status = ansible_accel.install()
    finder.wait_for_prewarm()  # (which deflates ansible-core's module_utils ahead of need)
    payload.clear_cache()  # a fresh worker: nothing deflated in memory yet
    try:
        assert status["payload"]["active"], status["payload"]
        native_before, fallback_before = payload_counts()
        got, got_cache = build(module, compression, "on")
        native_after, fallback_after = payload_counts()
    finally:
        ansible_accel.uninstall()
    assert b"2025, 3, 4, 5, 6, 7" in got.b_module_data
    assert got == expected  # the wrapper script with the base64 zip, metadata...
    assert got_cache == expected_cache
    assert native_after == native_before + 1
    assert fallback_after == fallback_before
    # Deflated entries were left for the run's other workers and later runs, beside the
    # runs' local tmp directories.
    shared = [p for p in tmp_path.iterdir() if p.name.startswith("ansible_accel_deflate_zlib")]
    assert bool(shared) == (compression == "ZIP_DEFLATED")
    assert all(len(list(p.iterdir())) > 10 for p in shared)


def test_other_compressions_go_to_zipfile_and_are_counted(build):
    expected, expected_cache = build("ping", "ZIP_LZMA", "off")
    ansible_accel.install()
    try:
        native_before, fallback_before = payload_counts()
        got, got_cache = build("ping", "ZIP_LZMA", "on")
        native_after, fallback_after = payload_counts()
    finally:
        ansible_accel.uninstall()
    assert (got, got_cache) == (expected, expected_cache)
    assert native_after == native_before
    reason = "compression 14 is not stored or deflated"
    assert fallback_after.get(reason, 0) == fallback_before.get(reason, 0) + 1


def test_uninstall_puts_back_the_real_zipfile():
    from ansible.executor import module_common

    ansible_accel.install()
    try:
        assert module_common.zipfile is not zipfile
        assert module_common.zipfile.ZIP_DEFLATED == zipfile.ZIP_DEFLATED
        assert module_common.zipfile.ZipInfo is zipfile.ZipInfo
    finally:
        ansible_accel.uninstall()
    assert module_common.zipfile is zipfile


def test_zipfile_calls_other_than_the_payloads_get_a_real_zipfile(tmp_path):
    from ansible.executor import module_common

    ansible_accel.install()
    try:
        reading = module_common.zipfile.ZipFile(io.BytesIO(_tiny_zip()))
        on_disk = module_common.zipfile.ZipFile(pathlib.Path(tmp_path / "x.zip"), mode="w")
        on_disk.close()
        reasons = ansible_accel.status()["payload"]["fallback"]
    finally:
        ansible_accel.uninstall()
    assert type(reading) is zipfile.ZipFile and type(on_disk) is zipfile.ZipFile
    assert reasons.get("zipfile opened in mode 'r'", 0) >= 1
    assert reasons.get("zipfile opened on something other than a BytesIO", 0) >= 1


def _tiny_zip() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(zipfile.ZipInfo("a", (2024, 1, 1, 0, 0, 0)), b"a")
    return buffer.getvalue()
