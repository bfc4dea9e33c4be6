"""The end-to-end benchmark's own machinery (benches/e2e): every process of a run counted, the
modes' environments, the order of runs, the comparisons and the report."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from benches.e2e import compare, playbook_run, run_e2e, summary  # noqa: E402

linux_only = pytest.mark.skipif(not os.path.exists(f"/proc/{os.getpid()}/task/{os.getpid()}/children"),
                                reason="needs Linux's /proc/PID/task/TID/children")

# A process that starts a child (the script given) and exits at once: the child is an orphan.
ORPHANING = "import subprocess, sys; subprocess.Popen([sys.executable, *sys.argv[1:]])"
BURN = "import time\nend = time.process_time() + {seconds}\nwhile time.process_time() < end: pass\n"


def _settle_in_subprocess(tmp_path, orphan_script: str, name: str, bound: float) -> dict:
    """Run ``Tree`` in a process of its own (it reaps every child of the process it runs in)."""
    script = tmp_path / name
    script.write_text(orphan_script)
    code = textwrap.dedent(f"""
        import json, resource, subprocess, sys
        sys.path.insert(0, {ROOT!r})
        from benches.e2e import tree
        with tree.Tree(interval=0.05, bound={bound}) as processes:
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            subprocess.run([sys.executable, "-c", {ORPHANING!r}, {str(script)!r}], check=True)
            outcome = processes.settle()
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
        print(json.dumps({{
            "orphans": [[o.kind, o.cpu, o.command] for o in outcome.orphans],
            "left_behind": outcome.left_behind, "programs": outcome.programs(),
            "children_cpu": (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime),
            "remaining": tree.children(),
        }}))
    """)
    out = subprocess.run([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, check=True, timeout=60)
    return json.loads(out.stdout)


@linux_only
def test_an_orphan_is_reaped_and_its_cpu_counted(tmp_path):
    # Named as a warm runner's script is: counted apart from other orphans.
    found = _settle_in_subprocess(tmp_path, BURN.format(seconds=0.4), "_runner_server.py", bound=20)
    assert [kind for kind, _, _ in found["orphans"]] == ["runner"]
    kind, cpu, command = found["orphans"][0]
    assert cpu >= 0.35 and "_runner_server.py" in command
    assert found["children_cpu"] >= cpu  # in RUSAGE_CHILDREN too
    assert found["left_behind"] == [] and found["remaining"] == []
    assert list(found["programs"].values())[0][0] == 1


@linux_only
def test_an_orphan_still_alive_at_the_bound_is_killed_and_listed(tmp_path):
    found = _settle_in_subprocess(tmp_path, "import time\ntime.sleep(120)\n", "lingering.py", bound=1)
    assert len(found["left_behind"]) == 1 and "lingering.py" in found["left_behind"][0]
    assert [kind for kind, _, _ in found["orphans"]] == ["other"]
    assert found["remaining"] == []


def test_the_root_cgroup_is_never_read():
    usage, why = __import__("benches.e2e.tree", fromlist=["tree"]).cgroup_usage_file()
    if usage:  # only when the cgroup holds this process alone
        with open(os.path.join(os.path.dirname(usage), "cgroup.procs")) as handle:
            assert handle.read().split() == [str(os.getpid())]
    else:
        assert why


def _env(tmp_path, mitogen: dict | None = None) -> dict:
    return {"bin": str(tmp_path), "mitogen": mitogen or {"strategy_plugins": "/somewhere/strategy", "version": "0.3.54"}}


@pytest.mark.parametrize("mode, expected, absent", [
    ("off", {}, {"ANSIBLE_ACCEL_STATS", "ANSIBLE_STRATEGY", "ANSIBLE_ACCEL_RUNNER"}),
    ("on", {"ANSIBLE_ACCEL_RUNNER": "0"}, {"ANSIBLE_ACCEL_BYTECODE", "ANSIBLE_STRATEGY"}),
    ("bytecode", {"ANSIBLE_ACCEL_RUNNER": "0", "ANSIBLE_ACCEL_BYTECODE": "1"}, {"ANSIBLE_STRATEGY"}),
    ("runner", {}, {"ANSIBLE_ACCEL_RUNNER", "ANSIBLE_ACCEL_BYTECODE", "ANSIBLE_STRATEGY"}),
    ("mitogen", {"ANSIBLE_STRATEGY": "mitogen_linear", "ANSIBLE_STRATEGY_PLUGINS": "/somewhere/strategy"},
     {"ANSIBLE_ACCEL_STATS", "ANSIBLE_ACCEL_RUNNER"}),
])
def test_each_mode_runs_as_documented(tmp_path, mode, expected, absent):
    environ: dict[str, str] = {}
    command = playbook_run.command_for(_env(tmp_path), mode, environ, str(tmp_path), "stats.json")
    accelerated = mode in ("on", "bytecode", "runner")
    assert os.path.basename(command[0]) == ("ansible-accel" if accelerated else "ansible-playbook")
    assert ("ANSIBLE_ACCEL_STATS" in environ) == accelerated == playbook_run.accelerated(mode)
    assert {k: environ[k] for k in expected} == expected
    assert not absent & set(environ)


def test_mitogen_is_skipped_with_the_reason(tmp_path):
    assert playbook_run.unavailable(_env(tmp_path, {"reason": "Mitogen does not import: x"}), "mitogen") == \
        "Mitogen does not import: x"
    assert playbook_run.unavailable(_env(tmp_path), "mitogen") is None
    assert playbook_run.unavailable(_env(tmp_path, {"reason": "r"}), "runner") is None


def test_the_first_run_is_off_and_modes_rotate():
    modes = summary.MODES
    assert [run_e2e.run_order(modes, r)[0] for r in range(len(modes))] == list(modes)
    assert all(sorted(run_e2e.run_order(modes, r)) == sorted(modes) for r in range(len(modes)))
    assert run_e2e.run_order(("on", "off", "runner"), 0) == ["off", "on", "runner"]


def test_the_counters_check_the_runner_and_bytecode_as_each_mode_says():
    def stats(bytecode: int, runner: int) -> dict:
        return {"installed": True, "run": {"paths": {"bytecode": {"native": bytecode}, "runner": {"native": runner}}}}

    check = run_e2e.Playbook.check_counters
    assert check("runner", stats(0, 10)) == []
    assert check("on", stats(0, 0)) == []
    assert check("bytecode", stats(5, 0)) == []
    assert check("runner", stats(0, 0)) == ["0 modules run by a warm runner"]
    assert check("on", stats(0, 3)) == ["3 modules run by a warm runner"]
    assert check("on", {"installed": False, "reason": "x"}) == ["the accelerator was not installed (x)"]


def _results(**tasks: dict) -> dict:
    hosts = {h: [{"task": t, "action": "a", "result": r} for t, r in tasks.items()] for h in ("host01", "host02")}
    return {"hosts": hosts, "stats": {}}


def test_differences_by_task_groups_tasks_that_differ_alike():
    a = _results(one={"x": 1}, two={"x": 2}, three={"x": 3, "w": None})
    b = _results(one={"x": 1, "warnings": ["w"]}, two={"x": 2, "warnings": ["w"]}, three={"x": 4, "w": None})
    found = compare.differences_by_task(a, "", b, "", labels=("off", "mitogen"))
    assert found[0].startswith("2 tasks ('one', 'two') on 2 of 2 hosts: .result.warnings:")
    assert found[1].startswith("task 'three' on 2 of 2 hosts: .result.x: 3 (off) != 4 (mitogen)")
    assert compare.differences_by_task(a, "", a, "") == []


def test_mitogen_temporary_names_and_random_retries_are_normalised():
    assert compare.normalise("/root/.ansible/tmp/ansible_mitogen_action_059df5a429f4776a/.source") == \
        "/root/.ansible/tmp/<mitogen-tmp>/.source"
    printed = "ok: [host01]\nFAILED - RETRYING: [host01]: random: Wait (29 retries left).\n"
    assert compare.normalised_output(printed) == ["ok: [host01]"]
    assert len(compare.normalised_output("FAILED - RETRYING: [host01]: Wait (29 retries left).")) == 1


def _record(mode: str, wall: float, cpu: float, old: bool = False) -> dict:
    record = {"mode": mode, "started": "00:00:00", "returncode": 0, "wall": wall, "cpu": cpu, "controller_cpu": 1.0,
              "workers_cpu": 1.0, "modules_cpu": cpu - 2, "load_before": [1.0], "load_after": [1.0]}
    if not old:
        record.update(runners_cpu=0.0, other_cpu=0.0, settle=0.0, left_behind=[], outlived={}, cgroup_cpu=None)
    return record


def test_ratios_to_off_and_to_mitogen():
    playbook = {m: summary.summarise([_record(m, w, c)]) for m, w, c in
                (("off", 100, 80), ("runner", 25, 20), ("mitogen", 50, 40))}
    assert summary.ratios(playbook)["runner"] == {"wall": 0.25, "cpu": 0.25}
    to_mitogen = summary.ratios(playbook, "mitogen")
    assert to_mitogen["runner"] == {"wall": 0.5, "cpu": 0.5} and to_mitogen["off"] == {"wall": 2.0, "cpu": 2.0}
    assert "mitogen" not in to_mitogen


def test_the_markdown_has_every_mode_and_renders_older_reports():
    runs = [_record("off", 100, 80), _record("runner", 25, 20), _record("mitogen", 50, 40)]
    playbook = {"playbook": "modules.yml", "ansible_core": "2.21.5", "python": "3.12.1", "hosts": 2, "tasks": 66,
                "task_results": 132, "distinct_actions": 58, "sequence": runs, "problems": [],
                "reported": [{"difference": "task 'x' differs", "runs": ["mitogen run 1"]}],
                "skipped": {}, "mitogen_version": "0.3.54"}
    for mode in ("off", "runner", "mitogen"):
        playbook[mode] = summary.summarise([r for r in runs if r["mode"] == mode])
    report = {"machine": {"cpus": 2, "cpu_model": "x", "platform": "p"}, "started": "now", "commit": "abc",
              "quick": True, "finished": True, "seconds": 1, "runs": [playbook]}
    text = summary.markdown(report)
    assert "| on+runner | 1 | 25.0s | - | 0.250 | 0.500 |" in text
    assert "| mitogen | 1 | 50.0s | - | 0.500 | - |" in text
    assert "1 differences (reported)" in text and "- task 'x' differs (mitogen run 1)" in text
    old = {**playbook, "sequence": [_record("off", 100, 80, old=True)], "reported": []}
    old["off"] = summary.summarise(old["sequence"])
    del old["runner"], old["mitogen"]
    assert "| off | 1 | 100.0s |" in summary.markdown({**report, "runs": [old]})
