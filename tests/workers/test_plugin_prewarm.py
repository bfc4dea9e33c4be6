"""The plugin lookups made in the controller before a task's workers fork: real
``ansible-playbook`` runs off and on give the same results and the same output, and a lookup
that would print is left to the workers."""

from __future__ import annotations

import os
import re
import sys
import threading

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from _playbook_run import run_playbook  # noqa: E402

DONE = "plugin lookups made before the fork"
PLAY = """\
- hosts: all
  gather_facts: false
  tasks:
    - command: "true"
    - ping:
    - set_fact: {x: "{{ inventory_hostname }}"}
    - debug: {msg: "{{ x }}"}
    - stat: {path: /}
      register: st
    - assert: {that: st.stat.isdir}
"""
OLD_NAME_PLAY = """\
- hosts: all
  gather_facts: false
  tasks:
    - accel_old_name:
    - ping:
"""
_TIMES = re.compile(r"\d+\.\d+s|\d{4}-\d\d-\d\d[ T][\d:.]+")


def _run(tmp_path, play: str, accel: bool, *args: str) -> tuple[dict, dict | None, str]:
    done, results, stats = run_playbook(tmp_path, play, ["p0", "p1", "p2"], accel,
                                        {"ANSIBLE_LIBRARY": os.path.join(HERE, "library"), "ANSIBLE_FORKS": "1"}, args)
    output = _TIMES.sub("<time>", done.stdout + "\n--- stderr\n" + done.stderr)
    return results, stats, output


def _comparable(report: dict) -> dict:
    return {h: [{**t, "result": {k: v for k, v in t["result"].items() if k not in ("start", "end", "delta")}} for t in tasks]
            for h, tasks in report["hosts"].items()}


def _events(stats: dict) -> dict:
    return stats["run"]["paths"]["workers"].get("events", {})


def test_lookups_made_ahead_change_no_result_and_no_output(tmp_path):
    plain, _, plain_output = _run(tmp_path, PLAY, accel=False)
    warm, stats, warm_output = _run(tmp_path, PLAY, accel=True)
    assert _comparable(warm) == _comparable(plain)
    assert warm_output == plain_output
    events = _events(stats)
    assert events.get(DONE) == 6, events  # once per task: the hosts share connection and shell
    assert not any(name.startswith("plugin lookups left") for name in events), events


def test_a_lookup_that_would_print_is_left_to_the_workers(tmp_path):
    plain, _, plain_output = _run(tmp_path, OLD_NAME_PLAY, accel=False)
    warm, stats, warm_output = _run(tmp_path, OLD_NAME_PLAY, accel=True)
    assert "automatically redirected" in plain_output  # ansible-core's deprecation, printed by the workers
    assert warm_output == plain_output
    assert _comparable(warm) == _comparable(plain)
    events = _events(stats)
    assert events.get("plugin lookups left to the workers: a lookup prints") == 1, events
    assert events.get(DONE) == 1, events  # the ping task


def test_verbose_runs_leave_the_lookups_to_the_workers(tmp_path):
    _, stats, _ = _run(tmp_path, PLAY, True, "-vv")
    events = _events(stats)
    assert events.get("plugin lookups left to the workers: verbosity") == 6 and DONE not in events, events


def test_the_silent_display_refuses_only_in_its_own_thread():
    from ansible.utils.display import Display

    from ansible_accel._integrations import _plugin_prewarm

    silent = _plugin_prewarm._SilentDisplay(Display())
    silent.debug("nothing")  # prints nothing below debug logging: allowed
    with pytest.raises(_plugin_prewarm._Printed):
        silent.warning("would print")
    with pytest.raises(_plugin_prewarm._Printed):
        silent.deprecated("would print")
    seen = []
    other = threading.Thread(target=lambda: seen.append(silent.warning))
    other.start()
    other.join()
    assert seen and seen[0].__self__ is silent._display
