"""ansible-core's recursive_finder with the accelerator on and off: same zip, same metadata,
same errors; and the counters prove the native scanner did the work."""

from __future__ import annotations

import datetime
import io
import zipfile

import pytest

import ansible_accel
from ansible._internal._ansiballz import _builder
from ansible._internal._datatag._tags import Origin
from ansible.executor import module_common as mc
from ansible.plugins.loader import module_utils_loader

from ansible_accel._integrations import finder as integration

from ._reference import builtin_modules

DATE_TIME = datetime.datetime(2024, 5, 6, 7, 8, 10, tzinfo=datetime.timezone.utc)
MODULES = builtin_modules()


def _run(name: str, fqn: str, data: bytes, path: str, compression=zipfile.ZIP_DEFLATED):
    """(zip bytes, metadata) or the exception recursive_finder raised."""
    buffer = io.BytesIO()
    try:
        with zipfile.ZipFile(buffer, mode="w", compression=compression) as zf:
            metadata = mc.recursive_finder(name, fqn, Origin(path=path).tag(data), zf, DATE_TIME, _builder.ExtensionManager())
    except Exception as ex:  # noqa: BLE001 - the error itself is compared
        return ("raised", type(ex), str(ex))
    return buffer.getvalue(), metadata


def _both_ways(accel, name, fqn, data, path, **kwargs):
    accel.uninstall()
    assert mc.recursive_finder is not None and not ansible_accel.status()["finder"]["active"]
    expected = _run(name, fqn, data, path, **kwargs)
    accel.install()
    assert ansible_accel.status()["finder"]["active"]
    return expected, _run(name, fqn, data, path, **kwargs)


@pytest.mark.parametrize("path", MODULES, ids=[p.stem for p in MODULES])
def test_builtin_module_zip_and_metadata_identical(accel, path):
    data = path.read_bytes()
    fqn = mc._get_ansible_module_fqn(str(path))
    before = _native_answers()
    expected, got = _both_ways(accel, path.stem, fqn, data, str(path))
    assert expected[0] != "raised", expected
    assert got == expected
    assert _native_answers() > before


def _native_answers() -> int:
    """Native scans, scans served from the cache, and whole walks remembered."""
    finder = ansible_accel.status()["finder"]
    events = finder.get("events", {})
    return finder["native"] + sum(events.get(e, 0) for e in ("scan_cache_hit", "closure_memo_hit", "closure_disk_hit"))


def test_stored_compression_and_second_run_from_cache(accel):
    path = next(p for p in MODULES if p.stem == "copy")
    data, fqn = path.read_bytes(), mc._get_ansible_module_fqn(str(path))
    expected, got = _both_ways(accel, "copy", fqn, data, str(path), compression=zipfile.ZIP_STORED)
    assert expected[0] != "raised", expected
    assert got == expected
    hits = ansible_accel.status()["finder"].get("events", {}).get("closure_memo_hit", 0)
    assert _run("copy", fqn, data, str(path), compression=zipfile.ZIP_STORED) == expected
    assert ansible_accel.status()["finder"]["events"]["closure_memo_hit"] == hits + 1


@pytest.fixture
def module_utils_dir(tmp_path):
    """A module_utils directory on the loader's path, as a user's library would be."""
    directory = tmp_path / "module_utils"
    directory.mkdir()
    module_utils_loader.add_directory(str(directory))
    try:
        yield directory
    finally:
        module_utils_loader._extra_dirs.remove(str(directory))
        module_utils_loader._clear_caches()


MODULE = b"from ansible.module_utils.basic import AnsibleModule\nfrom ansible.module_utils import accel_probe\n"


def test_changed_module_util_is_never_served_stale(accel, module_utils_dir):
    probe = module_utils_dir / "accel_probe.py"
    for body in (b"from ansible.module_utils import urls\n", b"import ansible.module_utils.six\n", b"x = 1\n"):
        probe.write_bytes(body)
        expected, got = _both_ways(accel, "probe", "ansible.modules.probe", MODULE, "/x/probe.py")
        assert got == expected
        assert got[0] != "raised", got
        names = zipfile.ZipFile(io.BytesIO(got[0])).namelist()
        assert ("ansible/module_utils/urls.py" in names) == (b"urls" in body)


@pytest.mark.parametrize("body, reason", [
    (b"def broken(:\n", "syntax_error"),
    (b"# -*- coding: latin-1 -*-\nNAME = '\xe9'\nfrom ansible.module_utils import urls\n", "coding_declaration"),
    (b"x = '\\d'\n", "compile_warning"),
])
def test_module_util_fallbacks_are_identical_and_counted(accel, module_utils_dir, body, reason):
    (module_utils_dir / "accel_probe.py").write_bytes(body)
    expected, got = _both_ways(accel, "probe", "ansible.modules.probe", MODULE, "/x/probe.py")
    assert got == expected
    assert ansible_accel.status()["finder"]["fallback"].get(reason, 0) >= 1


