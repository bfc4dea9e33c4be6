"""Closures remembered on disk: a fresh process (as every forked worker and every later run
is) takes a walk from the record another process left, only while nothing the walk
depended on changed; its answer always equals ansible-core's own at that moment."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from ._fresh_walk import PRELUDE, ModuleUtilsWalks

# One walk in a fresh interpreter: ansible-core's (ANSIBLE_ACCEL=0) or the accelerator's.
WALK = PRELUDE + r"""
import hashlib
module = sys.argv[1].encode()
debugging = len(sys.argv) > 2 and sys.argv[2] == "debugger"  # (then walked twice: from disk, then from memory)


class Debugging(_builder.ExtensionManager):
    debugger_enabled = property(lambda self: True)


mappings = []
for _ in range(2 if debugging else 1):
    buffer = io.BytesIO()
    zf = mc.zipfile.ZipFile(buffer, mode="w", compression=zipfile.ZIP_DEFLATED)
    when = datetime.datetime(2024, 5, 6, 7, 8, 10, tzinfo=datetime.timezone.utc)
    extensions = Debugging() if debugging else _builder.ExtensionManager()
    metadata = mc.recursive_finder("probe", "ansible.modules.probe", Origin(path="/x/probe.py").tag(module), zf, when,
                                   extensions)
    zf.close()
    mappings.append(extensions.source_mapping)
names = zipfile.ZipFile(io.BytesIO(buffer.getvalue())).namelist()
events = ansible_accel.status()["finder"].get("events", {})
print(json.dumps({"zip": hashlib.sha256(buffer.getvalue()).hexdigest(), "metadata": repr(metadata), "names": names,
                  "disk_hits": events.get("closure_disk_hit", 0), "embeds": events.get("remembered_embeds", 0),
                  "mappings": mappings}))
