"""The warm runner against a fresh interpreter, on real AnsiBallZ scripts: what a module sees,
what it prints, how it ends, and what a later module does not inherit."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _pyclient  # noqa: E402
from _runner_support import INTERPRETER, Runner, normalized  # noqa: E402

ENV = dict(os.environ)


def fresh(script_path: str, stdin: bool, env=None, cwd: str = "/tmp"):
    argv = [INTERPRETER] if stdin else [INTERPRETER, script_path]
    data = open(script_path, "rb").read() if stdin else b""
    done = subprocess.run(argv, input=data, capture_output=True, cwd=cwd, env=ENV if env is None else env)
    return done.returncode, done.stdout, done.stderr


def warm(runner, script_path: str, stdin: bool, env=None, cwd: str = "/tmp", **extra):
    argv = [INTERPRETER] if stdin else [INTERPRETER, script_path]
    data = open(script_path, "rb").read() if stdin else b""
    outcome = _pyclient.run(runner.socket, argv, ENV if env is None else env, stdin=data, cwd=cwd, **extra)
    assert outcome.refused is None, outcome.refused
    return outcome.returncode, outcome.stdout, outcome.stderr


def observed(stdout: bytes) -> dict:
    result = json.loads(normalized(stdout))["observed"]
    # Each process's own; and the process group and session are the runner's (docs/runner.md).
    for varying in ("pid", "random", "pgrp", "sid", "basic_refcount"):
        result.pop(varying)
    return result


def test_a_module_leads_no_process_group_or_session(runner, scripts):
    view = json.loads(warm(runner, scripts["observe"], False)[1])["observed"]
    assert view["pgrp"] != view["pid"] and view["sid"] != view["pid"]  # so os.setsid() works in it


@pytest.mark.parametrize("stdin", [False, True], ids=["script file", "pipelined"])
def test_a_module_sees_what_a_fresh_interpreter_shows_it(runner, scripts, stdin):
    rc, out, err = fresh(scripts["observe"], stdin)
    wrc, wout, werr = warm(runner, scripts["observe"], stdin)
    assert (wrc, werr) == (rc, err) == (0, b"")
    fresh_view, warm_view = observed(out), observed(wout)
    assert warm_view == fresh_view
    # the comparison covers what it claims to
    assert {"modules", "environ", "dispositions", "limits", "fds", "basic_file", "main_keys", "zip_importers"} <= set(warm_view)
    assert len(warm_view["zip_importers"]) > 5  # the payload's root and its package directories
    assert runner.fallbacks() == []


def test_the_preloaded_heap_becomes_immortal_once_enough_children_ran(runner, scripts):
    """On 3.12 and 3.13, once a runner has started IMMORTAL_AFTER children, a later child
    writes no reference count of what the runner preloaded (its pages stay shared);
    sys.getrefcount is the one way a module could tell.  Before that, and on other versions,
    the counts are ordinary ones."""
    from ansible_accel._runner_server import IMMORTAL_AFTER

    def count():
        return json.loads(warm(runner, scripts["observe"], False)[1])["observed"]["basic_refcount"]

    fresh_count = json.loads(fresh(scripts["observe"], False)[1])["observed"]["basic_refcount"]
    assert fresh_count < 1000
    assert count() < 1000
    for _ in range(IMMORTAL_AFTER - 1):
        assert warm(runner, scripts["ok"], False)[0] == 0
    if sys.version_info[:2] in ((3, 12), (3, 13)):
        assert count() == 2**32 - 1
    else:
        assert count() < 1000
    assert runner.fallbacks() == []


def test_pids_and_random_state_are_each_childs_own(runner, scripts):
    views = [json.loads(warm(runner, scripts["observe"], False)[1])["observed"] for _ in range(3)]
    assert len({v["pid"] for v in views}) == 3 and runner.pid not in {v["pid"] for v in views}
    assert len({v["random"] for v in views}) == 3


def test_environment_cwd_and_umask_are_the_requests(runner, scripts, tmp_path):
    env = dict(ENV, ACCEL_EXTRA="one two", PATH=ENV["PATH"] + ":/nowhere")
    _, out, _ = fresh(scripts["observe"], False, env=env, cwd=str(tmp_path))
    _, wout, _ = warm(runner, scripts["observe"], False, env=env, cwd=str(tmp_path), umask=0o027)
    view = json.loads(wout)["observed"]
    assert ["ACCEL_EXTRA", "one two"] in view["environ"]
    assert view["environ"] == json.loads(out)["observed"]["environ"]
    assert view["cwd"] == str(tmp_path) and view["umask"] == 0o027


def test_what_a_module_changes_no_later_module_sees(runner, scripts):
    before = observed(warm(runner, scripts["observe"], False)[1])
    changed = json.loads(warm(runner, scripts["observe_mutate"], False)[1])["observed"]
    assert changed["mutated_seen"] is True  # the module's own change, seen by itself
    after = observed(warm(runner, scripts["observe"], False)[1])
    assert after == before
    assert after["mutated_seen"] is False


@pytest.mark.parametrize("name", ["ok", "exit3", "segv", "term", "raise", "big"])
def test_output_and_exit_status_are_a_fresh_interpreters(runner, scripts, name):
    rc, out, err = fresh(scripts[name], False)
    wrc, wout, werr = warm(runner, scripts[name], False)
    assert wrc == rc
    assert normalized(wout) == normalized(out)
    assert normalized(werr) == normalized(err)
    if name == "big":
        assert len(wout) > 1 << 20 and werr == b"warning text"
    if name in ("segv", "term"):
        assert wrc == -int(name == "segv" and signal.SIGSEGV or signal.SIGTERM)


def test_a_payload_of_other_module_utils_runs_in_a_fresh_interpreter(runner, scripts, tmp_path):
    source = open(scripts["ok"], "rb").read()
    # The wrapper code differs (a comment): the runner must not run it on its preloaded modules.
    changed = tmp_path / "AnsiballZ_accel_behave.py"
    changed.write_bytes(source.replace(b"_ANSIBALLZ_WRAPPER = True", b"_ANSIBALLZ_WRAPPER = True  # changed", 1))
    rc, out, err = fresh(str(changed), False)
    wrc, wout, werr = warm(runner, str(changed), False)
    assert (wrc, normalized(wout), werr) == (rc, normalized(out), err) == (0, normalized(out), b"")
    assert runner.fallbacks() == ["not this controller's AnsiBallZ wrapper"]


def test_a_module_asked_for_tracebacks_runs_in_a_fresh_interpreter(runner, scripts, tmp_path):
    # Its captured call stacks would show the runner's frames below the script's own.
    source = open(scripts["raise"], "rb").read()
    assert b'_ansible_tracebacks_for\\": []' in source or b'_ansible_tracebacks_for": []' in source
    changed = tmp_path / "AnsiballZ_accel_behave.py"
    changed.write_bytes(source.replace(b'_ansible_tracebacks_for\\": []', b'_ansible_tracebacks_for\\": [\\"error\\"]')
                        .replace(b'_ansible_tracebacks_for": []', b'_ansible_tracebacks_for": ["error"]'))
    rc, out, err = fresh(str(changed), False)
    wrc, wout, werr = warm(runner, str(changed), False)
    assert (wrc, normalized(wout), normalized(werr)) == (rc, normalized(out), normalized(err))
    assert b"_runner_server" not in wout + werr
    assert runner.fallbacks() == ["tracebacks asked for (ANSIBLE_DISPLAY_TRACEBACK)"]


def test_a_pipelined_script_that_goes_fresh_still_gets_its_stdin(runner, scripts):
    source = open(scripts["ok"], "rb").read()
    changed = source.replace(b"_ANSIBALLZ_WRAPPER = True", b"_ANSIBALLZ_WRAPPER = True  # changed", 1)
    outcome = _pyclient.run(runner.socket, [INTERPRETER], ENV, stdin=changed, cwd="/tmp")
    assert outcome.returncode == 0 and b'"name": "ok"' in outcome.stdout
    assert runner.fallbacks() == ["not this controller's AnsiBallZ wrapper"]


@pytest.mark.parametrize("change, reason", [
    ({"argv0": "/usr/bin/python3-elsewhere"}, "another interpreter"),
    ({"LANG": "xx_XX.UTF-8"}, "start-up environment"),
    ({"PYTHONHASHSEED": "123"}, "start-up environment"),
    ({"argv": ["-O"]}, "interpreter options or arguments"),
])
def test_requests_it_cannot_serve_are_refused_before_anything_runs(runner, scripts, change, reason):
    env = dict(ENV)
    argv = [change.get("argv0", INTERPRETER), *change.get("argv", [scripts["ok"]])]
    env.update({k: v for k, v in change.items() if k.isupper()})
    outcome = _pyclient.run(runner.socket, argv, env, cwd="/tmp")
    assert outcome.refused is not None and outcome.refused.startswith(reason)
    assert outcome.pid is None and outcome.stdout == b""


def test_a_hundred_concurrent_modules(runner, scripts):
    results = [None] * 100

    def one(i):
        results[i] = warm(runner, scripts["ok"], i % 2 == 1)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(100)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert all(r is not None and r[0] == 0 and b'"name": "ok"' in r[1] for r in results)


def test_a_client_that_goes_away_takes_its_module_with_it(runner, scripts):
    conn_pid = {}

    def slow():
        conn_pid["outcome"] = None

    argv = [INTERPRETER, scripts["slow"]]
    message = _pyclient.encode_request([os.fsencode(a) for a in argv], [os.fsencode(f"{k}={v}") for k, v in ENV.items()],
                                       0o022, os.getpgrp())
    r, w = os.pipe()
    cwd = os.open("/tmp", os.O_PATH)
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(runner.socket)
    import array

    conn.sendmsg([message], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [r, w, w, cwd]))])
    for fd in (r, w, cwd):
        os.close(fd)
    assert conn.recv(1) == b"S"
    pid = int.from_bytes(conn.recv(4), "little", signed=True)
    os.kill(pid, 0)
    conn.close()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.02)
    else:
        pytest.fail("the module outlived its client")


def test_the_runner_ends_with_its_lifeline_and_removes_its_socket(rundir, scripts):
    started = Runner(rundir, open(scripts["ok"], "rb").read(), dict(ENV))
    assert started.process.poll() is None
    started.stop()
    assert started.process.returncode == 0
    assert not os.path.exists(started.socket)


def test_a_killed_runner_loses_no_module_and_runs_none_twice(rundir, scripts):
    started = Runner(rundir, open(scripts["ok"], "rb").read(), dict(ENV))
    result = {}

    def slow():
        result["outcome"] = _pyclient.run(started.socket, [INTERPRETER, scripts["slow"]], ENV, cwd="/tmp")

    thread = threading.Thread(target=slow)
    thread.start()
    time.sleep(1.5)
    started.process.kill()
    started.process.wait()
    thread.join(timeout=30)
    outcome = result["outcome"]
    assert outcome.pid is not None and outcome.status is None  # started, status never known
    assert b'"name": "slow"' in outcome.stdout  # the module itself ran to its end, once
    # a new request now cannot reach it: the client would run the module itself
    with pytest.raises(OSError):
        _pyclient.run(started.socket, [INTERPRETER, scripts["ok"]], ENV)
    started.stop()


def test_another_user_cannot_use_the_socket(runner):
    mode = os.stat(runner.socket).st_mode & 0o777
    assert mode == 0o600
    if os.getuid() != 0:
        pytest.skip("needs root to act as another user")
    pid = os.fork()
    if pid == 0:
        try:
            os.setgid(65534)
            os.setuid(65534)
            try:
                conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                conn.connect(runner.socket)
                os._exit(1)
            except PermissionError:
                os._exit(0)
        finally:
            os._exit(2)
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0


def test_a_runner_started_holding_its_lifelines_write_end_still_ends_with_it(rundir, scripts, monkeypatch):
    # Whatever starts a runner, a write end of its lifeline in the runner itself would keep it
    # alive for good: it closes every descriptor it was not meant to get.
    from ansible_accel import _runner_pool

    real = subprocess.Popen

    def leaky(*args, **kwargs):
        kwargs["pass_fds"] = (*kwargs["pass_fds"], _runner_pool._Pool.lifeline[1])
        return real(*args, **kwargs)

    monkeypatch.setattr(_runner_pool.subprocess, "Popen", leaky)
    started = Runner(rundir, open(scripts["ok"], "rb").read(), dict(ENV))
    monkeypatch.undo()
    assert warm(started, scripts["ok"], False)[0] == 0
    started.stop()
    assert started.process.returncode == 0
