"""The module-side paths: modules run by a warm runner validate their arguments, scrub their
no_log values (2.19-2.21) and mask registered secrets (2.22) natively (on the runner's preloaded
module_utils), with the results of the ordinary run: the same output, exit status and view of
the interpreter with the paths on, off, and in a fresh interpreter; with native counts,
reported to SOCKET.modside."""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _pyclient  # noqa: E402
import _runner_support  # noqa: E402
from _runner_support import BIN, HERE, INTERPRETER, Runner, normalized  # noqa: E402

from ansible_accel import _activation, _runner_modside, _runner_pool  # noqa: E402

# Each task carries a marker ("ms-...") by which its kept script is found again.
TASKS = {
    "observe": "accel_observe: {label: ms-observe}",
    "options": ("accel_modside: {name: ms-options, pass: ms-pw-one, count: '7', ratio: 0.5, flag: 'yes',"
                " mode: slow, items: 'a,b,c', legacy_name: old, nested: {user: u, secret: ms-nested-two},"
                " servers: [{host: h1, key: ms-key-three}, {host: h2}], removed: gone}"),
    "fallback": "accel_modside: {name: ms-fallback, size: 2K}",
    "type_error": "accel_modside: {name: ms-type-error, count: many, password: ms-pw-four}",
    "unsupported": "accel_modside: {name: ms-unsupported, bogus: 1, password: ms-pw-five}",
    "required_if": "accel_modside: {name: ms-required-if, mode: slow}",
    "exclusive": "accel_modside: {name: ms-exclusive, ratio: 1.5, size: 1M}",
    "sub_missing": "accel_modside: {name: ms-sub-missing, nested: {secret: ms-nested-six}}",
    "ping": "ping: {data: ms-ping}",
    "stat_unsupported": "stat: {path: /ms-nowhere, bogus_option: 1}",
    "uri_type_error": "uri: {url: 'http://ms-uri.invalid/', url_password: ms-uri-secret, timeout: soon}",
    "user_choices": "user: {name: ms-user, password: ms-user-secret, state: bogus}",
}
_CORE_MINOR = tuple(int(part) for part in (_activation.core_version() or "0.0").split(".")[:2])
if _CORE_MINOR >= (2, 22):
    # ansible.module_utils.secrets is 2.22's: secrets the module registers, masked by it.
    TASKS["masking"] = ("accel_modside_mask: {texts: ['ms-masking abcabcab x', 'k3y-one k3y-onek3y-one  spaced !',"
                        " 'nothing here', 'αβγ-secret-δ overlapping'], words: [abcab, bcabca, k3y-one, ' spaced ', x,"
                        " 'γ-secret-δ', 'secret-δ over'], placeholder: '##', repeat: 3}")
# One hash secret for fresh interpreters and both runners' children: results that hold sets of
# strings (2.22's _ansible_new_secrets) come out in one order.
ENV = dict(os.environ, ACCEL_MODSIDE_TOKEN="ms-env-token", PYTHONHASHSEED="0")

@pytest.fixture(scope="module")
def runner_script():
    """The installed runner program, which loads the module-side paths."""
    assert _runner_modside.loaded_by(_runner_pool.RUNNER_SCRIPT)
    return _runner_pool.RUNNER_SCRIPT


@pytest.fixture(scope="module")
def scripts(tmp_path_factory) -> dict[str, str]:
    """name -> the AnsiBallZ script ansible-core wrote for that task."""
    work = tmp_path_factory.mktemp("modside")
    keep = work / "remote"
    body = "\n".join(f"    - ignore_errors: true\n      {task}" for task in TASKS.values())
    (work / "play.yml").write_text("- hosts: localhost\n  gather_facts: false\n  tasks:\n" + body + "\n")
    (work / "inventory").write_text(f"localhost ansible_connection=local ansible_python_interpreter={INTERPRETER}\n")
    env = dict(ENV, ANSIBLE_LIBRARY=os.path.join(HERE, "library"), ANSIBLE_KEEP_REMOTE_FILES="1",
               ANSIBLE_REMOTE_TMP=str(keep), ANSIBLE_ACCEL="0", ANSIBLE_PIPELINING="0", ANSIBLE_NOCOLOR="1",
               ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_INVENTORY_UNPARSED_WARNING="0")
    env.pop("ANSIBLE_CALLBACKS_ENABLED", None)
    subprocess.run([os.path.join(BIN, "ansible-playbook"), "-i", str(work / "inventory"), str(work / "play.yml")],
                   cwd=work, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=300)
    found = {}
    for path in glob.glob(str(keep / "*" / "AnsiballZ_*.py")):
        data = open(path, "rb").read()
        for name, task in TASKS.items():
            marker = task.split("ms-", 1)[1].split(",")[0].split("}")[0].split("'")[0]
            if f"ms-{marker}".encode() in data:
                found[name] = path
    missing = set(TASKS) - set(found)
    assert not missing, f"no kept script for {sorted(missing)}"
    return found