@pytest.mark.parametrize("module", [
    b"def broken(:\n",
    b"from ansible.module_utils import no_such_module_util_here\n",
    b"import ansible.module_utils.no_such.deeper\n",
    b"try:\n    from ansible.module_utils import optional_missing\nexcept ImportError:\n    pass\n",
    b"from ansible.module_utils.six.moves import urllib\nfrom ansible.module_utils.six import _six\n",
    b"from ansible_collections.no_ns.no_coll.plugins.module_utils import thing\n",
])
def test_module_errors_and_edge_imports_are_identical(accel, module):
    expected, got = _both_ways(accel, "probe", "ansible.modules.probe", module, "/x/probe.py")
    assert got == expected


def test_embed_import_goes_to_ansible_core(accel, core_minor):
    module = b"from ansible.module_utils import embed\n"
    expected, got = _both_ways(accel, "probe", "ansible.modules.probe", module, "/x/probe.py")
    assert got == expected
    if core_minor >= (2, 21):
        assert got[0] == "raised"  # no EmbedManager.embed() call: ansible-core's own error
        assert ansible_accel.status()["finder"]["fallback"].get("embed", 0) >= 1


def test_uninstall_restores_the_original(accel):
    patched = mc.recursive_finder
    assert patched.__wrapped_original__ is not patched
    accel.uninstall()
    assert mc.recursive_finder is patched.__wrapped_original__
    assert not integration._cache and not integration._located


@pytest.fixture
def display_calls(monkeypatch):
    """Every message recursive_finder sends to ansible-core's display (still delivered)."""
    calls = []
    for method in ("warning", "deprecated", "vvv", "vvvvv", "debug"):
        original = getattr(mc.display, method)

        def record(*args, _method=method, _original=original, **kwargs):
            calls.append((_method, args, tuple(sorted(kwargs.items(), key=lambda kv: kv[0]))))
            return _original(*args, **kwargs)

        monkeypatch.setattr(mc.display, method, record)
    return calls


@pytest.mark.parametrize("module", [
    b"from ansible.module_utils import acme\n",
    b"from ansible.module_utils.formerly_core import thing\n",
    b"import ansible.module_utils.sub1.sub2.formerly_core\n",
    b"try:\n    from ansible.module_utils import acme\nexcept ImportError:\n    pass\n",
    b"from ansible.module_utils.basic import AnsibleModule\nimport os\n",
])
def test_redirects_and_messages_are_identical(accel, display_calls, module):
    accel.uninstall()
    expected = _run("probe", "ansible.modules.probe", module, "/x/probe.py")
    expected_calls = list(display_calls)
    display_calls.clear()
    accel.install()
    got = _run("probe", "ansible.modules.probe", module, "/x/probe.py")
    assert got == expected
    assert display_calls == expected_calls


def _age(*paths, seconds=100):
    """Backdate paths so their stamps are old enough to be remembered."""
    import os
    import time

    then = time.time() - seconds
    for path in paths:
        os.utime(path, (then, then))


def _memo_hits() -> int:
    events = ansible_accel.status()["finder"].get("events", {})
    return events.get("location_memo_hit", 0) + events.get("closure_memo_hit", 0)


def test_remembered_locations_follow_changes_on_disk(accel, module_utils_dir):
    probe = module_utils_dir / "accel_probe.py"
    probe.write_bytes(b"from ansible.module_utils import urls\n")
    _age(probe, module_utils_dir)
    expected, got = _both_ways(accel, "probe", "ansible.modules.probe", MODULE, "/x/probe.py")
    assert got == expected and got[0] != "raised"
    hits = _memo_hits()
    assert _run("probe", "ansible.modules.probe", MODULE, "/x/probe.py") == expected
    # a memo answered: the locations', or the whole closure's when every file it read had aged
    # past the racy window by then (a slow machine: the first walk ran over 2 s after the write)
    assert _memo_hits() > hits

    # same name and size, new content, old stamps: the content still comes from the file
    probe.write_bytes(b"from ansible.module_utils import six\n\n")
    _age(probe, module_utils_dir)
    expected, got = _both_ways(accel, "probe", "ansible.modules.probe", MODULE, "/x/probe.py")
    assert got == expected and got[0] != "raised"
    assert _run("probe", "ansible.modules.probe", MODULE, "/x/probe.py") == expected

    # the module becomes a package in the same directory: a new location
    probe.unlink()
    (module_utils_dir / "accel_probe").mkdir()
    (module_utils_dir / "accel_probe" / "__init__.py").write_bytes(b"import ansible.module_utils.six\n")
    warm = _run("probe", "ansible.modules.probe", MODULE, "/x/probe.py")
    accel.uninstall()
    assert warm == _run("probe", "ansible.modules.probe", MODULE, "/x/probe.py")
    assert "ansible/module_utils/accel_probe/__init__.py" in zipfile.ZipFile(io.BytesIO(warm[0])).namelist()
    accel.install()

    # and a module_util that shadows a core one appears in an earlier search directory
    (module_utils_dir / "urls.py").write_bytes(b"# shadowing urls\n")
    warm = _run("probe", "ansible.modules.probe", b"from ansible.module_utils import urls\n", "/x/probe.py")
    accel.uninstall()
    assert warm == _run("probe", "ansible.modules.probe", b"from ansible.module_utils import urls\n", "/x/probe.py")
    accel.install()
