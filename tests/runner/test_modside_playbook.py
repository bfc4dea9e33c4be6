"""Real ``ansible-playbook`` runs through warm runners with the module-side paths on, switched
off (``ANSIBLE_ACCEL_MODULE_SIDE=0``) and without the accelerator: every task result is the
same, and the run's ``ANSIBLE_ACCEL_STATS`` file holds the modules' native counts."""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from _playbook_run import run_playbook  # noqa: E402
from test_playbook import HERE, _differences, _normalise  # noqa: E402

from ansible_accel import _activation  # noqa: E402

CORE_MINOR = tuple(int(part) for part in (_activation.core_version() or "0.0").split(".")[:2])

PLAY = """\
- hosts: all
  gather_facts: false
  tasks:
    - ping: {data: one}
    - ping: {data: two}
    - accel_modside:
        name: "ms-{{ item }}"
        pass: "pw-{{ item }}-secret"
        count: "{{ item }}"
        nested: {user: u, secret: "nested-{{ item }}-secret"}
        servers: [{host: h1, key: "key-{{ item }}-secret"}]
        repeat: 3
      loop: [1, 2, 3, 4, 5]
    - user: {name: root, state: present}
      check_mode: true
    - uri: {url: "http://127.0.0.1:9/", url_password: uri-secret, timeout: 2}
      ignore_errors: true
    - accel_modside: {name: bad, count: many, password: pw-bad-secret}
      ignore_errors: true
"""
MASKING_TASK = """\
    - accel_modside_mask:
        texts: ["a text with its-secret-word in it", "nothing"]
        words: [its-secret-word, secret]
        repeat: 50
"""


def _run(tmp_path, accel: bool, **env_extra: str) -> tuple[list, dict | None]:
    _, results, stats = run_playbook(tmp_path, PLAY + (MASKING_TASK if CORE_MINOR >= (2, 22) else ""), ["h1", "h2"], accel,
                                     {"ANSIBLE_LIBRARY": os.path.join(HERE, "library"), "ANSIBLE_FORKS": "2",
                                      "PYTHONHASHSEED": "0", **env_extra})
    return _normalise(results), stats


def test_results_are_the_same_and_the_stats_hold_the_modules_counts(tmp_path):
    plain, _ = _run(tmp_path, accel=False)
    on, stats = _run(tmp_path, accel=True)
    off, off_stats = _run(tmp_path, accel=True, ANSIBLE_ACCEL_MODULE_SIDE="0")
    assert on == plain, "\n".join(_differences(plain, on)[:20])
    assert off == plain, "\n".join(_differences(plain, off)[:20])

    assert stats["run"]["paths"]["runner"]["native"] >= 6, stats["run"]["paths"]["runner"]
    side = stats["module_side"]
    assert side["active"] is True and side["fallback"] == {}, side
    # Every module run through a runner reported, and validated its arguments natively once.
    assert side["modules"] == stats["run"]["paths"]["runner"]["native"], side
    assert side["argspec"]["native"] == side["modules"] and side["argspec"]["fallback"] == {}, side
    if CORE_MINOR < (2, 22):
        assert side["no_log"]["native"] >= side["modules"] and side["masking"]["native"] == 0, side
    else:
        assert side["masking"]["native"] >= side["modules"] and side["no_log"]["native"] == 0, side

    off_side = off_stats["module_side"]
    assert off_side["active"] is False and off_side["reason"] == "switched off by ANSIBLE_ACCEL_MODULE_SIDE=0"
    assert off_side["modules"] == 0 and off_side["argspec"]["native"] == 0, off_side
