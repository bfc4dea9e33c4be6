"""A remembered closure's payload entries kept on disk: a fresh process whose closure comes
from disk writes them instead of reading its files, only while the files are the very ones
they were written from; the payload is always ansible-core's own at that moment."""

from __future__ import annotations

import os
import time

import pytest

from ._fresh_walk import PRELUDE, ModuleUtilsWalks

WALK = PRELUDE + r"""
import hashlib
module, compression, year, then = sys.argv[1].encode(), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]


class Debugging(_builder.ExtensionManager):
    debugger_enabled = property(lambda self: True)


for year in [year] + ([year + 3] if then == "twice" else []):  # (twice: from disk, then from memory)
    buffer = io.BytesIO()
    zf = mc.zipfile.ZipFile(buffer, mode="w", compression=compression)
    when = datetime.datetime(year, 5, 6, 7, 8, 10, tzinfo=datetime.timezone.utc)
    extensions = Debugging() if then == "debugger" else _builder.ExtensionManager()
    metadata = mc.recursive_finder("probe", "ansible.modules.probe", Origin(path="/x/probe.py").tag(module), zf, when,
                                   extensions)
if then == "hand_over":  # anything zipfile must do: the entries written so far are replayed
    zf.writestr(mc._make_zinfo("ansible/modules/probe.py", when, zf=zf), module)
    zf.mkdir("ansible/extra")
zf.close()
names = zipfile.ZipFile(io.BytesIO(buffer.getvalue())).namelist()
events = ansible_accel.status()["finder"].get("events", {})
print(json.dumps({"zip": hashlib.sha256(buffer.getvalue()).hexdigest(), "metadata": repr(metadata), "names": names,
                  "disk_hits": events.get("closure_disk_hit", 0), "saved": events.get("kept_block_saved", 0),
                  "block_hits": events.get("kept_block_hit", 0), "mapping": extensions.source_mapping,
                  "memory_hits": events.get("kept_entries_hit", 0)}))
"""

MODULE = "from ansible.module_utils.basic import AnsibleModule\nfrom ansible.module_utils import accel_probe\n"


@pytest.fixture
def run(tmp_path):
    walks = ModuleUtilsWalks(tmp_path, WALK)

    def walk(accelerated: bool, compression: int = 8, year: int = 2024, then: str = "") -> dict:
        return walks(accelerated, MODULE, str(compression), str(year), then)

    walk.module_utils = walks.module_utils
    walk.blocks = walks.local_tmp / "ansible_accel_finder_blocks_v1"
    return walk


def _same(a: dict, b: dict) -> bool:
    return (a["zip"], a["metadata"], a["names"], a["mapping"]) == (b["zip"], b["metadata"], b["names"], b["mapping"])


def _kept(run, compression: int = 8) -> dict:
    """Walks until the entries are kept on disk: the first walk records the closure, the
    next takes it from disk and leaves the entries it wrote."""
    def blocks() -> set:
        return {p.name for p in run.blocks.iterdir()} if run.blocks.exists() else set()

    before = blocks()
    first = run(True, compression)
    assert first["disk_hits"] == 0 and first["saved"] == 0
    second = run(True, compression)
    assert second["disk_hits"] == 1 and second["saved"] == 1 and second["block_hits"] == 0
    (new,) = blocks() - before
    assert new.endswith(f"-{compression}.block")
    return second


@pytest.mark.parametrize("compression", [0, 8])
def test_kept_entries_are_written_with_the_walks_date_and_give_ansible_cores_payload(run, compression):
    (run.module_utils / "accel_probe.py").write_bytes(b"from ansible.module_utils import urls\n" + b"x = 1\n" * 2000)
    time.sleep(2.2)  # older than the "too recent to trust" window of two seconds
    expected = run(False, compression)
    assert _same(_kept(run, compression), expected)
    for year in (2024, 2031):
        got = run(True, compression, year)
        assert got["block_hits"] == 1 and got["saved"] == 0
        assert _same(got, run(False, compression, year))
    # the other compression has entries of its own
    other = 8 - compression
    assert run(True, other)["block_hits"] == 0
    assert _same(run(True, other), run(False, other))
    assert run(True, other)["block_hits"] == 1


@pytest.mark.parametrize("then", ["hand_over", "debugger"])
def test_kept_entries_handed_over_to_zipfile_or_debugged_are_ansible_cores(run, then):
    (run.module_utils / "accel_probe.py").write_bytes(b"x = 1\n" * 3000)
    time.sleep(2.2)
    _kept(run)
    got = run(True, then=then)
    assert got["block_hits"] == 1
    expected = run(False, then=then)
    assert _same(got, expected)
    if then == "debugger":
        assert any(path.endswith("accel_probe.py") for path in got["mapping"])


def test_kept_entries_are_never_written_for_a_changed_file(run):
    probe = run.module_utils / "accel_probe.py"
    probe.write_bytes(b"from ansible.module_utils import urls  \n")
    time.sleep(2.2)
    _kept(run)
    assert run(True)["block_hits"] == 1
    # the same size, the same mtime, other content
    before = os.stat(probe)
    probe.write_bytes(b"from ansible.module_utils import six   \n")
    os.utime(probe, ns=(before.st_atime_ns, before.st_mtime_ns))
    expected = run(False)
    changed = run(True)
    assert _same(changed, expected) and changed["block_hits"] == 0 and changed["disk_hits"] == 0
    # once the file is old enough again, its new entries are kept and used (the walk above may
    # already have recorded the new closure, when its file was old enough by then on a slow
    # machine: then the first walk here takes it from disk and keeps the entries)
    time.sleep(2.2)
    for _ in range(2):
        walked = run(True)
        if walked["saved"]:
            break
    assert walked["disk_hits"] == 1 and walked["saved"] == 1 and walked["block_hits"] == 0
    again = run(True)
    assert again["block_hits"] == 1 and _same(again, run(False))


def test_a_damaged_kept_file_is_a_miss_and_is_written_again(run):
    (run.module_utils / "accel_probe.py").write_bytes(b"x = 1\n" * 3000)
    time.sleep(2.2)
    expected = run(False)
    _kept(run)
    (block,) = run.blocks.iterdir()
    data = bytearray(block.read_bytes())
    data[len(data) // 2] ^= 0x40
    block.write_bytes(bytes(data))
    damaged = run(True)
    assert _same(damaged, expected) and damaged["block_hits"] == 0 and damaged["disk_hits"] == 1
    assert damaged["saved"] == 1  # written again
    healed = run(True)
    assert _same(healed, expected) and healed["block_hits"] == 1
    block.unlink()
    assert run(True)["saved"] == 1
    assert run(True)["block_hits"] == 1


def test_kept_entries_from_disk_are_kept_in_memory_for_the_next_walk(run):
    (run.module_utils / "accel_probe.py").write_bytes(b"x = 1\n" * 3000)
    time.sleep(2.2)
    _kept(run)
    got = run(True, then="twice")  # the second walk (dated 2027) from memory
    assert got["block_hits"] == 1 and got["memory_hits"] == 1
    assert _same(got, run(False, year=2027))
