"""Module-side paths in fresh interpreters, by opt-in: real ``ansible-playbook`` runs whose
local modules each start a fresh interpreter (``ANSIBLE_ACCEL_RUNNER=0``), with
``ANSIBLE_ACCEL_MODULE_SIDE`` in the play's ``environment:`` and without it.  The task results
are the same; with the opt-in every module validates its arguments natively and scrubs (2.19-2.21)
or masks (2.22) natively, counted in the counts file; without it nothing is counted.  With
``target`` alone and the accelerator on in the controller, the counts reach the controller's
stats while every module sees the environment exactly as the task set it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(TESTS, "runner"))
sys.path.insert(0, TESTS)
from _playbook_run import RESULTS_CALLBACK  # noqa: E402
from test_playbook import BIN, _differences, _normalise  # noqa: E402

from ansible_accel import _activation  # noqa: E402

CORE_MINOR = _activation.core_minor()
LIBRARY = os.path.join(TESTS, "runner", "library")
ENV = "ANSIBLE_ACCEL_MODULE_SIDE"

TASKS = """\
    - user: {name: root, state: present}
      check_mode: true
    - user: {name: accel-no-such-user, password: user-secret-hash, state: present}
      check_mode: true
    - uri: {url: "http://127.0.0.1:9/", url_password: uri-secret, timeout: 2}
      ignore_errors: true
    - file: {path: "{{ work }}/d", state: directory}
    - file: {path: "{{ work }}/d/f", state: touch, mode: "0600"}
    - stat: {path: "{{ work }}/d/f", bogus_option: 1}
      ignore_errors: true
    - accel_modside:
        name: "ms-{{ item }}"
        pass: "pw-{{ item }}-secret"
        count: "{{ item }}"
        nested: {user: u, secret: "nested-{{ item }}-secret"}
        servers: [{host: h1, key: "key-{{ item }}-secret"}]
        repeat: 3
      loop: [1, 2]
    - accel_modside: {name: bad, count: many, password: pw-bad-secret}
      ignore_errors: true
"""
MASKING_TASK = """\
    - accel_modside_mask:
        texts: ["a text with its-secret-word in it", "nothing"]
        words: [its-secret-word, secret]
        repeat: 20
"""
# Module runs in TASKS (a loop counts each item), and the masking task on 2.22.
MODULE_RUNS = 9 + (1 if CORE_MINOR >= (2, 22) else 0)
# What a module sees of the variable: in the environment of a command it starts, and in its own
# (``accel_observe`` reports its whole ``os.environ``).  Two module runs.
ENVIRONMENT_TASKS = """\
    - command: printenv ANSIBLE_ACCEL_MODULE_SIDE
    - accel_observe: {}