def _start(tmp_path, name, runner_script, env, interpreter=INTERPRETER):
    rundir = tmp_path / name
    rundir.mkdir(mode=0o700)
    saved = _runner_pool.RUNNER_SCRIPT, _runner_support.INTERPRETER
    _runner_pool.RUNNER_SCRIPT, _runner_support.INTERPRETER = runner_script, interpreter
    try:
        with open(_observe_script, "rb") as handle:
            return Runner(str(rundir), handle.read(), env)
    finally:
        _runner_pool.RUNNER_SCRIPT, _runner_support.INTERPRETER = saved


_observe_script = ""


@pytest.fixture(scope="module")
def runners(tmp_path_factory, scripts, runner_script):
    """(paths on, paths off): runners for this interpreter."""
    global _observe_script
    _observe_script = scripts["observe"]
    where = tmp_path_factory.mktemp("runners")
    on = _start(where, "on", runner_script, ENV)
    off = _start(where, "off", runner_script, dict(ENV, ANSIBLE_ACCEL_MODULE_SIDE="0"))
    yield on, off
    on.stop()
    off.stop()


def fresh(script, interpreter=INTERPRETER):
    done = subprocess.run([interpreter, script], capture_output=True, cwd="/tmp", env=ENV)
    return done.returncode, done.stdout, done.stderr


def warm(runner, script, interpreter=INTERPRETER, env=None):
    outcome = _pyclient.run(runner.socket, [interpreter, script], ENV if env is None else env, cwd="/tmp")
    assert outcome.refused is None, outcome.refused
    return outcome.returncode, outcome.stdout, outcome.stderr


def records(runner) -> list[dict]:
    path = runner.socket + _runner_modside.RECORD_SUFFIX
    if not os.path.exists(path):
        return []
    with open(path) as handle:
        return [json.loads(line) for line in handle]


def comparable(name, outcome):
    rc, out, err = outcome
    out, err = normalized(out), normalized(err)
    if name == "observe":
        view = json.loads(out)["observed"]
        for varying in ("pid", "random", "pgrp", "sid", "basic_refcount"):
            view.pop(varying)
        return rc, view, err
    return rc, out, err


def test_module_runs_are_the_same_with_the_paths_on_off_and_fresh(runners, scripts, core_minor):
    on, off = runners
    reported = []
    for name in TASKS:
        # The runner's own tests compare warm runs with fresh ones; here a few, for the view of
        # the interpreter and a success and a failure of each kind of module.
        expected = comparable(name, warm(off, scripts[name]))
        if name in ("observe", "options", "type_error", "ping", "uri_type_error", "masking"):
            assert comparable(name, fresh(scripts[name])) == expected, name
        before = len(records(on))
        assert comparable(name, warm(on, scripts[name])) == expected, name
        new = records(on)[before:]
        assert len(new) == 1 and "paths" in new[0], (name, new)
        reported.append((name, new[0]["paths"]))
    assert records(off) == []
    assert on.fallbacks() == off.fallbacks() == []
    for name, paths in reported:
        # Every module validated its arguments once, natively.
        assert paths["argspec"]["native"] == 1 and paths["argspec"]["fallback"] == {}, (name, paths)
        if core_minor < (2, 22):
            assert paths["no_log"]["native"] >= 1 and paths["no_log"]["fallback"] == {}, (name, paths)
            assert paths["masking"] == {"native": 0, "fallback": {}}, (name, paths)
        else:  # 2.22 masks instead, and the no_log path is off there
            assert paths["no_log"]["native"] == 0, (name, paths)
            assert paths["masking"]["fallback"] == {}, (name, paths)
            if name in ("options", "ping", "masking"):
                # AnsibleModule masks what it logs (its invocation); the masking module more.
                assert paths["masking"]["native"] >= (1 + 2 * 4 + 4 if name == "masking" else 1), (name, paths)
    # The outputs compared hold the validation errors and scrubbed values they are about (2.22
    # leaves the no_log values to the controller's masking: the module names them to it).
    out = normalized(warm(on, scripts["type_error"])[1])
    assert b"many" in out and (b"ms-pw-four" not in out) == (core_minor < (2, 22))
    out = normalized(warm(on, scripts["options"])[1])
    if core_minor < (2, 22):
        assert b"value ms-nested-two" not in out and b"value ******** and again" in out
    else:
        assert b"_ansible_new_secrets" in out
    assert b"bogus_option" in normalized(warm(on, scripts["stat_unsupported"])[1])
    if core_minor >= (2, 22):
        result = json.loads(normalized(warm(on, scripts["masking"])[1]))
        assert result["masked"][0] == "ms-masking ## ##" * 3, result["masked"]
        assert "k3y-one" not in "".join(result["masked"] + result["plain"]) and "$REDACTED$" in result["plain"][1]
        assert result["masked"][2] == "nothing here" * 3


