"""A walk whose optional imports come from a collection that is not installed is remembered
(in memory and on disk) with what would let the collection loader find that collection: it
is never served once the collection appears.  Each process gets its own collection path
(the loader's paths are fixed when a process sets it up), every answer is compared with
ansible-core's own recursive_finder at that moment."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from ._fresh_walk import COMPARED_SOON_AFTER_WRITES

# Walks in a fresh interpreter, each compared with ansible-core's; argv: when to create the
# absent collection's module_util ("never", "first": before any walk, "later": after three).
WALKS = COMPARED_SOON_AFTER_WRITES + r"""
when_create, root = sys.argv[1], sys.argv[2]
module = (b"from ansible.module_utils.basic import AnsibleModule\n"
          b"try:\n    from ansible_collections.accelns.absent.plugins.module_utils.thing import x\n"
          b"except ImportError:\n    x = None\n")

def walk(recursive_finder):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, mode="w", compression=zipfile.ZIP_DEFLATED) as zf:
        metadata = recursive_finder("probe", "ansible.modules.probe", Origin(path="/x/probe.py").tag(module), zf,
                                    date_time, _builder.ExtensionManager())
    return buffer.getvalue(), repr(metadata)

def create():
    directory = os.path.join(root, "ansible_collections", "accelns", "absent", "plugins", "module_utils")
    os.makedirs(directory)
    with open(os.path.join(directory, "thing.py"), "w") as f:
        f.write("x = 1\n")

steps = []
for step in range(4):
    if (when_create, step) in (("first", 0), ("later", 3)):
        create()
    mine = walk(mc.recursive_finder)
    theirs = walk(original)
    events = ansible_accel.status()["finder"].get("events", {})
    steps.append({"same": mine == theirs, "names": zipfile.ZipFile(io.BytesIO(theirs[0])).namelist(),
                  "memo": events.get("closure_memo_hit", 0), "disk": events.get("closure_disk_hit", 0)})
    time.sleep(0.2)
print(json.dumps(steps))
"""

THING = "ansible_collections/accelns/absent/plugins/module_utils/thing.py"


@pytest.fixture
def run(tmp_path):
    local_tmp = tmp_path / "local_tmp"
    local_tmp.mkdir(mode=0o700)

    def walks(root, when_create: str, shared: bool = True) -> list[dict]:
        env = dict(os.environ, ANSIBLE_LOCAL_TEMP=str(local_tmp), ANSIBLE_COLLECTIONS_PATH=str(root),
                   ANSIBLE_ACCEL_FINDER_DISK="1" if shared else "0")
        env.pop("ANSIBLE_ACCEL", None)
        out = subprocess.run([sys.executable, "-c", WALKS, when_create, str(root)], env=env, capture_output=True,
                             text=True, check=True)
        return json.loads(out.stdout.strip().splitlines()[-1])

    return walks


def _collection_root(tmp_path, name: str, namespace_exists: bool):
    root = tmp_path / name
    (root / "ansible_collections").mkdir(parents=True)
    if namespace_exists:
        (root / "ansible_collections" / "accelns" / "other").mkdir(parents=True)
    time.sleep(0.2)  # older than the test's "too recent to trust" window
    return root


@pytest.mark.parametrize("namespace_exists", [False, True])
def test_a_walk_with_an_absent_collection_is_remembered_until_the_collection_appears(run, tmp_path, namespace_exists):
    root = _collection_root(tmp_path, "collections", namespace_exists)
    steps = run(root, "later", shared=False)
    assert all(s["same"] for s in steps)
    assert [THING in s["names"] for s in steps] == [False, False, False, True]
    # walks came from the memo until the collection was there; where the namespace exists,
    # the first walk imports its package, which changes what is remembered: the second
    # walk is remembered, the third is the first from the memo
    expected = [0, 0, 1, 1] if namespace_exists else [0, 1, 2, 2]
    assert [s["memo"] for s in steps] == expected


@pytest.mark.parametrize("namespace_exists", [False, True])
def test_a_record_on_disk_with_an_absent_collection_is_not_used_once_it_appears(run, tmp_path, namespace_exists):
    root = _collection_root(tmp_path, "collections", namespace_exists)
    first = run(root, "never")
    assert all(s["same"] for s in first) and first[0]["disk"] == 0 and first[-1]["memo"] >= 1
    second = run(root, "never")
    assert all(s["same"] for s in second) and second[0]["disk"] == 1  # taken from the record
    third = run(root, "first")
    assert all(s["same"] for s in third) and all(THING in s["names"] for s in third)
    assert third[0]["disk"] == 0 and third[0]["memo"] == 0
