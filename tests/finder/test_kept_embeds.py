"""Resources embedded through EmbedManager.embed() (2.21+) are written from memory on the
next walk only while their file is the same: rewritten (even with the same size and mtime)
or gone, the next walk reads it again, or fails as ansible-core fails.  Each walk is
compared with ansible-core's own recursive_finder at that moment, in a fresh interpreter
with a collection path of its own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from ansible_accel._activation import core_minor

from ._fresh_walk import COMPARED_SOON_AFTER_WRITES

pytestmark = pytest.mark.skipif(core_minor() < (2, 21), reason="embed support (EmbedManager) arrived in ansible-core 2.21")

WALKS = COMPARED_SOON_AFTER_WRITES + r"""
resource = sys.argv[1]
module = (b"from ansible.module_utils.basic import AnsibleModule\n"
          b"from ansible.module_utils.embed import EmbedManager\n"
          b"_data = EmbedManager.embed('ansible_collections.accelns.emb.plugins.module_utils', 'data.txt')\n")

def walk(recursive_finder):
    buffer = io.BytesIO()
    try:
        with mc.zipfile.ZipFile(buffer, mode="w", compression=zipfile.ZIP_STORED) as zf:  # stored: the bytes show
            metadata = recursive_finder("probe", "ansible.modules.probe", Origin(path="/x/probe.py").tag(module), zf,
                                        date_time, _builder.ExtensionManager())
    except Exception as ex:
        return type(ex).__name__, str(ex)
    return buffer.getvalue().hex(), repr(metadata)

def rewrite_same_size_and_mtime():
    before = os.stat(resource)
    with open(resource, "wb") as f:
        f.write(b"TWO\n")
    os.utime(resource, ns=(before.st_atime_ns, before.st_mtime_ns))

changes = {2: rewrite_same_size_and_mtime, 4: lambda: os.unlink(resource)}
steps = []
for step in range(6):
    if step in changes:
        changes[step]()
    time.sleep(0.2)
    mine = walk(mc.recursive_finder)
    theirs = walk(original)
    events = ansible_accel.status()["finder"].get("events", {})
    steps.append({"same": mine == theirs, "failed": len(theirs[0]) < 100, "has_two": b"TWO".hex() in theirs[0],
                  "kept": events.get("kept_embed_hit", 0)})
print(json.dumps(steps))
"""


def test_a_kept_embed_is_written_only_while_its_file_is_the_same(tmp_path):
    root = tmp_path / "collections"
    package = root / "ansible_collections" / "accelns" / "emb" / "plugins" / "module_utils"
    package.mkdir(parents=True)
    resource = package / "data.txt"
    resource.write_bytes(b"ONE\n")
    time.sleep(0.2)
    local_tmp = tmp_path / "local_tmp"
    local_tmp.mkdir(mode=0o700)
    env = dict(os.environ, ANSIBLE_LOCAL_TEMP=str(local_tmp), ANSIBLE_COLLECTIONS_PATH=str(root), ANSIBLE_ACCEL_FINDER_DISK="0")
    env.pop("ANSIBLE_ACCEL", None)
    out = subprocess.run([sys.executable, "-c", WALKS, str(resource)], env=env, capture_output=True, text=True, check=True)
    steps = json.loads(out.stdout.strip().splitlines()[-1])
    assert all(s["same"] for s in steps)
    assert [s["has_two"] for s in steps] == [False, False, True, True, False, False]
    assert [s["failed"] for s in steps] == [False] * 4 + [True, True]
    # from memory on the second walk and on the one after the rewrite was read again
    assert [s["kept"] for s in steps] == [0, 1, 1, 2, 2, 2]
