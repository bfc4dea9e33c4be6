"""The host-side Python client with the real runner, on real AnsiBallZ scripts: a module run
through ``PYTHON -I -S _runner_remote_client.py SOCKET PYTHON [SCRIPT]`` sees, prints and ends as
in a fresh interpreter, and the runner (not a fallback) ran it; PYTHON this environment's
interpreter and the older ones the ansible-core under test supports on targets, which run the
client, the runner and the module as on a host (3.8 from 2.19's environment, 3.9 and 3.10 from
3.12's; ANSIBLE_ACCEL_TESTS_ALL_INTERPRETERS=1: each from every environment that supports it),
and 3.14 and 3.15 where they are installed, from each environment whose ansible-core supports
them (skipped where they are not)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "runner"))
import _runner_support
import ansible_accel
from _older import missing_newer, newer_interpreters, older_interpreters
from _runner_support import BIN, INTERPRETER, Runner, build_scripts, normalized

CLIENT = os.path.join(os.path.dirname(ansible_accel.__file__), "_runner_remote_client.py")
ENV = dict(os.environ)


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, str]:
    return build_scripts(tmp_path_factory.mktemp("scripts"))


@pytest.fixture(params=[INTERPRETER, *older_interpreters(home_only=True), *newer_interpreters()], ids=os.path.basename)
def python(request) -> str:
    missing = missing_newer(request.param)
    if missing:
        pytest.skip(missing)
    return request.param


@pytest.fixture
def scripts(built, python) -> dict[str, str]:
    """The scripts (the same on every interpreter: ``accel_observe`` runs on 3.8 and later)."""
    return built


@pytest.fixture
def runner(scripts, python, monkeypatch):
    rundir = tempfile.mkdtemp(prefix="aar-")  # short: the socket's path must fit sun_path
    os.chmod(rundir, 0o700)
    with open(scripts["observe"], "rb") as handle, monkeypatch.context() as patch:
        patch.setattr(_runner_support, "INTERPRETER", python)  # the interpreter Runner starts the runner with
        started = Runner(rundir, handle.read(), ENV)
    started.python = python
    yield started
    started.stop()
    shutil.rmtree(rundir, ignore_errors=True)


def _run(argv, script_path, stdin: bool):
    data = b""
    if stdin:
        with open(script_path, "rb") as handle:
            data = handle.read()
    done = subprocess.run([*argv, *([] if stdin else [script_path])], input=data, capture_output=True, cwd="/tmp",
                          env=ENV, timeout=120, check=False)
    return done.returncode, done.stdout, done.stderr


def fresh(script_path, stdin, python=INTERPRETER):
    return _run([python], script_path, stdin)


def through_client(runner, script_path, stdin):
    return _run([runner.python, "-I", "-S", CLIENT, runner.socket, runner.python], script_path, stdin)


def observed(stdout: bytes) -> tuple[dict, dict]:
    """The module's view without what is each process's own, and that part apart."""
    result = json.loads(normalized(stdout))["observed"]
    own = {k: result.pop(k) for k in ("pid", "random", "pgrp", "sid", "basic_refcount")}
    return result, own


@pytest.mark.parametrize("stdin", [False, True], ids=["script file", "pipelined"])
def test_a_module_sees_what_a_fresh_interpreter_shows_it(runner, scripts, stdin):
    rc, out, err = fresh(scripts["observe"], stdin, runner.python)
    wrc, wout, werr = through_client(runner, scripts["observe"], stdin)
    assert (wrc, werr) == (rc, err) == (0, b""), (err, werr)
    (fresh_view, _), (warm_view, own) = observed(out), observed(wout)
    assert warm_view == fresh_view
    assert warm_view["executable"] == runner.python
    assert {"modules", "environ", "dispositions", "limits", "fds", "basic_file", "main_keys"} <= set(warm_view)
    # The runner forked it: its process group is the runner's, not the client's.
    assert own["pgrp"] == os.getpgid(runner.pid)
    assert runner.fallbacks() == []


@pytest.mark.parametrize("name", ["ping", "ok", "exit3", "term", "segv", "raise", "big"])
def test_output_and_exit_status_are_a_fresh_interpreters(runner, scripts, name):
    expected = fresh(scripts[name], False, runner.python)
    got = through_client(runner, scripts[name], False)
    assert (got[0], normalized(got[1]), normalized(got[2])) == (expected[0], normalized(expected[1]), normalized(expected[2]))
    assert runner.fallbacks() == []


def test_without_a_runner_the_module_runs_the_ordinary_way_once(built, tmp_path):
    scripts = built
    sock = str(tmp_path / "gone.sock")
    expected = fresh(scripts["ping"], True)
    got = _run([INTERPRETER, "-I", "-S", CLIENT, sock, INTERPRETER], scripts["ping"], True)
    assert (got[0], normalized(got[1]), got[2]) == (expected[0], normalized(expected[1]), expected[2])
    with open(sock + ".fallbacks") as handle:
        assert handle.read() == "runner not reachable: No such file or directory\n"


# A module whose compile shows warnings: an invalid escape sequence (a SyntaxWarning from Python
# 3.12 on) and ``return`` in ``finally`` (one from 3.14 on, PEP 765).
WARNING_MODULE = textwrap.dedent('''\
    #!/usr/bin/python
    from ansible.module_utils.basic import AnsibleModule


    def value():
        try:
            return 1
        finally:
            return 2


    PATTERN = "\\d+"


    def main():
        AnsibleModule(argument_spec=dict(name=dict(type="str"))).exit_json(changed=False, value=value(), pattern=PATTERN)


    if __name__ == "__main__":
        main()
    ''')


@pytest.fixture(scope="module")
def warning_script(tmp_path_factory) -> str:
    """The AnsiBallZ script of WARNING_MODULE, as this environment's ansible-playbook wrote it."""
    work = tmp_path_factory.mktemp("warning")
    (work / "library").mkdir()
    (work / "library" / "accel_compile_warning.py").write_text(WARNING_MODULE)
    (work / "play.yml").write_text("- hosts: localhost\n  gather_facts: false\n  tasks:\n"
                                   "    - accel_compile_warning: {name: one}\n")
    (work / "inventory").write_text(f"localhost ansible_connection=local ansible_python_interpreter={INTERPRETER}\n")
    env = dict(os.environ, ANSIBLE_LIBRARY=str(work / "library"), ANSIBLE_KEEP_REMOTE_FILES="1",
               ANSIBLE_REMOTE_TMP=str(work / "remote"), ANSIBLE_ACCEL="0", ANSIBLE_PIPELINING="0", ANSIBLE_NOCOLOR="1",
               ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_INVENTORY_UNPARSED_WARNING="0")
    env.pop("ANSIBLE_CALLBACKS_ENABLED", None)
    subprocess.run([os.path.join(BIN, "ansible-playbook"), "-i", str(work / "inventory"), str(work / "play.yml")],
                   cwd=work, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=600, check=True)
    found = [os.path.join(d, f) for d, _, files in os.walk(work / "remote") for f in files
             if f == "AnsiballZ_accel_compile_warning.py"]
    assert len(found) == 1, found
    return found[0]


def test_compile_warnings_are_a_fresh_interpreters(runner, warning_script):
    """A module's compile warnings are shown as a fresh interpreter shows them (as often as
    zipimport compiles it: twice on 3.12 to 3.14, once on 3.15), at every run: also once
    the runner keeps compiled code of the payload's modules (from a module's second run on)."""
    for _ in range(3):
        expected = fresh(warning_script, False, runner.python)
        got = through_client(runner, warning_script, False)
        assert (got[0], normalized(got[1]), normalized(got[2])) == (expected[0], normalized(expected[1]), normalized(expected[2]))
    if _version(runner.python) >= (3, 12):
        assert b"SyntaxWarning" in expected[2], expected
    assert runner.fallbacks() == []


def _version(python: str) -> tuple[int, int]:
    done = subprocess.run([python, "-c", "import sys; print(sys.version_info[0], sys.version_info[1])"],
                          capture_output=True, text=True, check=True)
    major, minor = done.stdout.split()
    return int(major), int(minor)
