"""The whole-closure memo of the ``finder`` path: a module walked before is answered from
what was remembered only while nothing it depended on changed, and every answer equals
ansible-core's own recursive_finder run at that moment."""

from __future__ import annotations

import datetime
import io
import os
import time
import zipfile

import pytest

import ansible_accel
from ansible._internal._ansiballz import _builder
from ansible._internal._datatag._tags import Origin
from ansible.executor import module_common as mc
from ansible.plugins.loader import module_utils_loader

from ansible_accel._integrations import _finder_locate

DATE_TIME = datetime.datetime(2024, 5, 6, 7, 8, 10, tzinfo=datetime.timezone.utc)
MODULE = b"from ansible.module_utils.basic import AnsibleModule\nfrom ansible.module_utils import accel_probe\n"
# a short "too recent to trust" window, so the test need not wait seconds for its files
RACY_NS = 50_000_000


def _walk(recursive_finder, data=MODULE):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, mode="w", compression=zipfile.ZIP_DEFLATED) as zf:
        metadata = recursive_finder("probe", "ansible.modules.probe", Origin(path="/x/probe.py").tag(data), zf, DATE_TIME,
                                    _builder.ExtensionManager())
    return buffer.getvalue(), metadata


def _hits() -> int:
    return ansible_accel.status()["finder"].get("events", {}).get("closure_memo_hit", 0)


def _settle() -> None:
    time.sleep(3 * RACY_NS / 1e9)


@pytest.fixture
def probe_dir(tmp_path, monkeypatch):
    directory = tmp_path / "module_utils"
    directory.mkdir()
    module_utils_loader.add_directory(str(directory))
    monkeypatch.setattr(_finder_locate, "_RACY_NS", RACY_NS)
    ansible_accel.install()
    try:
        yield directory
    finally:
        ansible_accel.uninstall()
        module_utils_loader._extra_dirs.remove(str(directory))
        module_utils_loader._clear_caches()


def _names(payload: bytes) -> list[str]:
    return zipfile.ZipFile(io.BytesIO(payload)).namelist()


def test_a_rewritten_file_with_the_same_size_and_mtime_is_not_served_stale(probe_dir):
    original = mc.recursive_finder.__wrapped_original__
    probe = probe_dir / "accel_probe.py"
    probe.write_bytes(b"from ansible.module_utils import urls  \n")
    _settle()
    first = _walk(mc.recursive_finder)
    assert first == _walk(original)
    hits = _hits()
    assert _walk(mc.recursive_finder) == first
    assert _hits() == hits + 1  # the second walk came from the memo

    before = os.stat(probe)
    probe.write_bytes(b"from ansible.module_utils import six   \n")  # same size
    os.utime(probe, ns=(before.st_atime_ns, before.st_mtime_ns))  # same mtime
    after = os.stat(probe)
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    _settle()
    hits = _hits()
    changed = _walk(mc.recursive_finder)
    assert _hits() == hits  # not from the memo
    assert changed == _walk(original)
    assert "ansible/module_utils/six/__init__.py" in _names(changed[0])
    assert "ansible/module_utils/urls.py" not in _names(changed[0])
    assert b"import six   \n" in zipfile.ZipFile(io.BytesIO(changed[0])).read("ansible/module_utils/accel_probe.py")


def test_a_new_file_that_shadows_a_remembered_one_is_found(probe_dir):
    original = mc.recursive_finder.__wrapped_original__
    (probe_dir / "accel_probe.py").write_bytes(b"from ansible.module_utils import urls\n")
    _settle()
    _walk(mc.recursive_finder)
    hits = _hits()
    assert _walk(mc.recursive_finder) == _walk(original) and _hits() == hits + 1
    # a package of the same name in the same directory wins over the module for Python's
    # import system; ansible-core's locator sees it, so must we
    (probe_dir / "accel_probe").mkdir()
    (probe_dir / "accel_probe" / "__init__.py").write_bytes(b"x = 1\n")
    shadowed = _walk(mc.recursive_finder)
    assert shadowed == _walk(original)
    assert "ansible/module_utils/accel_probe/__init__.py" in _names(shadowed[0])
    # and a core module_util shadowed from an earlier search directory
    (probe_dir / "urls.py").write_bytes(b"# shadowing urls\n")
    module = b"from ansible.module_utils import urls\n"
    _walk(mc.recursive_finder, module)
    assert _walk(mc.recursive_finder, module) == _walk(original, module)


def _outcome(recursive_finder, module):
    try:
        return _walk(recursive_finder, module)
    except Exception as ex:  # noqa: BLE001 - the error itself is compared
        return type(ex), str(ex)


@pytest.mark.parametrize("module", [
    b"from ansible.module_utils.formerly_core import thing\n",
    b"from ansible.module_utils.basic import AnsibleModule\nfrom ansible.module_utils.common import warnings\n"
    b"try:\n    from ansible.module_utils import optional_missing\nexcept ImportError:\n    pass\n",
])
def test_a_walk_with_a_redirect_or_a_missing_optional_import_is_never_remembered(probe_dir, module):
    original = mc.recursive_finder.__wrapped_original__
    expected = _outcome(original, module)
    hits = _hits()
    assert _outcome(mc.recursive_finder, module) == expected
    assert _outcome(mc.recursive_finder, module) == expected
    assert _hits() == hits


def test_a_replaced_module_common_name_is_honoured(probe_dir, monkeypatch):
    (probe_dir / "accel_probe.py").write_bytes(b"x = 1\n")
    _settle()
    _walk(mc.recursive_finder)
    calls = []
    real = mc._slurp

    def slurp(path):
        calls.append(path)
        return real(path)

    monkeypatch.setattr(mc, "_slurp", slurp)
    hits = _hits()
    _walk(mc.recursive_finder)
    assert _hits() == hits and calls  # the memo stood aside and the locators read the files


