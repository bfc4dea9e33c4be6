"""pytest plugin loaded (``-p accel_conformance_plugin``) into ansible-core's own unit test run.

``ACCEL_CONFORMANCE_MODE=on`` switches ansible-accel on when pytest loads this plugin, before
any conftest or test module is imported, and stops the session if it did not install.
``ACCEL_CONFORMANCE_MODE=off`` leaves ansible-accel alone and checks nobody switched it on.
Either way the outcome of every test (by node id) is written as JSON to
``ACCEL_CONFORMANCE_RESULTS`` for ``run_conformance.py`` to compare.

Tests run in forked children (ansible-test's ``ansible_forked`` plugin), so each child's
counters ride back to the parent on its teardown report's ``user_properties``.
"""

from __future__ import annotations

import json
import os
import sys

import pytest

MODE = os.environ.get("ACCEL_CONFORMANCE_MODE", "off")
RESULTS = os.environ.get("ACCEL_CONFORMANCE_RESULTS")
_COUNTERS_KEY = "ansible_accel_counters"

if MODE not in ("on", "off"):
    raise pytest.UsageError(f"ACCEL_CONFORMANCE_MODE must be 'on' or 'off', not {MODE!r}")

_parent_pid = os.getpid()
_install_status: dict | None = None
if MODE == "on":
    import ansible_accel

    _install_status = ansible_accel.install()

_outcomes: dict[str, str] = {}
_child_counters: list[dict] = []
# A later phase's verdict wins over an earlier one only if it is worse (error over passed).
_RANK = {"passed": 0, "xpassed": 0, "skipped": 1, "xfailed": 1, "failed": 2, "error": 3}


def pytest_configure(config: pytest.Config) -> None:
    if MODE == "on" and not (_install_status or {}).get("installed"):
        reason = (_install_status or {}).get("reason")
        raise pytest.UsageError(f"ansible-accel did not install: {reason}")
    if MODE == "off" and _accel_installed():
        raise pytest.UsageError("ansible-accel is installed in an 'off' run")


def _accel_installed() -> bool:
    activation = sys.modules.get("ansible_accel._activation")
    return bool(activation is not None and activation.is_installed())


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    outcome = yield
    report = outcome.get_result()
    if MODE == "on" and call.when == "teardown" and os.getpid() != _parent_pid:
        from ansible_accel import _counters

        report.user_properties.append((_COUNTERS_KEY, _counters.snapshot()))


def _verdict(report: pytest.TestReport) -> str | None:
    wasxfail = hasattr(report, "wasxfail")
    if report.when == "call":
        if report.passed:
            return "xpassed" if wasxfail else "passed"
        if report.skipped:
            return "xfailed" if wasxfail else "skipped"
        return "failed"
    if report.failed:
        return "error"
    if report.skipped:  # skipped in setup: skip marks, importorskip in fixtures
        return "xfailed" if wasxfail else "skipped"
    return None


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    for key, value in report.user_properties:
        if key == _COUNTERS_KEY:
            _child_counters.append(value)
    verdict = _verdict(report)
    if verdict is None:
        return
    previous = _outcomes.get(report.nodeid)
    if previous is None or _RANK[verdict] >= _RANK[previous]:
        _outcomes[report.nodeid] = verdict


def pytest_collectreport(report: pytest.CollectReport) -> None:
    if report.failed:
        _outcomes[report.nodeid] = "error"


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if not RESULTS:
        return
    result: dict = {"mode": MODE, "outcomes": _outcomes, "exitstatus": int(exitstatus)}
    if MODE == "on":
        from ansible_accel import _activation, _counters

        counters: dict = {}
        _counters.merge(counters, _counters.snapshot())
        for part in _child_counters:
            _counters.merge(counters, part)
        result["install_status"] = _install_status
        result["still_installed"] = _activation.is_installed()
        result["counters"] = counters
    else:
        result["accel_installed"] = _accel_installed()
    with open(RESULTS, "w") as handle:
        json.dump(result, handle, indent=1, sort_keys=True)
