"""The ``.pth`` hook of the module-side opt-in: an interpreter started without
``ANSIBLE_ACCEL_MODULE_SIDE=target`` imports nothing of the accelerator and sees the same
interpreter state as one whose site-packages lack the file; with it, only a finder is added
until the payload's ``basic`` is imported; a damaged install leaves every module as shipped."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from test_target_playbook import ENV, MODULE_RUNS, _differences, assert_native_counts, records, run_playbook  # noqa: E402

PTH = "ansible_accel_module_side.pth"
SITE = sysconfig.get_paths()["purelib"]
# What a start leaves: modules, finders, path importer cache, and the start's output.
STATE = (
    "import sys, json; print(json.dumps({'modules': list(sys.modules), 'meta_path': [type(f).__name__ for f in"
    " sys.meta_path], 'cache': list(sys.path_importer_cache), 'path': sys.path}))"
)


def _start(env_value: str | None, python: str = sys.executable) -> tuple[dict, str]:
    env = {k: v for k, v in os.environ.items() if k != ENV}
    if env_value is not None:
        env[ENV] = env_value
    done = subprocess.run([python, "-c", STATE], env=env, capture_output=True, text=True, timeout=60, check=True)
    return json.loads(done.stdout), done.stderr


def test_the_wheel_put_the_hook_in_site_packages_as_one_line():
    with open(os.path.join(SITE, PTH), encoding="utf-8") as handle:
        lines = handle.read().splitlines()
    assert len(lines) == 1 and lines[0].startswith("import os; ")


def test_a_start_without_the_variable_imports_nothing_of_the_accelerator():
    plain, err = _start(None)
    assert err == ""
    assert not [m for m in plain["modules"] if "accel" in m], plain["modules"]
    assert "_WatchForBasic" not in plain["meta_path"]
    # Other values (the runner paths' switch among them) leave the start as it is.
    for value in ("0", "off", "targets-not", ""):
        state, err = _start(value)
        assert err == "" and state == plain, value


def test_with_the_variable_a_start_only_gains_the_finder():
    plain, _ = _start(None)
    opted, err = _start("target")
    assert err == ""
    # First of the finders there were when site-packages were processed (a .pth processed after
    # the hook's, such as setuptools' distutils one, may put its own before it).
    assert opted["meta_path"].count("_WatchForBasic") == 1, opted["meta_path"]
    assert [f for f in opted["meta_path"] if f != "_WatchForBasic"] == plain["meta_path"]
    assert opted["modules"] == plain["modules"] and opted["cache"] == plain["cache"] and opted["path"] == plain["path"]
    record_form, err = _start("target:/nonexistent/counts")
    assert err == "" and record_form == opted


def _venv_with_accelerator_copy(root, damage) -> str:
    """A virtual environment whose site-packages hold the hook and a copy of the installed
    package, damaged by ``damage(package_dir)``; ansible-core and the rest come from this
    environment's site-packages, added after it by a path line.  Returns its interpreter."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True, timeout=120)
    python = os.path.join(root, "bin", "python")
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    shutil.copy(os.path.join(SITE, PTH), site)
    shutil.copytree(os.path.join(SITE, "ansible_accel"), os.path.join(site, "ansible_accel"),
                    ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
    with open(os.path.join(site, "zz_installed.pth"), "w", encoding="utf-8") as handle:
        handle.write(SITE + "\n")
    damage(os.path.join(site, "ansible_accel"))
    return python


def _remove(name):
    def damage(package):
        for found in os.listdir(package):
            if found == name or (name.endswith("*") and found.startswith(name[:-1])):
                os.remove(os.path.join(package, found))

    return damage


def _garble(name):
    def damage(package):
        with open(os.path.join(package, name), "w", encoding="utf-8") as handle:
            handle.write("def broken(:\n")

    return damage


def test_a_damaged_install_leaves_every_module_as_shipped(tmp_path):
    cases = {
        "intact": lambda package: None,
        "hook-garbled": _garble("_modside_target.py"),
        "switch-on-missing": _remove("_runner_modside.py"),
        "extension-missing": _remove("_native*"),
    }
    pythons = {label: _venv_with_accelerator_copy(tmp_path / f"venv-{label}", damage) for label, damage in cases.items()}
    for label, python in pythons.items():
        state, err = _start("target", python)
        assert err == "", (label, err)  # the hook's line never prints, whatever is broken
        assert ("_WatchForBasic" in state["meta_path"]) == (label not in ("hook-garbled",)), (label, state["meta_path"])

    plain, _ = run_playbook(tmp_path, "plain", None, interpreter=pythons["intact"])
    found = {}
    for label, python in pythons.items():
        record = tmp_path / f"{label}.jsonl"
        results, _ = run_playbook(tmp_path, label, {ENV: f"target:{record}"}, interpreter=python)
        assert results == plain, (label, "\n".join(_differences(plain, results)[:20]))
        found[label] = records(record)
    assert_native_counts(found["intact"], MODULE_RUNS)  # the copy itself works: the damage is what stops it
    assert found["hook-garbled"] == [] and found["switch-on-missing"] == []
    unused = [line.get("unused", "") for line in found["extension-missing"]]
    assert len(unused) == MODULE_RUNS and all(u.startswith("could not switch on: ") for u in unused), unused


def test_the_import_that_finds_basic_imported_goes_on_through_every_other_finder():
    """The finder leaves ``sys.meta_path`` while the import system iterates over it: the finder
    that followed it is still asked about that import (here a built-in module, which only the
    built-in importer finds)."""
    code = (
        "import sys, json, importlib.machinery as m\n"
        "names = [n for n in sys.builtin_module_names if n not in sys.modules and n != 'sys']\n"
        "fake = type(sys)('ansible.module_utils.basic'); fake.__spec__ = m.ModuleSpec(fake.__name__, None)\n"
        "fake.__spec__._initializing = False; sys.modules[fake.__name__] = fake\n"
        "before = [type(f).__name__ for f in sys.meta_path]\n"
        "module = __import__(names[0])\n"
        "print(json.dumps([module.__spec__.origin, before, [type(f).__name__ for f in sys.meta_path]]))\n"
    )
    env = dict(os.environ, **{ENV: "target"})
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    origin, before, after = json.loads(done.stdout)
    assert origin == "built-in", done.stdout
    assert "_WatchForBasic" in before and "_WatchForBasic" not in after, done.stdout
