"""A remembered walk into the payload path's writer writes the entries kept from its last
payload again, dated anew: every payload still equals ansible-core's own, ZipInfo objects
included, whatever its date and whatever is written after."""

from __future__ import annotations

import datetime
import io
import zipfile

import pytest

import ansible_accel
from ansible._internal._ansiballz import _builder
from ansible._internal._datatag._tags import Origin
from ansible.executor import module_common as mc

MODULE = b"from ansible.module_utils.basic import AnsibleModule\nfrom ansible.module_utils.urls import open_url\n"
DATES = [
    datetime.datetime(2024, 5, 6, 7, 8, 10, tzinfo=datetime.timezone.utc),
    datetime.datetime(2024, 5, 6, 7, 8, 11, tzinfo=datetime.timezone.utc),
    datetime.datetime(2035, 12, 31, 23, 59, 58, tzinfo=datetime.timezone.utc),
]
FIELDS = ["filename", "date_time", "compress_type", "_compresslevel", "comment", "extra", "create_system",
          "create_version", "extract_version", "reserved", "flag_bits", "volume", "internal_attr", "external_attr",
          "header_offset", "CRC", "compress_size", "file_size"]  # fmt: skip


class _Debugging(_builder.ExtensionManager):
    """An extension manager with a debugger on: the walk notes each file's source mapping."""

    @property
    def debugger_enabled(self) -> bool:
        return True


def _walk(recursive_finder, open_zip, date_time, compression, debugger=False, said=None):
    buffer = io.BytesIO()
    zf = open_zip(buffer, mode="w", compression=compression)
    extensions = _Debugging() if debugger else _builder.ExtensionManager()
    start = len(said)
    metadata = recursive_finder("probe", "ansible.modules.probe", Origin(path="/x/probe.py").tag(MODULE), zf, date_time,
                                extensions)
    zf.writestr(mc._make_zinfo("ansible/modules/probe.py", date_time, zf=zf), MODULE)  # as _add_module_to_zip
    infos = [{f: getattr(i, f) for f in FIELDS} for i in zf.infolist()]
    zf.close()
    return buffer.getvalue(), metadata, infos, extensions.source_mapping, said[start:]


def _kept_hits() -> int:
    return ansible_accel.status()["finder"].get("events", {}).get("kept_entries_hit", 0)


@pytest.mark.parametrize("debugger", [False, True])
@pytest.mark.parametrize("compression", [zipfile.ZIP_DEFLATED, zipfile.ZIP_STORED])
def test_payloads_of_a_remembered_walk_equal_ansible_cores_for_every_date(compression, debugger, monkeypatch):
    said: list[str] = []
    monkeypatch.setattr(mc.display, "vvvvv", lambda msg, host=None: said.append(msg))
    original = mc.recursive_finder
    ansible_accel.install()
    try:
        assert mc.recursive_finder is not original
        hits = _kept_hits()
        for round_ in range(3):
            for date_time in DATES:
                expected = _walk(original, zipfile.ZipFile, date_time, compression, debugger, said)
                got = _walk(mc.recursive_finder, mc.zipfile.ZipFile, date_time, compression, debugger, said)
                assert got == expected
                assert len(got[4]) > 40 and bool(got[3]) == debugger  # messages said, sources mapped
        # the first walk is remembered, the second keeps its entries, the rest write them again
        assert _kept_hits() >= hits + 3 * len(DATES) - 2
        payload_events = ansible_accel.status()["payload"]
        assert payload_events["native"] >= 3 * len(DATES)
    finally:
        ansible_accel.uninstall()
