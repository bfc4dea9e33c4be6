"""The ``bytecode`` path inside ansible-core: opt-in, the payload ``modify_module`` builds
(the same entries as with the path off, plus one ``.pyc`` per ``.py``), the version chosen
from the task's variables, and the counters."""

from __future__ import annotations

import base64
import io
import re
import sys
import types
import zipfile

import pytest

import ansible_accel
from ansible_accel import _activation
from ansible_accel import _bytecode as bytecode
from ansible_accel._integrations import bytecode as bytecode_path

from .conftest import interpreter, other_versions

OWN = "%d.%d" % sys.version_info[:2]


@pytest.fixture
def opted_out(monkeypatch):
    monkeypatch.delenv("ANSIBLE_ACCEL_BYTECODE", raising=False)
    monkeypatch.setattr(bytecode_path, "_opted_in_by_config", False)


@pytest.fixture
def build(monkeypatch, tmp_path, cache_dir, opted_out):
    """``build(module, task_vars)``: the payload's entries {name: data} as modify_module makes
    them, with an AnsiBallZ cache of its own each time."""
    from ansible import constants as C
    from ansible.executor import module_common
    from ansible.parsing.dataloader import DataLoader
    from ansible.plugins.loader import init_plugin_loader, module_loader
    from ansible.template import Templar

    if not any(type(finder).__name__ == "_AnsibleCollectionFinder" for finder in sys.meta_path):
        init_plugin_loader()  # once per process, as every ansible CLI does (it warns when redone)
    count = iter(range(1000))

    def run(module: str, task_vars: dict) -> dict[str, bytes]:
        local_tmp = tmp_path / f"local{next(count)}"
        local_tmp.mkdir(mode=0o700)
        monkeypatch.setattr(C, "DEFAULT_LOCAL_TMP", str(local_tmp), raising=False)
        built = module_common.modify_module(
            module_name=module, module_path=module_loader.find_plugin(module), module_args={},
            templar=Templar(loader=DataLoader(), variables=task_vars), task_vars=task_vars,
            module_compression="ZIP_DEFLATED",
        )  # fmt: skip
        data = base64.b64decode(re.search(rb"zip_data='([^']*)'", built.b_module_data).group(1))
        archive = zipfile.ZipFile(io.BytesIO(data))
        return {info.filename: archive.read(info) for info in archive.infolist()}

    return run


def counts() -> dict:
    info = ansible_accel.status()["bytecode"]
    return {"native": info["native"], "fallback": dict(info["fallback"]), **info.get("events", {})}


def test_off_unless_opted_in(opted_out):
    report = ansible_accel.install()
    try:
        assert report["bytecode"]["active"] is False
        assert "ANSIBLE_ACCEL_BYTECODE=1" in report["bytecode"]["reason"]
        bytecode_path.opt_in()  # what the callback's bytecode option does
        assert ansible_accel.status()["bytecode"]["active"] is True
    finally:
        ansible_accel.uninstall()
        bytecode_path._opted_in_by_config = False


def test_needs_the_payload_path(monkeypatch, opted_out):
    monkeypatch.setenv("ANSIBLE_ACCEL_BYTECODE", "1")
    off = types.ModuleType("ansible_accel._integrations._off")
    off.plan = lambda: (_ for _ in ()).throw(_activation.Unavailable("off for this test"))
    monkeypatch.setitem(sys.modules, off.__name__, off)
    monkeypatch.setitem(_activation.PATH_MODULES, "payload", "_off")
    report = ansible_accel.install()
    try:
        assert report["bytecode"] == {"active": False, "reason": "needs the payload path, which is not active",
                                      "native": report["bytecode"]["native"], "fallback": report["bytecode"]["fallback"]}
    finally:
        ansible_accel.uninstall()