def test_status_adds_up_what_the_modules_reported(runners, scripts, runner_script, core_minor):
    on, _off = runners
    for _ in range(2):
        warm(on, scripts["options"])
    total = _runner_modside.status(on.rundir, True, runner_script)
    lines = records(on)
    assert total["active"] is True and total["reason"] is None
    assert total["modules"] == len(lines) >= 2 and total["fallback"] == {}
    assert total["argspec"]["native"] == sum(r["paths"]["argspec"]["native"] for r in lines) >= 2
    assert total["no_log"]["native"] == sum(r["paths"]["no_log"]["native"] for r in lines)
    assert (total["no_log"]["native"] > 0) == (core_minor < (2, 22))
    assert total["masking"]["native"] == sum(r["paths"]["masking"]["native"] for r in lines)
    assert (total["masking"]["native"] > 0) == (core_minor >= (2, 22))


def test_the_switch_and_the_runner_path_say_why_they_are_off(tmp_path, monkeypatch, runner_script):
    monkeypatch.setenv(_runner_modside.ENV, "off")
    assert _runner_modside.status(None, True, runner_script)["reason"] == f"switched off by {_runner_modside.ENV}=off"
    monkeypatch.delenv(_runner_modside.ENV)
    assert _runner_modside.status(None, False, runner_script)["reason"] == "the runner path is off"
    plain = tmp_path / "runner.py"
    plain.write_text("print('a runner that does not load them')\n")
    assert _runner_modside.status(None, True, str(plain))["reason"] == "the runner does not load the module-side paths"
    assert _activation.status()["module_side"]["active"] is False  # not installed here


def test_records_are_added_up_by_reason(tmp_path):
    (tmp_path / "a.modside").write_text(
        '{"unused": "ansible-accel not importable by this interpreter"}\n'
        '{"paths": {"argspec": {"native": 2, "fallback": {"x": 1}}, "no_log": {"native": 3, "fallback": {},'
        ' "events": {"e": 4}}}}\nnot json\n')
    (tmp_path / "b.modside").write_text('{"unused": "ansible-accel not importable by this interpreter"}\n')
    (tmp_path / "c.fallbacks").write_text('{"paths": {"argspec": {"native": 100}}}\n')
    total = _runner_modside.status(str(tmp_path), True)
    assert total["modules"] == 3
    assert total["fallback"] == {"ansible-accel not importable by this interpreter": 2}
    assert total["argspec"] == {"native": 2, "fallback": {"x": 1}}
    assert total["no_log"] == {"native": 3, "fallback": {}, "events": {"e": 4}}


def _interpreter_without_accel() -> str | None:
    base = getattr(sys, "_base_executable", None)
    if not base or not os.path.isabs(base) or base == INTERPRETER:
        return None
    probe = subprocess.run([base, "-c", "import importlib.util as u; print(u.find_spec('ansible_accel') is None)"],
                           capture_output=True, text=True)
    return base if probe.stdout.strip() == "True" else None


def test_an_interpreter_without_ansible_accel_runs_modules_as_shipped(tmp_path, scripts, runner_script):
    other = _interpreter_without_accel()
    if other is None:
        pytest.skip("no interpreter without ansible-accel here")
    global _observe_script
    _observe_script = scripts["observe"]
    runner = _start(tmp_path, "other", runner_script, ENV, interpreter=other)
    try:
        for name in ("options", "type_error", "ping"):
            assert comparable(name, warm(runner, scripts[name], interpreter=other)) == \
                comparable(name, fresh(scripts[name], interpreter=other)), name
        assert records(runner) == [{"unused": "ansible-accel not importable by this interpreter"}] * 3
    finally:
        runner.stop()


def test_the_runner_program_loads_the_module_side_paths():
    assert _runner_modside.loaded_by(_runner_pool.RUNNER_SCRIPT)
