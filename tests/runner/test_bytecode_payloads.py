"""Payloads that carry bytecode (the ``bytecode`` path) run in the warm runner as in a fresh
interpreter: the payload's shim sets zipimport up for them there too, so what a module sees of
its own and its imports' loading (paths, code file names, zipimport's loading function, the
``.pyc`` entries used), its output and its exit status are a fresh interpreter's, the first time
a payload comes and when it comes again."""

from __future__ import annotations

import base64
import io
import json
import os
import sys
import zipfile

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _runner_support import normalized  # noqa: E402
from test_server import fresh, observed, warm  # noqa: E402

SHIM = "ansible/__init__.pyc"


def _payload_span(source: bytes) -> tuple[int, int]:
    start = source.find(b"\nzip_data='", source.rfind(b'if __name__ == "__main__":')) + len(b"\nzip_data='")
    return start, source.find(b"'", start)


def _members(path: str) -> dict[str, bytes]:
    source = open(path, "rb").read()
    start, end = _payload_span(source)
    with zipfile.ZipFile(io.BytesIO(base64.b64decode(source[start:end]))) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def _with_members(path: str, out: str, change) -> str:
    """A copy of the script at ``path`` whose payload has its members changed by ``change``."""
    source = open(path, "rb").read()
    start, end = _payload_span(source)
    with zipfile.ZipFile(io.BytesIO(base64.b64decode(source[start:end]))) as archive:
        infos = [(info, archive.read(info)) for info in archive.infolist()]
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for info, data in infos:
            data = change(info.filename, data)
            if data is not None:
                archive.writestr(info, data)
    with open(out, "wb") as handle:
        handle.write(source[:start] + base64.b64encode(buffer.getvalue()) + source[end:])
    return out


def test_the_scripts_carry_bytecode(bytecode_scripts, scripts):
    members = _members(bytecode_scripts["observe"])
    assert SHIM in members and "ansible/module_utils/basic.pyc" in members
    assert not any(name.endswith(".pyc") for name in _members(scripts["observe"]))


@pytest.mark.parametrize("stdin", [False, True], ids=["script file", "pipelined"])
def test_a_module_of_a_payload_with_bytecode_sees_what_a_fresh_interpreter_shows_it(runner, bytecode_scripts, stdin):
    rc, out, err = fresh(bytecode_scripts["observe"], stdin)
    assert (rc, err) == (0, b"")
    fresh_view = observed(out)
    # what the fresh interpreter shows: the bytecode loaded, every path the source's
    assert fresh_view["bytecode"]["pyc_entries"] > 10
    assert fresh_view["bytecode"]["main_file"].endswith("/accel_observe.py")
    assert fresh_view["bytecode"]["main_code_file"] == fresh_view["bytecode"]["main_file"]
    assert fresh_view["bytecode"]["get_module_code"][0] == "_ansible_accel_bytecode_loads.<locals>._get_module_code"
    # the first child (it checks the payload), the second (it reports its code), the third
    for _ in range(3):
        wrc, wout, werr = warm(runner, bytecode_scripts["observe"], stdin)
        assert (wrc, werr) == (0, b"")
        assert observed(wout) == fresh_view
    assert runner.fallbacks() == []


@pytest.mark.parametrize("name", ["ok", "exit3", "raise", "segv"])
def test_output_and_exit_status_of_payloads_with_bytecode_are_a_fresh_interpreters(runner, bytecode_scripts, name):
    rc, out, err = fresh(bytecode_scripts[name], False)
    for _ in range(2):
        wrc, wout, werr = warm(runner, bytecode_scripts[name], False)
        assert (wrc, normalized(wout), normalized(werr)) == (rc, normalized(out), normalized(err))
    assert b".pyc" not in out + err and b"<ansible-accel bytecode>" not in out + err
    assert runner.fallbacks() == []


def test_a_module_without_bytecode_after_one_with_sees_no_trace_of_it(runner, bytecode_scripts, scripts):
    rc, out, _ = fresh(scripts["observe"], False)
    warm(runner, bytecode_scripts["observe"], False)
    wrc, wout, _ = warm(runner, scripts["observe"], False)
    assert (wrc, observed(wout)) == (rc, observed(out))
    assert json.loads(wout)["observed"]["bytecode"]["pyc_entries"] == 0


def test_bytecode_set_up_by_another_shim_runs_in_a_fresh_interpreter(runner, bytecode_scripts, tmp_path):
    plain = compile("", "<other>", "exec")
    import importlib.util
    import marshal

    def other_shim(name, data):
        return data[:16] + marshal.dumps(plain) if name == SHIM else data

    assert importlib.util.MAGIC_NUMBER == _members(bytecode_scripts["ok"])[SHIM][:4]
    changed = _with_members(bytecode_scripts["ok"], str(tmp_path / "AnsiballZ_accel_behave.py"), other_shim)
    rc, out, err = fresh(changed, False)
    wrc, wout, werr = warm(runner, changed, False)
    assert (wrc, normalized(wout), werr) == (rc, normalized(out), err)
    assert runner.fallbacks() == ["payload bytecode set up by another shim"]


def test_bytecode_without_its_set_up_runs_in_a_fresh_interpreter(runner, bytecode_scripts, tmp_path):
    changed = _with_members(bytecode_scripts["ok"], str(tmp_path / "AnsiballZ_accel_behave.py"),
                            lambda name, data: None if name == SHIM else data)
    rc, out, err = fresh(changed, False)
    wrc, wout, werr = warm(runner, changed, False)
    assert (wrc, normalized(wout), werr) == (rc, normalized(out), err)
    assert runner.fallbacks() == ["payload carries bytecode without its set-up"]


def test_bytecode_of_another_python_is_skipped_as_zipimport_skips_it(runner, bytecode_scripts, tmp_path):
    """Every ``.pyc`` with another magic number: zipimport loads the sources, here and fresh."""

    def other_magic(name, data):
        return b"\x00\x00" + data[2:] if name.endswith(".pyc") else data

    changed = _with_members(bytecode_scripts["observe"], str(tmp_path / "AnsiballZ_accel_observe.py"), other_magic)
    rc, out, err = fresh(changed, False)
    wrc, wout, werr = warm(runner, changed, False)
    assert (wrc, werr) == (rc, err) == (0, b"")
    assert observed(wout) == observed(out)
    assert observed(out)["bytecode"]["get_module_code"][0] == "_get_module_code"  # zipimport's own
    assert runner.fallbacks() == []
