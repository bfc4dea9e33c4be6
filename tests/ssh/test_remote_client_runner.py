"""The host-side Python client with the real runner, on real AnsiBallZ scripts: a module run
through ``PYTHON -I -S _runner_remote_client.py SOCKET PYTHON [SCRIPT]`` sees, prints and ends as
in a fresh interpreter, and the runner (not a fallback) ran it; PYTHON this environment's
interpreter and the older ones the ansible-core under test supports on targets, which run the
client, the runner and the module as on a host (3.8 from 2.19's environment, 3.9 and 3.10 from
3.12's; ANSIBLE_ACCEL_TESTS_ALL_INTERPRETERS=1: each from every environment that supports it)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "runner"))
import _runner_support
import ansible_accel
from _older import older_interpreters
from _runner_support import INTERPRETER, Runner, build_scripts, normalized

CLIENT = os.path.join(os.path.dirname(ansible_accel.__file__), "_runner_remote_client.py")
ENV = dict(os.environ)


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, str]:
    return build_scripts(tmp_path_factory.mktemp("scripts"))


@pytest.fixture(params=[INTERPRETER, *older_interpreters(home_only=True)], ids=os.path.basename)
def python(request) -> str:
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
