"""``benches/controller_wait.py`` (what waiting on busy workers costs the controller) runs small
and gives a whole report: both modes measured inside a window where every worker was waiting,
their task results identical.  Its numbers are for ``make bench-e2e``, never checked here."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)

from benches import controller_wait  # noqa: E402


def test_small_run_reports_both_modes_with_identical_results():
    # a nap long enough that workers starting up to ~3.8 s apart on a loaded machine still leave
    # the 1 s window the report asks for
    report = controller_wait.measure(sys.executable, hosts=3, nap=6.0, repeats=1)
    assert report["problems"] == []
    assert report["results_identical"]
    for mode in controller_wait.MODES:
        entry = report["modes"][mode]
        assert entry["runs"] == 1
        assert entry["seconds"] > 0.5
        assert entry["cpu"] >= 0
    text = controller_wait.render(report)
    assert "on/off:" in text and "results: identical" in text


def test_window_needs_room():
    with pytest.raises(ValueError, match="no window"):
        controller_wait.measure(sys.executable, hosts=1, nap=1.5, repeats=1)


def test_observer_finds_sleeps_of_its_own_run_only(tmp_path):
    outer = subprocess.Popen(["sh", "-c", "sleep 7.251 & sleep 7.251 & wait"], start_new_session=True)
    stranger = subprocess.Popen(["sleep", "7.251"])
    try:
        for _ in range(100):
            if len(controller_wait.sleeping(outer.pid, "7.251")) == 2:
                break
            time.sleep(0.02)
        found = controller_wait.sleeping(outer.pid, "7.251")
        assert len(found) == 2 and stranger.pid not in found
        assert controller_wait.thread_cpu_ns(outer.pid) is not None
    finally:
        os.killpg(outer.pid, signal.SIGKILL)
        stranger.kill()
        for p in (outer, stranger):
            p.wait()
    assert controller_wait.thread_cpu_ns(outer.pid) is None
