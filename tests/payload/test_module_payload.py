"""Real module payloads: ansible-core's own ``recursive_finder`` and ``_add_module_to_zip``
write into zipfile and into ``PayloadZipFile``; ``build_zip`` gets the same entries."""

from __future__ import annotations

import io
import zipfile

import pytest

from ansible_accel import payload

MODULES = ["command", "copy", "user", "ping", "file", "apt"]
METHODS = [zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED]


@pytest.fixture(scope="module")
def payloads(module_payload):
    """(module, compression) -> the payload ansible-core writes with zipfile."""
    return {
        (module, compression): module_payload(module, compression, lambda fp, c: zipfile.ZipFile(fp, mode="w", compression=c))
        for module in MODULES
        for compression in METHODS
    }


@pytest.mark.parametrize("compression", METHODS)
@pytest.mark.parametrize("module", MODULES)
def test_ansible_core_writing_into_payload_zipfile_gives_the_same_bytes(module, compression, payloads, module_payload):
    expected = payloads[module, compression]
    got = module_payload(module, compression, payload.PayloadZipFile)
    assert got == expected


@pytest.mark.parametrize("compression", METHODS)
@pytest.mark.parametrize("module", MODULES)
def test_build_zip_of_a_modules_entries_gives_ansible_cores_payload(module, compression, payloads, pinned):
    expected = payloads[module, compression]
    archive = zipfile.ZipFile(io.BytesIO(expected))
    entries = [(info.filename, archive.read(info)) for info in archive.infolist()]
    # The payload holds the module, ansible/__init__.py, the module_utils closure...
    names = [name for name, _ in entries]
    assert "ansible/__init__.py" in names and "ansible/module_utils/basic.py" in names
    assert f"ansible/modules/{module}.py" in names
    assert len(entries) > 20
    date_time = pinned.utctimetuple()[:6]
    # DOS timestamps keep even seconds only.
    assert {info.date_time for info in archive.infolist()} == {(*date_time[:5], date_time[5] // 2 * 2)}
    assert payload.build_zip(entries, date_time, compression) == expected
