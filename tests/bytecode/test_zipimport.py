"""zipimport with the payload's bytecode, under each reference Python: everything a module can
see of where its code came from (``__file__``, ``__cached__``, specs, ``co_filename``,
tracebacks, warnings, source lines, compile errors and warnings) is what it is without
bytecode; the bytecode is really loaded where the Python matches, and ignored (sources run)
where it does not, or where it would differ from a compile of the source (``-O``, no column
positions)."""

from __future__ import annotations

import json
import os
import pathlib
import shutil

import pytest

from ansible_accel import _bytecode as bytecode

from .conftest import HERE, VERSIONS, interpreter, other_versions, run_python, write_zip

HELPER = b'''\
import warnings


def fail():
    return _inner(lambda: [x for x in (1,)])


def _inner(make):
    make()
    raise ValueError("from helper")


def warn():
    warnings.warn("helper warns", UserWarning)


class Thing:
    def method(self):
        return [y for y in (1,)]


def code_objects():
    top = [fail.__code__, _inner.__code__, warn.__code__, Thing.method.__code__]
    return top + [c for code in top for c in code.co_consts if hasattr(c, "co_filename")]
'''

MAIN = b'''\
import sys
import traceback

from ansible.module_utils import helper


def main():
    try:
        helper.fail()
    except ValueError:
        trace = traceback.format_exc()
    raise SystemExit({"file": __file__, "cached": __cached__, "name": __name__, "trace": trace,
                      "stack": traceback.format_stack()[-1]})


if __name__ == "__main__":
    main()
'''

SOURCES = [
    ("ansible/__init__.py", b'from pkgutil import extend_path\n__path__=extend_path(__path__,__name__)\n'
                            b'__version__="2.99.0"\n__author__="Ansible Project"\n'),
    ("ansible/module_utils/__init__.py", b"from pkgutil import extend_path\n__path__=extend_path(__path__,__name__)\n"),
    ("ansible/module_utils/helper.py", HELPER),
    ("ansible/module_utils/escapes.py", b'PATTERN = "\\d+"\n'),  # an invalid escape: warns when compiled
    ("ansible/module_utils/broken.py", b"def oops(:\n    pass\n"),
    ("ansible/modules/__init__.py", b""),
    ("ansible/modules/main_mod.py", MAIN.replace(b"\n", b"\r\n")),  # zipimport normalises line ends
]  # fmt: skip
COMPILED_WITH_BYTECODE = ["ansible/__init__.py", "ansible/module_utils/broken.py", "ansible/module_utils/escapes.py"]


