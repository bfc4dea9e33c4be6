"""A closure taken from disk without reading its files, whose kept entries cannot be written
(a date before 1980), reads its files then; one gone by that moment makes the walk
ansible-core's own, with ansible-core's own answer (and the fallback counted)."""

from __future__ import annotations

import time

from ._fresh_walk import PRELUDE, ModuleUtilsWalks

WALK = PRELUDE + r"""
from ansible_accel._integrations import _finder_closure
module, year, gone = sys.argv[1].encode(), int(sys.argv[2]), sys.argv[3]
if gone:
    read_sources = _finder_closure.read_sources

    def read_after_removal(closure):  # the file goes away after the stamps were checked
        if os.path.exists(gone):
            os.remove(gone)
        return read_sources(closure)

    _finder_closure.read_sources = read_after_removal
when = datetime.datetime(year, 5, 6, 7, 8, 10, tzinfo=datetime.timezone.utc)
zf = mc.zipfile.ZipFile(io.BytesIO(), mode="w", compression=8)
try:
    mc.recursive_finder("probe", "ansible.modules.probe", Origin(path="/x/probe.py").tag(module), zf, when,
                        _builder.ExtensionManager())
    outcome = "answered"
except Exception as e:
    outcome = f"{type(e).__name__}: {e}"
finder = ansible_accel.status()["finder"]
events = finder.get("events", {})
print(json.dumps({"outcome": outcome, "disk_hits": events.get("closure_disk_hit", 0),
                  "saved": events.get("kept_block_saved", 0), "gone": finder.get("fallback", {}).get("sources_gone", 0)}))
"""

MODULE = "from ansible.module_utils.basic import AnsibleModule\nfrom ansible.module_utils import accel_gone\n"


def test_a_file_gone_before_an_unread_closure_is_read_gives_ansible_cores_answer(tmp_path):
    walks = ModuleUtilsWalks(tmp_path, WALK)
    probe = walks.module_utils / "accel_gone.py"
    probe.write_bytes(b"x = 1\n")
    time.sleep(2.2)  # older than the "too recent to trust" window of two seconds

    def walk(accelerated: bool, year: int = 2024, gone: str = "") -> dict:
        return walks(accelerated, MODULE, str(year), gone)

    assert walk(True)["outcome"] == "answered"  # the closure recorded on disk
    kept = walk(True)  # taken from disk; the entries it wrote kept on disk
    assert kept["outcome"] == "answered" and kept["disk_hits"] == 1 and kept["saved"] == 1
    got = walk(True, 1979, str(probe))
    assert got["disk_hits"] == 1 and got["gone"] == 1
    assert not probe.exists()
    expected = walk(False, 1979)
    assert "accel_gone" in expected["outcome"] and expected["outcome"].startswith("AnsibleError")
    assert got["outcome"] == expected["outcome"]