def _collection_module():
    try:
        import ansible_collections
    except ImportError:
        return None
    for root in ansible_collections.__path__:
        path = os.path.join(root, "check_point", "mgmt", "plugins", "modules", "cp_mgmt_https_rule.py")
        if os.path.isfile(path):
            return path
    return None


@pytest.mark.skipif(_collection_module() is None, reason="the `ansible` community package is not installed in this environment")
def test_a_collection_module_is_remembered_with_its_collection_module_utils(probe_dir):
    path = _collection_module()
    data = open(path, "rb").read()
    original = mc.recursive_finder.__wrapped_original__

    def walk(recursive_finder):
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, mode="w", compression=zipfile.ZIP_DEFLATED) as zf:
            metadata = recursive_finder("cp_mgmt_https_rule", "ansible_collections.check_point.mgmt.plugins.modules.cp_mgmt_https_rule",
                                        Origin(path=path).tag(data), zf, DATE_TIME, _builder.ExtensionManager())
        return buffer.getvalue(), metadata

    expected = walk(original)
    assert any(n.startswith("ansible_collections/check_point/mgmt/plugins/module_utils/") for n in _names(expected[0]))
    hits = _hits()
    for _ in range(3):  # (the first walks may see the collection's __pycache__ appear)
        assert walk(mc.recursive_finder) == expected
    assert _hits() >= hits + 1


EMBED_MODULE = b"""from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils import accel_probe
from ansible.module_utils.embed import EmbedManager
_resource = EmbedManager.embed('ansible.module_utils._embed', 'dnf.py')
"""


def test_a_module_with_embeds_is_remembered_apart_with_its_embeds(probe_dir):
    from ansible_accel._activation import core_minor

    if core_minor() < (2, 21):
        pytest.skip("embed support (EmbedManager) arrived in ansible-core 2.21")
    original = mc.recursive_finder.__wrapped_original__
    (probe_dir / "accel_probe.py").write_bytes(b"from ansible.module_utils import urls\n")
    _settle()

    def events():
        found = ansible_accel.status()["finder"].get("events", {})
        return _hits(), found.get("remembered_embeds", 0), found.get("embed_finder_hit", 0)

    expected = _walk(original, EMBED_MODULE)
    assert _walk(mc.recursive_finder, EMBED_MODULE) == expected
    hits, remembered, finder_hits = events()
    # the next walk is remembered whole, its embeds too: no finder is asked
    assert _walk(mc.recursive_finder, EMBED_MODULE) == expected
    assert events() == (hits + 1, remembered + 1, finder_hits)
    # the same content elsewhere: its embeds would carry the other origin, so neither the
    # remembered embeds nor the finder are reused
    other = Origin(path="/y/other.py").tag(EMBED_MODULE)
    assert mc.ModuleDepFinder is original.__globals__["ModuleDepFinder"]

    def walk_other(recursive_finder):
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, mode="w", compression=zipfile.ZIP_DEFLATED) as zf:
            metadata = recursive_finder("probe", "ansible.modules.probe", other, zf, DATE_TIME, _builder.ExtensionManager())
        return buffer.getvalue(), metadata

    assert walk_other(mc.recursive_finder) == walk_other(original)
    assert events()[1:] == (remembered + 1, finder_hits)
    # a changed module_util is seen: the remembered walk is not used
    (probe_dir / "accel_probe.py").write_bytes(b"from ansible.module_utils import six\n")
    _settle()
    expected = _walk(original, EMBED_MODULE)
    assert _walk(mc.recursive_finder, EMBED_MODULE) == expected


MANY_EMBEDS = b"""from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.embed import EmbedManager
_one = EmbedManager.embed('ansible.module_utils.common', 'validation.py')
_two = EmbedManager.embed('ansible.module_utils', 'urls.py')
_three = EmbedManager.embed('ansible.module_utils.common', 'validation.py')
_four = EmbedManager.embed('ansible.module_utils._embed', 'dnf.py')
_five = EmbedManager.embed('..module_utils.common', 'warnings.py')
"""


def test_remembered_embeds_are_the_finders_own_in_its_order(probe_dir):
    """Several embeds (one repeated, one relative): the set rebuilt from memory iterates as
    the finder's copy does (the zip order), each string tagged with the same origin."""
    from ansible_accel._activation import core_minor

    if core_minor() < (2, 21):
        pytest.skip("embed support (EmbedManager) arrived in ansible-core 2.21")
    from ansible_accel._integrations import _finder_embeds

    original = mc.recursive_finder.__wrapped_original__
    expected = _walk(original, MANY_EMBEDS)
    assert _walk(mc.recursive_finder, MANY_EMBEDS) == expected
    remembered = ansible_accel.status()["finder"]["events"].get("remembered_embeds", 0)
    assert _walk(mc.recursive_finder, MANY_EMBEDS) == expected
    assert ansible_accel.status()["finder"]["events"]["remembered_embeds"] == remembered + 1
    data = Origin(path="/x/probe.py").tag(MANY_EMBEDS)
    finder = mc.ModuleDepFinder("ansible.modules.probe", data)
    rebuilt = _finder_embeds.rebuild(mc, data, _finder_embeds.record(mc, data, finder.embeds))
    theirs = finder.embeds.copy()
    assert list(rebuilt) == list(theirs)
    for mine, their in zip(rebuilt, theirs):
        for field in ("package", "resource"):
            assert type(getattr(mine, field)) is type(getattr(their, field))
            assert mc.Origin.get_tag(getattr(mine, field)) == mc.Origin.get_tag(getattr(their, field))
