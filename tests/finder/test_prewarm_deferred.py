"""The controller's pre-warm of ansible-core's module_utils runs only in a run that builds a
payload more than once: started by the second worker whose task may build one, never by a
playbook of actions that run no module or with a single module run (its whole cost would be the
accelerator's own)."""

from __future__ import annotations

import os
import sys

import pytest

from ansible_accel._integrations import _finder_prewarm

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from _playbook_run import run_playbook  # noqa: E402


def _run(tmp_path, tasks: str, hosts: int = 2, **env: str) -> dict:
    _, _, stats = run_playbook(tmp_path, f"- hosts: all\n  gather_facts: false\n  tasks:\n{tasks}",
                               [f"h{i}" for i in range(hosts)], True,
                               {"ANSIBLE_LOCAL_TEMP": str(tmp_path / "tmp"), **env}, results=False)
    return stats


def _prewarm_scans(stats: dict) -> int:
    return stats["run"]["paths"]["finder"].get("events", {}).get("prewarm_scan", 0)


def test_a_run_without_modules_does_not_prewarm(tmp_path):
    stats = _run(tmp_path, "    - debug:\n        msg: hi\n    - set_fact:\n        x: 1\n"
                           "    - ansible.builtin.assert:\n        that: x == 1\n")
    assert _prewarm_scans(stats) == 0, stats["run"]["paths"]["finder"]
    assert stats["run"]["paths"]["workers"]["native"] == 6


def test_a_single_module_run_does_not_prewarm(tmp_path):
    stats = _run(tmp_path, "    - debug:\n        msg: hi\n    - ping:\n", hosts=1)
    assert _prewarm_scans(stats) == 0, stats["run"]["paths"]["finder"]
    assert stats["run"]["paths"]["finder"]["native"] >= 1


def test_the_second_module_task_prewarms_once(tmp_path):
    stats = _run(tmp_path, "    - debug:\n        msg: hi\n    - ping:\n    - ansible.builtin.command: 'true'\n")
    assert _prewarm_scans(stats) > 100, stats["run"]["paths"]["finder"]  # every .py of ansible-core's module_utils
    assert stats["run"]["paths"]["finder"]["native"] >= 1


def test_without_the_workers_path_the_first_fork_prewarms(tmp_path):
    stats = _run(tmp_path, "    - debug:\n        msg: hi\n", ANSIBLE_ACCEL_WORKERS="0")
    assert _prewarm_scans(stats) > 100, stats["run"]["paths"]["finder"]


@pytest.mark.parametrize("action, builds", [
    ("debug", False), ("ansible.builtin.set_fact", False), ("ansible.legacy.assert", False),
    ("ping", True), ("ansible.builtin.command", True), ("community.general.ini_file", True),
    ("my.collection.debug", True), (None, True),
])
def test_which_actions_may_build_a_payload(action, builds):
    assert _finder_prewarm.may_build_payload(action) is builds
