"""The compile step and its cache: zipimport's compile, an unchecked hash-based header, nothing
for sources that fail or warn, one compile per (content, Python version) shared through a
private directory, never a stale or damaged answer; interpreters probed once."""

from __future__ import annotations

import hashlib
import importlib.util
import marshal
import os
import pathlib
import stat
import sys

import pytest

from ansible_accel import _bytecode as bytecode, _bytecode_compile as bytecode_compile

from .conftest import interpreter, other_versions

SOURCE = b"def answer():\r\n    return 42\r\n"


def test_compile_pyc_is_zipimports_compile_in_an_unchecked_hash_header():
    ok, pyc = bytecode_compile.compile_pyc(SOURCE)
    assert ok
    assert pyc[:4] == importlib.util.MAGIC_NUMBER
    assert int.from_bytes(pyc[4:8], "little") == 0b01  # hash-based, unchecked
    assert pyc[8:16] == importlib.util.source_hash(SOURCE)  # of the raw entry, as zipimport checks
    code = marshal.loads(pyc[16:])
    expected = compile(SOURCE.replace(b"\r\n", b"\n"), bytecode_compile.PLACEHOLDER_FILENAME, "exec", dont_inherit=True)
    assert marshal.dumps(code) == marshal.dumps(expected)


@pytest.mark.parametrize(
    ("source", "reason"),
    [(b"def f(:\n", "does not compile (SyntaxError)"), (b"x = 1\0\n", "does not compile (SyntaxError)"),
     (b'PATTERN = "\\d"\n', "warns when compiled"), (b"assert (1, 'never')\n", "warns when compiled")],
)  # fmt: skip
def test_sources_that_fail_or_warn_get_no_bytecode(source, reason):
    assert bytecode_compile.compile_pyc(source) == (False, reason)


def test_the_cache_compiles_once_per_content_and_version(tmp_path):
    compiler = bytecode.controller_compiler()
    first = bytecode.PycCache(str(tmp_path))
    assert first.disk
    answers = first.get_many(compiler, [SOURCE, SOURCE + b"# changed\n"])
    assert (first.hits, first.compiled) == (0, 2)
    assert first.get_many(compiler, [SOURCE]) == answers[:1] and first.hits == 1
    again = bytecode.PycCache(str(tmp_path))  # another worker or run: from the directory
    assert again.get_many(compiler, [SOURCE, SOURCE + b"# changed\n"]) == answers
    assert (again.hits, again.compiled) == (2, 0)
    digest = hashlib.sha256(SOURCE).hexdigest()
    stored = pathlib.Path(first._path(compiler, bytes.fromhex(digest)))
    assert stored.parent.parent.name == f"{compiler.magic.hex()}-{compiler.release}"
    assert stored.stat().st_mode & 0o777 == 0o600 and answers[0][1] in stored.read_bytes()
    assert not [p for p in tmp_path.rglob(".tmp-*")]  # written whole, renamed into place


def test_a_damaged_or_misplaced_cache_file_is_never_served(tmp_path):
    compiler = bytecode.controller_compiler()
    cache = bytecode.PycCache(str(tmp_path))
    cache.get_many(compiler, [SOURCE, b"x = 2\n"])
    stored = pathlib.Path(cache._path(compiler, hashlib.sha256(SOURCE).digest()))
    other = pathlib.Path(cache._path(compiler, hashlib.sha256(b"x = 2\n").digest()))
    # another source's answer under this name, then a truncated file: both recompiled
    stored.write_bytes(other.read_bytes())
    fresh = bytecode.PycCache(str(tmp_path))
    assert fresh.get_many(compiler, [SOURCE]) == [bytecode_compile.compile_pyc(SOURCE)] and fresh.compiled == 1
    stored.write_bytes(stored.read_bytes()[:30])
    fresh = bytecode.PycCache(str(tmp_path))
    assert fresh.get_many(compiler, [SOURCE]) == [bytecode_compile.compile_pyc(SOURCE)] and fresh.compiled == 1


def test_a_directory_others_may_write_is_not_used(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    cache = bytecode.PycCache(str(shared))
    assert not cache.disk
    assert cache.get_many(bytecode.controller_compiler(), [SOURCE]) == [bytecode_compile.compile_pyc(SOURCE)]
    assert list(shared.iterdir()) == []
    created = bytecode.PycCache(str(tmp_path / "new" / "dir"))
    assert created.disk and stat.S_IMODE(os.stat(tmp_path / "new" / "dir").st_mode) == 0o700


def test_interpreters_are_probed_once_and_compile_through_a_server(tmp_path):
    others = [interpreter(v) for v in other_versions() if interpreter(v)]
    if not others:
        pytest.skip("no other reference Python here")
    cache = bytecode.PycCache(str(tmp_path))
    bytecode._compilers.clear()
    compiler = bytecode.interpreter_compiler(others[0], cache)
    assert isinstance(compiler, bytecode.ServerCompiler) and compiler.magic != bytecode.controller_compiler().magic
    assert list((tmp_path / "interpreters").iterdir())  # remembered with the file's identity
    bytecode._compilers.clear()
    assert bytecode.interpreter_compiler(others[0], cache).magic == compiler.magic  # from the record
    (ok, pyc), (failed, reason) = compiler.compile_many([SOURCE, b"def f(:\n"])
    assert ok and pyc[:4] == compiler.magic and (failed, reason) == (False, "does not compile (SyntaxError)")
    compiler.close()


def test_what_is_not_a_python_gives_no_compiler(tmp_path):
    script = tmp_path / "python"
    script.write_text("#!/bin/sh\necho not python\n")
    script.chmod(0o755)
    assert bytecode.interpreter_compiler(str(script)) is None
    assert bytecode.interpreter_compiler(str(tmp_path / "missing")) is None
    assert bytecode.interpreter_compiler("python3") is None  # not an absolute path
    assert bytecode.interpreter_compiler(sys.executable) is bytecode.controller_compiler()
