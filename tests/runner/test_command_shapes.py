"""Which commands the runner path takes, and how the module runs it leaves to the ordinary way
are counted: commands that run no module (``chmod``, ``rm`` of the temporary files) are not."""

from __future__ import annotations

import shlex

import pytest

from ansible_accel._integrations import runner

PY = "/usr/bin/python3.12"
TMP = "/root/.ansible/tmp/ansible-tmp-1-2-3"


def sh(inner: str) -> str:
    return f"/bin/sh -c {shlex.quote(inner)}"


@pytest.mark.parametrize("inner, expected", [
    (f"{PY} {TMP}/AnsiballZ_ping.py && sleep 0", "runs"),
    (f"{PY} && sleep 0", "runs"),
    (f"LANG=C.UTF-8 {PY} {TMP}/AnsiballZ_ping.py", "runs"),
    (f"chmod u+rwx {TMP}/ {TMP}/AnsiballZ_command.py {TMP}/async_wrapper.py && sleep 0", None),
    (f"rm -f -r {TMP}/ > /dev/null 2>&1 && sleep 0", None),
    (f"( umask 77 && mkdir -p \"` echo {TMP} `\" ) && sleep 0", None),
    (f"ANSIBLE_ASYNC_DIR='~/.ansible_async' {PY} {TMP}/async_wrapper.py j1 30 false {TMP}/AnsiballZ_command.py {PY}"
     " && sleep 0", runner.ASYNC),
    (f"{PY} {TMP}/AnsiballZ_ping.py {TMP}/args && sleep 0", runner.OTHER_SHAPE),
    (f"sudo -H -S -n -u root /bin/sh -c {shlex.quote(f'echo BECOME-SUCCESS-x ; {PY} {TMP}/AnsiballZ_ping.py')}"
     " && sleep 0", runner.OTHER_SHAPE),
])
def test_command_shapes(inner, expected):
    cmd = sh(inner)
    if expected == "runs":
        assert runner.parse_module_command(cmd) is not None
    else:
        assert runner.parse_module_command(cmd) is None
        assert runner.other_module_run(cmd, None) == expected


def test_a_pipelined_module_of_another_shape_is_a_module_run():
    payload = b"#!/usr/bin/python3\n_ANSIBALLZ_WRAPPER = True\n"
    assert runner.other_module_run(sh(f"{PY} -X dev"), payload) == runner.OTHER_SHAPE
    assert runner.other_module_run(sh(f"{PY} -X dev"), b"print(1)") is None


def test_unsplittable_command_is_no_module_run():
    assert runner.other_module_run("/bin/sh -c 'unterminated", None) is None


_ASYNC = f"{TMP}/async_wrapper.py j1 30 false {TMP}/AnsiballZ_command.py {PY} {TMP}/AnsiballZ_command.py"


@pytest.mark.parametrize("inner, taken", [
    (f"ANSIBLE_ASYNC_DIR='~/.ansible_async' {PY} {_ASYNC} && sleep 0", True),
    (f"{PY} {_ASYNC}", True),
    (f"{PY} {_ASYNC} {TMP}/args", True),  # an old-style module's arguments file
    (f"{PY} {_ASYNC} {TMP}/args extra", False),
    (f"{PY} {TMP}/async_wrapper.py j1 30 false {TMP}/AnsiballZ_command.py {PY} {TMP}/AnsiballZ_other.py", False),
    (f"{PY} {TMP}/async_wrapper.py j1 30 false {TMP}/AnsiballZ_command.py /usr/bin/python3 {TMP}/AnsiballZ_command.py", False),
    (f"{PY} {TMP}/async_wrapper.py j1 3x false {TMP}/AnsiballZ_command.py {PY} {TMP}/AnsiballZ_command.py", False),
    (f"{PY} {TMP}/async_wrapper.py j1 30 maybe {TMP}/AnsiballZ_command.py {PY} {TMP}/AnsiballZ_command.py", False),
    (f"{PY} {TMP}/async_wrapper.py j1 30 false /elsewhere/AnsiballZ_command.py {PY} /elsewhere/AnsiballZ_command.py", False),
    (f"{PY} {TMP}/other_wrapper.py j1 30 false {TMP}/AnsiballZ_command.py {PY} {TMP}/AnsiballZ_command.py", False),
    # ansible-core 2.19's shape: MODULE ARGS_FILE|_ [-preserve_tmp]
    (f"{PY} {TMP}/async_wrapper.py j1 30 {TMP}/AnsiballZ_command.py _", True),
    (f"{PY} {TMP}/async_wrapper.py j1 30 {TMP}/AnsiballZ_command.py _ -preserve_tmp", True),
    (f"{PY} {TMP}/async_wrapper.py j1 30 {TMP}/AnsiballZ_command.py {TMP}/args", True),
    (f"{PY} {TMP}/async_wrapper.py j1 30 {TMP}/AnsiballZ_command.py /elsewhere/args", False),
    (f"{PY} {TMP}/async_wrapper.py j1 30 {TMP}/AnsiballZ_command.py _ -other", False),
    (f"{PY} {TMP}/async_wrapper.py j1 30 /elsewhere/AnsiballZ_command.py _", False),
    (f"{PY} {TMP}/async_wrapper.py j1 3x {TMP}/AnsiballZ_command.py _", False),
    (f"{PY} async_wrapper.py j1 30 AnsiballZ_command.py _", False),
])
def test_async_starts(inner, taken):
    """ansible-core's start of an async task, exactly, is taken with its arguments; every other
    shape is not."""
    parsed = runner.parse_async_command(sh(inner))
    assert (parsed is not None) is taken
    if taken:
        assignments, interpreter, script, args, suffix = parsed
        assert interpreter == PY and script == f"{TMP}/async_wrapper.py" and args[:2] == ["j1", "30"]
        words = [interpreter, script, *args]
        assert runner._rewrite(sh(inner), assignments, words, suffix) == sh(inner)  # quoting kept as ansible-core's
    assert runner.parse_async_command(sh(inner), b"on stdin") is None