def _probe(python: str, archive, entries, *flags: str, env=None) -> dict:
    write_zip(archive, entries)
    done = run_python(python, *flags, str(HERE / "probe_zip.py"), str(archive), env=env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _observed_alike(with_bytecode: dict, without: dict) -> None:
    shim_active = with_bytecode.pop("__bytecode_shim_active__")
    compiled = with_bytecode.pop("__compiled_from_source__")
    without.pop("__bytecode_shim_active__"), without.pop("__compiled_from_source__")
    assert with_bytecode == without
    return shim_active, compiled


def _payload(compiler, cache_dir) -> list[tuple[str, bytes]]:
    result = bytecode.payload_bytecode(SOURCES, compiler, bytecode.PycCache(str(cache_dir)))
    assert result is not None
    assert result.left_as_source == {"warns when compiled": 1, "does not compile (SyntaxError)": 1}
    assert [name for name, _ in result.entries] == [n + "c" for n, _ in SOURCES if n + "c" not in
                                                     ("ansible/module_utils/escapes.pyc", "ansible/module_utils/broken.pyc")]
    return SOURCES + result.entries


@pytest.mark.parametrize("version", VERSIONS)
def test_bytecode_is_loaded_and_looks_like_the_source(version, tmp_path, cache_dir):
    python = interpreter(version)
    if python is None:
        pytest.skip(f"no Python {version} environment here")
    compiler = bytecode.interpreter_compiler(python, bytecode.PycCache(str(cache_dir)))
    assert compiler is not None and compiler.version == version
    archive = tmp_path / "ansible_main_mod_payload.zip"
    without = _probe(python, archive, SOURCES)
    with_bytecode = _probe(python, archive, _payload(compiler, cache_dir))
    assert "helper.py" in without["traceback"] and str(archive) in without["traceback"]
    assert 'raise ValueError("from helper")' in without["traceback"]
    assert without["main"]["file"] == f"{archive}/ansible/modules/main_mod.py"
    assert without["__compiled_from_source__"] == sorted(name for name, _ in SOURCES)
    shim_active, compiled = _observed_alike(with_bytecode, without)
    assert shim_active
    assert compiled == COMPILED_WITH_BYTECODE  # the stub under the shim, and the two left as source


@pytest.mark.parametrize("run_by", other_versions())
def test_another_python_runs_the_sources(run_by, tmp_path, cache_dir):
    """Bytecode for this Python, run by the other two."""
    python = interpreter(run_by)
    if python is None:
        pytest.skip(f"no Python {run_by} environment here")
    compiler = bytecode.controller_compiler()
    archive = tmp_path / "ansible_main_mod_payload.zip"
    without = _probe(python, archive, SOURCES)
    with_bytecode = _probe(python, archive, _payload(compiler, cache_dir))
    shim_active, compiled = _observed_alike(with_bytecode, without)
    assert not shim_active
    assert compiled == sorted(name for name, _ in SOURCES)


@pytest.mark.parametrize(("flags", "env"), [(["-O"], {}), ([], {"PYTHONNODEBUGRANGES": "1"})], ids=["-O", "no-debug-ranges"])
def test_a_target_that_compiles_differently_runs_the_sources(flags, env, tmp_path, cache_dir):
    from ansible_accel._bytecode import controller_compiler
    import sys

    archive = tmp_path / "ansible_main_mod_payload.zip"
    without = _probe(sys.executable, archive, SOURCES, *flags, env=env)
    with_bytecode = _probe(sys.executable, archive, _payload(controller_compiler(), cache_dir), *flags, env=env)
    shim_active, compiled = _observed_alike(with_bytecode, without)
    assert not shim_active  # the shim ran, and dropped the archive's .pyc entries
    assert compiled == sorted(name for name, _ in SOURCES)


def test_a_target_that_checks_every_pyc_still_loads_the_bytecode(tmp_path, cache_dir):
    """The headers say "unchecked", but each holds its source's hash: a target told to check
    every hash-based pyc finds them equal and loads the bytecode."""
    from ansible_accel._bytecode import controller_compiler
    import sys

    archive = tmp_path / "ansible_main_mod_payload.zip"
    flags = ("--check-hash-based-pycs", "always")
    without = _probe(sys.executable, archive, SOURCES, *flags)
    with_bytecode = _probe(sys.executable, archive, _payload(controller_compiler(), cache_dir), *flags)
    shim_active, compiled = _observed_alike(with_bytecode, without)
    assert shim_active and compiled == COMPILED_WITH_BYTECODE


@pytest.mark.parametrize("version", ["3.8", "3.9", "3.10"])
def test_older_target_pythons_found_here(version, tmp_path, cache_dir):
    """Targets older than the controller (ansible-core 2.19 to 2.22 run modules on 3.8+), when
    this machine has them: zipimport's older loader (``load_module`` before 3.10) too."""
    python = _local_python(version)
    compiler = bytecode.interpreter_compiler(python, bytecode.PycCache(str(cache_dir))) if python else None
    if compiler is None or compiler.version != version:
        pytest.skip(f"no Python {version} on this machine")
    archive = tmp_path / "ansible_main_mod_payload.zip"
    without = _probe(python, archive, SOURCES)
    with_bytecode = _probe(python, archive, _payload(compiler, cache_dir))
    shim_active, compiled = _observed_alike(with_bytecode, without)
    assert shim_active and compiled == COMPILED_WITH_BYTECODE


def _local_python(version: str) -> str | None:
    """A Python ``version`` on this machine: pyenv's (whose shims only run activated versions),
    else one on PATH."""
    root = pathlib.Path(os.environ.get("PYENV_ROOT") or pathlib.Path.home() / ".pyenv") / "versions"
    for candidate in sorted(root.glob(f"{version}.*/bin/python{version}"), reverse=True):
        return str(candidate)
    return shutil.which(f"python{version}")
