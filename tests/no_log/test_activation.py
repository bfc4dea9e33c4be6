"""install()/uninstall() of the no_log path, its counters, and ansible-core 2.22's fallback."""

from __future__ import annotations

import subprocess
import sys

import pytest
from ansible.module_utils import basic
from ansible.module_utils.common import parameters

import ansible_accel
from ansible_accel import _counters, no_log
from ansible_accel._activation import Unavailable
from ansible_accel._integrations import no_log as integration

from .conftest import NATIVE_HERE, ONLY_WHERE_NATIVE, assert_same

NAMES = ("remove_values", "sanitize_keys", "heuristic_log_sanitize")


def _where_defined():
    return {
        (parameters, "remove_values"): parameters.remove_values,
        (parameters, "sanitize_keys"): parameters.sanitize_keys,
        (basic, "remove_values"): basic.remove_values,
        (basic, "sanitize_keys"): basic.sanitize_keys,
        (basic, "heuristic_log_sanitize"): basic.heuristic_log_sanitize,
    }


@ONLY_WHERE_NATIVE
def test_install_patches_every_importer_and_uninstall_restores_them():
    before = _where_defined()
    status = ansible_accel.install()
    try:
        assert status["no_log"]["active"], status["no_log"]
        for (module, name), original in before.items():
            assert getattr(module, name) is getattr(no_log, name), f"{module.__name__}.{name}"
            assert original is getattr(no_log, f"_original_{name}")
    finally:
        ansible_accel.uninstall()
    for (module, name), original in before.items():
        assert getattr(module, name) is original


@ONLY_WHERE_NATIVE
def test_already_imported_uri_module_is_patched():
    import ansible.modules.uri as uri

    original = uri.sanitize_keys
    ansible_accel.install()
    try:
        assert uri.sanitize_keys is no_log.sanitize_keys
    finally:
        ansible_accel.uninstall()
    assert uri.sanitize_keys is original


@ONLY_WHERE_NATIVE
def test_ansible_module_calls_go_native(accel):
    start = _counters.snapshot()["no_log"]["native"]
    result = basic.remove_values({"msg": "a pw"}, {"pw"})
    text = basic.heuristic_log_sanitize("http://u:pw@h", {"pw"})
    assert result == {"msg": "a ********"}
    assert text == "http://u:********@h"
    # heuristic_log_sanitize calls basic.remove_values, itself native: three native calls.
    assert accel.status()["no_log"]["native"] == start + 3


@ONLY_WHERE_NATIVE
def test_delegated_values_are_counted():
    import datetime

    before = _counters.snapshot()["no_log"].get("events", {}).get("values handed to ansible-core's helper", 0)
    no_log.remove_values([datetime.date(2020, 1, 1), "pw"], ["pw"])
    after = _counters.snapshot()["no_log"]["events"]["values handed to ansible-core's helper"]
    assert after == before + 1


ENDLESS_CYCLE_SCRIPT = """
import resource, signal, sys
resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))  # a failure must not take the machine
from ansible.module_utils.common import parameters
from ansible_accel import no_log

class Timeout(Exception):
    pass

def alarm(signum, frame):
    raise Timeout

def interrupted(fn):
    loop = []
    loop.append(loop)
    signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, 0.3)
    try:
        fn(loop, ["pw"])
    except Timeout:
        return "interrupted"
    except MemoryError:
        return "memory"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    return "returned"

name = sys.argv[1]
print(interrupted(getattr(parameters, name)), interrupted(getattr(no_log, name)))
"""


@ONLY_WHERE_NATIVE
@pytest.mark.skipif(sys.platform == "win32", reason="needs SIGALRM")
@pytest.mark.parametrize("function", ["remove_values", "sanitize_keys"])
def test_endless_cycle_runs_on_like_ansible_core_and_stays_interruptible(function):
    # In a fresh interpreter, under a memory cap: an exception raised by a signal handler is
    # lost when the handler happens to run inside a gc callback (hypothesis installs one in
    # this pytest process), and the endless walk would then run until memory is gone.
    run = subprocess.run(
        [sys.executable, "-c", ENDLESS_CYCLE_SCRIPT, function], capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["interrupted", "interrupted"], run.stdout + run.stderr


@ONLY_WHERE_NATIVE
def test_cycle_ending_in_an_error_ends_the_same_way():
    loop: dict = {}
    loop["self"] = loop
    loop["bad"] = [object.__new__(type("Bad", (), {"__repr__": lambda self: "<Bad>"}))]
    assert_same(parameters.sanitize_keys, no_log.sanitize_keys, loop, ["pw"])


@pytest.mark.skipif(NATIVE_HERE, reason="only ansible-core 2.22 deprecates these functions")
def test_2_22_plan_is_unavailable_and_calls_fall_back():
    with pytest.raises(Unavailable, match="deprecates"):
        integration.plan()
    assert ansible_accel.install()["no_log"]["active"] is False
    ansible_accel.uninstall()
    before = _counters.snapshot()["no_log"]["fallback"]
    assert no_log.remove_values({"a": "pw"}, ["pw"]) == parameters.remove_values({"a": "pw"}, ["pw"])
    assert no_log.sanitize_keys({"pw": 1}, ["pw"]) == parameters.sanitize_keys({"pw": 1}, ["pw"])
    assert no_log.heuristic_log_sanitize("u:p@h") == basic.heuristic_log_sanitize("u:p@h")
    after = _counters.snapshot()["no_log"]["fallback"]
    assert sum(after.values()) == sum(before.values()) + 3


@ONLY_WHERE_NATIVE
def test_threads_get_consistent_results():
    import threading

    big = ("a line with hunter2 and sekrit inside é\n" * 20_000, ["x hunter2"] * 100)
    values = ["hunter2", "sekrit", "line"]
    expected = parameters.remove_values(big, values)
    failures = []

    def work():
        for _ in range(5):
            if no_log.remove_values(big, values) != expected:
                failures.append("different")

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures


@ONLY_WHERE_NATIVE
@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs os.fork")
@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
def test_forked_child_scrubs():
    import os

    no_log.remove_values("warm the cache with pw", ["pw"])
    pid = os.fork()
    if pid == 0:
        ok = no_log.remove_values({"k": "a pw"}, ["pw"]) == {"k": "a ********"}
        os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