"""

MODULE = "from ansible.module_utils.basic import AnsibleModule\nfrom ansible.module_utils import accel_probe\n"


@pytest.fixture
def run(tmp_path):
    walks = ModuleUtilsWalks(tmp_path, WALK)

    def walk(accelerated: bool, module: str = MODULE, debugger: bool = False) -> dict:
        return walks(accelerated, module, *(["debugger"] if debugger else []))

    walk.module_utils = walks.module_utils
    walk.records = walks.local_tmp / "ansible_accel_finder_v2"
    return walk


def _same(a: dict, b: dict) -> bool:
    return (a["zip"], a["metadata"], a["names"]) == (b["zip"], b["metadata"], b["names"])


def _aged(path, seconds=100) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then))


def test_a_fresh_process_takes_the_walk_from_disk_and_never_a_stale_one(run):
    probe = run.module_utils / "accel_probe.py"
    probe.write_bytes(b"from ansible.module_utils import urls  \n")
    time.sleep(2.2)  # older than the "too recent to trust" window of two seconds
    expected = run(False)
    first = run(True)
    assert _same(first, expected) and first["disk_hits"] == 0
    assert len(list(run.records.iterdir())) == 1
    (record,) = run.records.iterdir()
    _aged(record, 3600)
    second = run(True)
    assert _same(second, expected) and second["disk_hits"] == 1
    assert time.time() - os.stat(record).st_mtime < 600  # a record read is marked used, for pruning

    # the same size, the same mtime, other content: the record must not be used
    before = os.stat(probe)
    probe.write_bytes(b"from ansible.module_utils import six   \n")
    os.utime(probe, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert (os.stat(probe).st_size, os.stat(probe).st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    expected = run(False)
    assert "ansible/module_utils/urls.py" not in expected["names"]
    changed = run(True)
    assert _same(changed, expected) and changed["disk_hits"] == 0

    # a file appearing in a searched directory (shadowing a core module_util)
    time.sleep(2.2)
    run(True)
    assert run(True)["disk_hits"] == 1
    (run.module_utils / "basic.py").write_bytes(b"# shadowing basic\n")
    expected = run(False)
    shadowed = run(True)
    assert _same(shadowed, expected) and shadowed["disk_hits"] == 0


def test_an_unreadable_record_is_a_miss(run):
    (run.module_utils / "accel_probe.py").write_bytes(b"x = 1\n")
    time.sleep(2.2)
    expected = run(False)
    assert _same(run(True), expected)
    (record,) = run.records.iterdir()
    record.write_text("{not json")
    got = run(True)
    assert _same(got, expected) and got["disk_hits"] == 0


def _has_collections() -> bool:
    try:
        import ansible_collections
    except ImportError:
        return False
    return any(os.path.isdir(os.path.join(p, "ansible", "netcommon")) for p in ansible_collections.__path__)


@pytest.mark.skipif(not _has_collections(), reason="the `ansible` community package is not installed in this environment")
def test_a_collection_closure_with_a_package_without_init_comes_back_from_disk(run):
    # check_point.mgmt's module_utils import ansible.netcommon's, whose `network` package
    # directory has no __init__.py: the collection loader gives b'' for it
    module = ("from ansible.module_utils.basic import AnsibleModule\n"
              "from ansible_collections.check_point.mgmt.plugins.module_utils.checkpoint import api_call\n")
    time.sleep(2.2)  # the test's module_utils directory, searched too, must be old enough to trust
    expected = run(False, module)
    first = run(True, module)
    assert _same(first, expected)
    second = run(True, module)
    assert _same(second, expected) and second["disk_hits"] == 1


def test_the_controller_prewarm_finds_the_records_directory_for_its_workers(tmp_path):
    """Made (or found) once in the controller's pre-warm, so a forked worker's first walk
    inherits the answer instead of checking and making it."""
    local_tmp = tmp_path / "local_tmp"
    local_tmp.mkdir(mode=0o700)
    script = (
        "import os, ansible_accel\n"
        "from ansible.plugins.loader import init_plugin_loader\n"
        "init_plugin_loader()\n"
        "ansible_accel.install()\n"
        "from ansible_accel._integrations import finder, _finder_disk\n"
        "finder.wait_for_prewarm()\n"
        "from ansible import constants as C\n"
        "print(_finder_disk._dir_for.get(C.DEFAULT_LOCAL_TMP))\n"
    )
    env = dict(os.environ, ANSIBLE_LOCAL_TEMP=str(local_tmp), ANSIBLE_ACCEL="1", ANSIBLE_ACCEL_FINDER_DISK="1",
               ANSIBLE_ACCEL_FINDER_PREWARM="1")
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == str(local_tmp / "ansible_accel_finder_v2")
    assert (local_tmp / "ansible_accel_finder_v2").is_dir()
    env["ANSIBLE_ACCEL_FINDER_DISK"] = "0"
    other = tmp_path / "other"
    other.mkdir(mode=0o700)
    env["ANSIBLE_LOCAL_TEMP"] = str(other)
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "None" and not (other / "ansible_accel_finder_v2").exists()


EMBED_MODULE = (
    "from ansible.module_utils.basic import AnsibleModule\n"
    "from ansible.module_utils import accel_probe\n"
    "from ansible.module_utils.embed import EmbedManager\n"
    "_resource = EmbedManager.embed('ansible.module_utils._embed', 'dnf.py')\n"
)


def test_a_module_with_embeds_comes_back_from_disk_with_them(run):
    from ansible_accel._activation import core_minor

    if core_minor() < (2, 21):
        pytest.skip("embed support (EmbedManager) arrived in ansible-core 2.21")
    probe = run.module_utils / "accel_probe.py"
    probe.write_bytes(b"x = 1\n")
    time.sleep(2.2)
    expected = run(False, EMBED_MODULE)
    assert "ansible/module_utils/_embed/dnf.py" in expected["names"]
    first = run(True, EMBED_MODULE)
    assert _same(first, expected) and first["disk_hits"] == 0 and first["embeds"] == 0
    second = run(True, EMBED_MODULE)
    # from the record, embeds too: no finder ran
    assert _same(second, expected) and second["disk_hits"] == 1 and second["embeds"] == 1
    probe.write_bytes(b"y = 2\n")
    expected = run(False, EMBED_MODULE)
    changed = run(True, EMBED_MODULE)
    assert _same(changed, expected) and changed["disk_hits"] == 0 and changed["embeds"] == 0


def test_a_closure_from_disk_maps_sources_for_the_debugger_as_ansible_core_does(run):
    """A closure read from a record holds its sources untagged: the debugger's source
    mapping (the one reader of their origin) comes out as ansible-core's, from disk and then
    from memory."""
    (run.module_utils / "accel_probe.py").write_bytes(b"from ansible.module_utils import urls\n")
    time.sleep(2.2)
    expected = run(False, debugger=True)
    assert len(expected["mappings"][0]) > 40 and expected["mappings"][0] == expected["mappings"][1]
    assert _same(run(True), expected)  # leaves the record
    got = run(True, debugger=True)
    assert _same(got, expected) and got["disk_hits"] == 1
    assert got["mappings"] == expected["mappings"]