"""


def play(environment: dict | None, extra_tasks: str = "") -> str:
    head = "- hosts: localhost\n  gather_facts: false\n"
    if environment is not None:
        head += f"  environment: {json.dumps(environment)}\n"
    return head + "  tasks:\n" + TASKS + (MASKING_TASK if CORE_MINOR >= (2, 22) else "") + extra_tasks


def run_playbook(tmp_path, label: str, environment: dict | None, *, interpreter: str = sys.executable,
                 command: list[str] | None = None, extra_tasks: str = "", **env_extra: str) -> tuple[list, str]:
    """The normalised task results of one run, and its standard output."""
    work = tmp_path / label
    work.mkdir()
    (work / "play.yml").write_text(play(environment, extra_tasks))
    (work / "hosts").write_text(f"localhost ansible_connection=local ansible_python_interpreter={interpreter}\n")
    results = work / "results.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_") and k != ENV}
    env.update(ANSIBLE_LIBRARY=LIBRARY, ANSIBLE_CALLBACK_PLUGINS=RESULTS_CALLBACK, ANSIBLE_CALLBACKS_ENABLED="e2e_results",
               E2E_RESULTS_FILE=str(results), ANSIBLE_NOCOLOR="1", ANSIBLE_ACCEL_RUNNER="0", PYTHONHASHSEED="0",
               ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_INVENTORY_UNPARSED_WARNING="0", **env_extra)  # fmt: skip
    command = command or [os.path.join(BIN, "ansible-playbook")]
    done = subprocess.run([*command, "-i", "hosts", "-e", f"work={work}", "play.yml"], env=env, check=False,
                          capture_output=True, text=True, timeout=600, cwd=work)  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    text = results.read_text().replace(str(work), "WORK")
    return _normalise(json.loads(text)), done.stdout


def records(path) -> list[dict]:
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


def assert_native_counts(lines: list[dict], runs: int) -> None:
    """One line per module run, each with the paths used: one native argument validation per
    module that reached it, native scrubbing (2.19-2.21) or masking (2.22)."""
    assert len(lines) == runs, lines
    assert all("paths" in line for line in lines), [line for line in lines if "paths" not in line]
    paths = {p: sum(line["paths"][p]["native"] for line in lines) for p in ("argspec", "no_log", "masking")}
    assert paths["argspec"] == runs, paths
    if CORE_MINOR < (2, 22):
        assert paths["no_log"] >= runs and paths["masking"] == 0, paths
    else:
        assert paths["masking"] >= runs and paths["no_log"] == 0, paths


@pytest.fixture(scope="module")
def plain(tmp_path_factory) -> list:
    """The results of the run without the opt-in and without the accelerator."""
    results, _ = run_playbook(tmp_path_factory.mktemp("plain"), "plain", None)
    assert len(results["hosts"]["localhost"]) == MODULE_RUNS - 1  # the loop's two runs give one task result
    return results


def test_the_same_results_with_the_opt_in_and_native_counts_only_with_it(tmp_path, plain):
    record = tmp_path / "counts.jsonl"
    on, _ = run_playbook(tmp_path, "on", {ENV: f"target:{record}"})
    assert on == plain, "\n".join(_differences(plain, on)[:20])
    assert_native_counts(records(record), MODULE_RUNS)

    # A value other than "target" leaves every module as shipped: nothing is counted.
    off_value, _ = run_playbook(tmp_path, "value-0", {ENV: "0", "ACCEL_OTHER": f"target:{record}"})
    assert off_value == plain, "\n".join(_differences(plain, off_value)[:20])
    assert len(records(record)) == MODULE_RUNS


def _seen(results: dict) -> list:
    """The variable as the two modules of ``ENVIRONMENT_TASKS`` saw it, in the order they ran."""
    tasks = results["hosts"]["localhost"][-2:]
    assert [t["action"] for t in tasks] == ["command", "accel_observe"], tasks
    command, observe = (t["result"] for t in tasks)
    return [command["stdout"], dict(observe["observed"]["environ"]).get(ENV)]


def test_the_controller_adds_the_counts_to_the_stats_and_modules_see_the_value_as_set(tmp_path, plain):
    """With ``target`` alone and the accelerator on, the counts of local modules reach the
    run's stats under ``module_side``, and the modules see ``target``, as under plain
    ansible-core: the same results, the same environment."""
    launcher = [os.path.join(os.path.dirname(sys.executable), "ansible-accel"), "ansible-playbook"]
    runs = MODULE_RUNS + 2  # and ENVIRONMENT_TASKS
    # (the same ANSIBLE_ACCEL_STATS both ways: the modules see the controller's environment too)
    stats_on = tmp_path / "stats-on.json"
    reference, _ = run_playbook(tmp_path, "reference", {ENV: "target"}, extra_tasks=ENVIRONMENT_TASKS,
                                ANSIBLE_ACCEL_STATS=str(stats_on))  # fmt: skip
    assert _seen(reference) == ["target", "target"] and not stats_on.exists()
    on, _ = run_playbook(tmp_path, "on", {ENV: "target"}, command=launcher, extra_tasks=ENVIRONMENT_TASKS,
                         ANSIBLE_ACCEL_STATS=str(stats_on))  # fmt: skip
    assert _seen(on) == ["target", "target"]
    assert on == reference, "\n".join(_differences(reference, on)[:20])
    side = json.loads(stats_on.read_text())["module_side"]
    assert side["target_modules"] == side["modules"] == runs, side
    assert side["fallback"] == {} and side["argspec"] == {"native": runs, "fallback": {}}, side
    if CORE_MINOR < (2, 22):
        assert side["no_log"]["native"] >= MODULE_RUNS, side
    else:
        assert side["masking"]["native"] >= MODULE_RUNS, side

    stats_off = tmp_path / "stats-off.json"
    off, _ = run_playbook(tmp_path, "off", None, command=launcher, ANSIBLE_ACCEL_STATS=str(stats_off))
    assert off == plain, "\n".join(_differences(plain, off)[:20])
    side = json.loads(stats_off.read_text())["module_side"]
    assert side["target_modules"] == side["modules"] == 0 and side["argspec"]["native"] == 0, side


def test_the_controllers_own_value_reaches_the_modules_and_counts_the_same(tmp_path):
    """``target`` in the controller's own environment, none in the play: the modules inherit
    it as it is and their counts reach the stats as with the play's ``environment:``."""
    launcher = [os.path.join(os.path.dirname(sys.executable), "ansible-accel"), "ansible-playbook"]
    runs = MODULE_RUNS + 2  # and ENVIRONMENT_TASKS
    stats = tmp_path / "stats.json"
    on, _ = run_playbook(tmp_path, "on", None, command=launcher, extra_tasks=ENVIRONMENT_TASKS,
                         ANSIBLE_ACCEL_STATS=str(stats), **{ENV: "target"})  # fmt: skip
    assert _seen(on) == ["target", "target"]
    side = json.loads(stats.read_text())["module_side"]
    assert side["target_modules"] == side["modules"] == runs, side
    assert side["fallback"] == {} and side["argspec"] == {"native": runs, "fallback": {}}, side