def test_a_payload_with_bytecode_is_the_same_payload_plus_a_pyc_per_py(build, monkeypatch):
    task_vars = {"ansible_python_interpreter": sys.executable, "ansible_connection": "local"}
    ansible_accel.install()
    try:
        without = build("ping", task_vars)
        monkeypatch.setenv("ANSIBLE_ACCEL_BYTECODE", "1")
        bytecode_path.opt_in()
        before = counts()
        with_bytecode = build("ping", task_vars)
        after = counts()
        again = build("ping", task_vars)  # another build: everything from the cache
        last = counts()
    finally:
        ansible_accel.uninstall()
        bytecode_path._opted_in_by_config = False
    sources = {name: data for name, data in with_bytecode.items() if not name.endswith(".pyc")}
    assert sources == without
    assert sorted(name for name in with_bytecode if name.endswith(".pyc")) == sorted(n + "c" for n in without if n.endswith(".py"))
    assert all(with_bytecode[n + "c"][:4] == bytecode.controller_compiler().magic for n in without if n.endswith(".py"))
    assert after["native"] == before["native"] + 1 and after["fallback"] == before["fallback"]
    choice = f"for the target's Python {OWN} (local interpreter)"
    assert after.get(choice, 0) == before.get(choice, 0) + 1
    assert after.get("compiled", 0) - before.get("compiled", 0) == len(without)  # the shim stands for one
    assert last.get("cache hits", 0) - after.get("cache hits", 0) == len(without) and again == with_bytecode


@pytest.mark.parametrize(
    ("task_vars", "choice"),
    [
        ({"ansible_python_interpreter": "{{ templated }}", "ansible_connection": "local"},
         "for the controller's Python {own} (target interpreter not known)"),
        ({"ansible_python_interpreter": "{{ ansible_playbook_python }}", "ansible_connection": "local",
          "ansible_playbook_python": sys.executable},
         "for the target's Python {own} (local interpreter)"),
        ({"ansible_python_interpreter": "{{ansible_playbook_python}}", "ansible_connection": "local"},
         "for the controller's Python {own} (target interpreter not known)"),
        ({"ansible_python_interpreter": "/usr/bin/python3", "ansible_connection": "ssh"},
         "for the controller's Python {own} (target's version not seen)"),
        ({"ansible_python_interpreter": "/usr/bin/python3", "ansible_connection": "ssh",
          "ansible_facts": {"python": {"executable": "/usr/bin/python3", "version": {"major": 3, "minor": 99}}}},
         "for the controller's Python {own} (no local Python 3.99)"),
        ({"ansible_python_interpreter": "/remote/python", "ansible_connection": "ssh",
          "ansible_facts": {"python": {"executable": "/remote/python", "version": {"major": sys.version_info[0],
                                                                                   "minor": sys.version_info[1]}}}},
         "for the target's Python {own} (from facts)"),
        ({"ansible_python_interpreter": "auto_silent", "ansible_connection": "local",
          "ansible_facts": {"discovered_interpreter_python": sys.executable}},
         "for the target's Python {own} (local interpreter)"),
    ],
    ids=["templated", "playbook-python", "playbook-python-unset", "remote-unseen", "remote-no-local-python", "remote-from-facts", "discovered"],
)  # fmt: skip
def test_the_version_comes_from_what_the_task_says(task_vars, choice, build, monkeypatch):
    monkeypatch.setenv("ANSIBLE_ACCEL_BYTECODE", "1")
    ansible_accel.install()
    try:
        before = counts()
        entries = build("ping", task_vars)
        after = counts()
    finally:
        ansible_accel.uninstall()
    choice = choice.format(own=OWN)
    assert after.get(choice, 0) == before.get(choice, 0) + 1, after
    assert entries["ansible/module_utils/basic.pyc"][:4] == bytecode.controller_compiler().magic


def test_another_local_interpreter_gets_its_own_bytecode(build, monkeypatch):
    others = [(v, interpreter(v)) for v in other_versions() if interpreter(v)]
    if not others:
        pytest.skip("no other reference Python here")
    version, python = others[0]
    monkeypatch.setenv("ANSIBLE_ACCEL_BYTECODE", "1")
    ansible_accel.install()
    try:
        entries = build("ping", {"ansible_python_interpreter": python, "ansible_connection": "local"})
        events = counts()
    finally:
        ansible_accel.uninstall()
    assert events.get(f"for the target's Python {version} (local interpreter)", 0) >= 1
    magic = bytecode.interpreter_compiler(python).magic
    assert magic != bytecode.controller_compiler().magic
    assert all(data[:4] == magic for name, data in entries.items() if name.endswith(".pyc"))
