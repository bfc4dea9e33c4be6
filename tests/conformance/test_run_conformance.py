"""The conformance runner's own logic: how it judges two runs, sorts tests into
ansible-test's contexts and records outcomes.  (The runner itself is run by
``make conformance``; these tests need no download.)"""

from __future__ import annotations

import importlib.util
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))


def _load(name: str, filename: str):
    spec = importlib.util.spec_from_file_location(name, os.path.join(HERE, filename))
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


runner = _load("ansible_accel_run_conformance", "run_conformance.py")
plugin = _load("ansible_accel_conformance_plugin", "accel_conformance_plugin.py")


def mode_run(outcomes: dict, **context_fields) -> dict:
    return {"outcomes": outcomes, "seconds": 0.0, "contexts": {"controller": {"outcomes": outcomes, **context_fields}}}


INSTALLED = {"install_status": {"installed": True, "reason": None}, "still_installed": True}


def test_identical_runs_pass():
    outcomes = {"a": "passed", "b": "skipped", "c": "failed", "d": "xfailed"}
    assert runner.compare(mode_run(outcomes), mode_run(dict(outcomes), **INSTALLED)) == []


@pytest.mark.parametrize("on_outcome", ["failed", "error", "skipped", "xfailed", None])
def test_a_test_that_stops_passing_fails_the_run(on_outcome):
    on = {"a": "passed"} if on_outcome is None else {"a": "passed", "b": on_outcome}
    problems = runner.compare(mode_run({"a": "passed", "b": "passed"}), mode_run(on, **INSTALLED))
    assert problems == [f"passes off, {on_outcome or 'missing'} on: b"]


def test_a_test_failing_both_ways_is_not_a_problem_of_ours():
    assert (
        runner.compare(mode_run({"a": "passed", "b": "failed"}), mode_run({"a": "passed", "b": "failed"}, **INSTALLED))
        == []
    )


def test_on_must_really_install():
    not_installed = {
        "install_status": {"installed": False, "reason": "disabled by ANSIBLE_ACCEL=0"},
        "still_installed": False,
    }
    problems = runner.compare(mode_run({"a": "passed"}), mode_run({"a": "passed"}, **not_installed))
    assert problems == ["controller: the 'on' run did not install ansible-accel: disabled by ANSIBLE_ACCEL=0"]


def test_a_path_that_breaks_while_switching_on_fails_the_run():
    status = {"installed": True, "reason": None, "argspec": {"active": False, "reason": "failed to switch on: KeyError: 'x'"},
              "finder": {"active": False, "reason": "ansible.executor is not importable here"}}  # fmt: skip
    problems = runner.compare(
        mode_run({"a": "passed"}), mode_run({"a": "passed"}, install_status=status, still_installed=True)
    )
    assert problems == ["controller: path argspec broke while switching on: failed to switch on: KeyError: 'x'"]


def test_off_must_not_install_and_must_pass_something():
    problems = runner.compare(mode_run({"a": "failed"}, accel_installed=True), mode_run({"a": "failed"}, **INSTALLED))
    assert problems == [
        "controller: ansible-accel was installed during the 'off' run",
        "no test passed in the 'off' run",
    ]


def test_contexts_follow_ansible_test(tmp_path):
    source = str(tmp_path)
    paths = [os.path.join(source, p) for p in (
        "test/units/executor/module_common", "test/units/module_utils/basic/test_no_log.py",
        "test/units/_internal/test_secret_input.py", "test/units/module_utils_other/x.py",
    )]  # fmt: skip
    assert runner.split_by_context(source, paths) == {
        "controller": [paths[0], paths[2], paths[3]],
        "module_utils": [paths[1]],
    }


def test_version_specific_options(tmp_path):
    units = tmp_path / runner.UNITS_COMMAND
    units.parent.mkdir(parents=True)
    units.write_text("cmd = ['--strict-markers']\n")
    assert runner.version_specific_options(str(tmp_path)) == []
    units.write_text(f"cmd.append('{runner.OPTIONAL_PYTEST_OPTIONS[0]}')\n")
    assert runner.version_specific_options(str(tmp_path)) == runner.OPTIONAL_PYTEST_OPTIONS


def report(when: str, outcome: str, wasxfail: bool = False) -> pytest.TestReport:
    result = pytest.TestReport("t.py::x", ("t.py", 1, "x"), {}, outcome, None, when)
    if wasxfail:
        result.wasxfail = "reason"
    return result


@pytest.mark.parametrize(
    "reports, expected",
    [
        ([("setup", "passed"), ("call", "passed"), ("teardown", "passed")], "passed"),
        ([("setup", "passed"), ("call", "failed"), ("teardown", "passed")], "failed"),
        ([("setup", "failed"), ("teardown", "passed")], "error"),
        ([("setup", "passed"), ("call", "passed"), ("teardown", "failed")], "error"),
        ([("setup", "skipped"), ("teardown", "passed")], "skipped"),
        ([("setup", "passed"), ("call", "skipped", True), ("teardown", "passed")], "xfailed"),
        ([("setup", "passed"), ("call", "passed", True), ("teardown", "passed")], "xpassed"),
    ],
)
def test_outcome_of_a_test(monkeypatch, reports, expected):
    monkeypatch.setattr(plugin, "_outcomes", {})
    for item in reports:
        plugin.pytest_runtest_logreport(report(*item))
    assert plugin._outcomes == {"t.py::x": expected}
