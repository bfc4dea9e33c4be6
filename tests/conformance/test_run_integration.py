"""The integration conformance runner's own logic: how it reads ansible-test's verdict, which
targets it runs, what its hook records and how it judges the two runs.  (The runner itself
is run by ``make conformance-integration``; these tests run no ansible-test.)"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))


def _load(name: str, filename: str):
    spec = importlib.util.spec_from_file_location(name, os.path.join(HERE, filename))
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


runner = _load("ansible_accel_run_integration", "run_integration.py")

RAN_ROLE = "Running ping integration test role\n...\nPLAY RECAP\n"


# --- ansible-test's verdict ------------------------------------------------------------------


def test_exit_zero_with_the_start_line_is_a_pass():
    assert runner.parse_outcome(0, RAN_ROLE, "ping") == runner.PASSED
    assert runner.parse_outcome(0, "Running argspec integration test script\n", "argspec") == runner.PASSED


def test_exit_zero_without_running_the_target_is_a_skip():
    output = 'WARNING: Excluding tests marked "destructive" ...: copy\nWARNING: All targets skipped.\n'
    assert runner.parse_outcome(0, output, "copy") == runner.SKIPPED


def test_the_start_line_must_name_this_target():
    assert runner.parse_outcome(0, "Running ping_other integration test role\n", "ping") == runner.SKIPPED
    assert runner.parse_outcome(0, "Running pingXintegration test role\n", "ping.") == runner.SKIPPED


@pytest.mark.parametrize("returncode", [1, 2, 255])
def test_a_non_zero_exit_is_a_failure(returncode):
    assert runner.parse_outcome(returncode, RAN_ROLE, "ping") == runner.FAILED


# --- which targets run -----------------------------------------------------------------------


def test_aliases_drop_comments_and_blank_lines(tmp_path):
    (tmp_path / "aliases").write_text("shippable/posix/group2\n\n# a comment\ncontext/target  # why\n")
    assert runner.read_aliases(str(tmp_path)) == ["shippable/posix/group2", "context/target"]
    assert runner.read_aliases(str(tmp_path / "missing")) == []


@pytest.mark.parametrize(
    "aliases, is_root, expected",
    [
        (["shippable/posix/group1"], False, None),
        (["posix", "windows"], False, None),
        (["shippable/windows/group1"], False, "not a posix target"),
        (["shippable/posix/group2", "destructive"], True, "destructive (changes the machine)"),
        (["shippable/posix/group2", "needs/root"], False, "needs root"),
        (["shippable/posix/group2", "needs/root"], True, None),
        (["shippable/posix/group2", "needs/ssh"], True, "needs ssh to the controller"),
        (["shippable/posix/group2", "cloud/aws"], True, "needs a cloud environment (cloud/aws)"),
        (["shippable/posix/group2", "disabled"], True, "disabled"),
        (["shippable/posix/group2", "needs/target/setup_helper"], True, None),
        (["shippable/posix/group2", "needs/target/gone"], True, "needs target gone, which this version lacks"),
    ],
)
def test_skip_reason(tmp_path, aliases, is_root, expected):
    (tmp_path / "setup_helper").mkdir()
    assert runner.skip_reason(aliases, str(tmp_path), is_root) == expected


# --- judging the two runs --------------------------------------------------------------------


def process(installed=True, command="ansible-playbook", ran_plays=True, expected=True):
    return {"command": command, "argv": ["site.yml"], "ran_plays": ran_plays, "install_expected": expected,
            "installed_at_start": installed, "installed_at_exit": installed}  # fmt: skip


def run(outcome, processes, route="install"):
    return {"outcome": outcome, "processes": processes, "route": route, "native": {}, "fallback": {}, "seconds": 1.0}


def row(off, on, skip=None):
    return {"target": "t", "skip": skip, "runs": {"off": off, "on": on}}


OFF_OK = run(runner.PASSED, [process(installed=False, expected=False)])
ON_OK = run(runner.PASSED, [process(), process(installed=False, command="ansible-vault", ran_plays=False,
                                              expected=False)])  # fmt: skip


def test_passing_both_ways_with_the_accelerator_on_is_ok():
    assert runner.judge(row(OFF_OK, ON_OK)) == ("ok", [], [])


@pytest.mark.parametrize("on_outcome", [runner.FAILED, runner.TIMEOUT, runner.SKIPPED])
def test_passing_off_and_not_on_fails(on_outcome):
    verdict, problems, _ = runner.judge(row(OFF_OK, run(on_outcome, ON_OK["processes"])))
    assert verdict == "FAIL"
    assert problems == [f"t: passes off, {on_outcome} on"]


@pytest.mark.parametrize("off_outcome", [runner.FAILED, runner.TIMEOUT])
def test_failing_off_is_reported_not_failed(off_outcome):
    assert runner.judge(row(run(off_outcome, []), run(runner.FAILED, []))) == (f"{off_outcome} off", [], [])


def test_excluded_by_ansible_test_or_by_the_runner_is_a_skip():
    assert runner.judge(row(run(runner.SKIPPED, []), run(runner.SKIPPED, []))) == ("skipped by ansible-test", [], [])
    assert runner.judge({"target": "t", "skip": "destructive", "runs": {}}) == ("skipped", [], [])


@pytest.mark.parametrize("route", ["install", "callback"])
def test_on_without_the_accelerator_proves_nothing(route):
    on = run(runner.PASSED, [process(installed=False, expected=route == "install")], route=route)
    verdict, problems, _ = runner.judge(row(OFF_OK, on))
    assert verdict == "FAIL"
    assert problems[-1] == "t: no ansible command had the accelerator on in the 'on' run"


def test_the_install_route_needs_every_command_it_wraps_installed():
    on = run(runner.PASSED, [process(), process(installed=False)])
    verdict, problems, _ = runner.judge(row(OFF_OK, on))
    assert verdict == "FAIL"
    assert problems == ["t: 1 ansible command(s) did not install the accelerator: ansible-playbook site.yml"]


def test_the_callback_route_notes_commands_that_never_switched_on():
    on = run(runner.PASSED, [process(expected=False), process(installed=False, expected=False)], route="callback")
    verdict, problems, notes = runner.judge(row(OFF_OK, on))
    assert (verdict, problems) == ("ok", [])
    assert notes == ["t: 1 ansible command(s) loaded the task queue manager without switching the accelerator "
                     "on: ansible-playbook site.yml"]  # fmt: skip


def test_off_must_be_reached_by_the_hook_and_stay_off():
    assert "no ansible command recorded" in runner.judge(row(run(runner.PASSED, []), ON_OK))[1][0]
    assert "installed in the 'off' run" in runner.judge(row(run(runner.PASSED, [process()]), ON_OK))[1][0]


# --- the records -----------------------------------------------------------------------------


def test_records_sum_the_stats_of_every_process(tmp_path):
    (tmp_path / "process-1-a.json").write_text(json.dumps(process()))
    (tmp_path / "process-2-b.json").write_text("{not json")
    for name, runner_native in (("stats-1-a.json", 3), ("stats-2-b.json", 4)):
        report = {"installed": True, "run": {"paths": {
            "runner": {"native": runner_native, "fallback": {"runner starting": 1}},
            "finder": {"native": 2, "fallback": {}, "events": {"scan_cache_hit": 9}},
        }}}  # fmt: skip
        (tmp_path / name).write_text(json.dumps(report))
    records = runner.read_records(str(tmp_path))
    assert len(records["processes"]) == 1
    assert records["stats_files"] == 2
    assert records["native"] == {"runner": 7, "finder": 4}
    assert records["fallback"] == {"runner": {"runner starting": 2}}


def _hook_run(tmp_path, argv0: str, mode: str, via_link: bool = False, route: str = "install",
              env: dict | None = None, install_commands: tuple = ()) -> list[dict]:
    """Run the hook as ``sitecustomize`` in a fresh interpreter whose argv[0] is ``argv0``
    (with ``via_link``, a link of that name to ansible-test's injector script); its records,
    each with the environment the command saw (``env_seen``)."""
    lib = tmp_path / "lib"
    records = tmp_path / "records"
    lib.mkdir()
    records.mkdir()
    (lib / "sitecustomize.py").write_text(open(runner.HOOK_SOURCE).read())
    config = {"mode": mode, "route": route, "records": str(records), "install_commands": list(install_commands),
              "callback_plugins": "/plugins/callback"}  # fmt: skip
    (lib / runner.HOOK_CONFIG).write_text(json.dumps(config))
    script = tmp_path / "bin" / ("python.py" if via_link else argv0)
    script.parent.mkdir(exist_ok=True)
    script.write_text("import json, os\nprint(json.dumps(dict(os.environ)))\n")
    if via_link:
        os.symlink(script.name, tmp_path / "bin" / argv0)
        script = tmp_path / "bin" / argv0
    clean = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    completed = subprocess.run([sys.executable, str(script), "-i", "inv"], env={**clean, **(env or {}),
                               "PYTHONPATH": str(lib)}, check=True, capture_output=True, text=True)  # fmt: skip
    seen = json.loads(completed.stdout)
    return [{**json.loads(p.read_text()), "env_seen": seen} for p in sorted(records.glob("process-*.json"))]


def test_the_hook_records_ansible_commands(tmp_path):
    (record,) = _hook_run(tmp_path, "ansible-playbook", "off")
    assert record["command"] == "ansible-playbook" and record["argv"] == ["-i", "inv"]
    assert record["stats"] is None
    assert record["ran_plays"] is False and record["installed_at_exit"] is False
    assert record["install_expected"] is False


def test_the_hook_gives_each_command_its_own_stats_file_when_on(tmp_path):
    (record,) = _hook_run(tmp_path, "ansible", "on")
    assert os.path.dirname(record["stats"]) == str(tmp_path / "records")
    assert os.path.basename(record["stats"]).startswith("stats-")
    assert record["env_seen"]["ANSIBLE_ACCEL_STATS"] == record["stats"]
    assert "ANSIBLE_CALLBACKS_ENABLED" not in record["env_seen"]


def test_the_install_route_switches_the_accelerator_on_in_the_commands_it_wraps(tmp_path):
    (record,) = _hook_run(tmp_path, "ansible-playbook", "on", install_commands=("ansible-playbook",))
    assert record["install_expected"] is True
    assert record["installed_at_start"] is True and record["installed_at_exit"] is True
    status = json.loads(open(record["stats"]).read())
    assert status["installed"] is True


def test_the_install_route_leaves_other_commands_alone(tmp_path):
    (record,) = _hook_run(tmp_path, "ansible-vault", "on", install_commands=("ansible-playbook",))
    assert record["install_expected"] is False and record["installed_at_start"] is False


def test_the_callback_route_adds_to_the_lists_already_set(tmp_path):
    env = {"ANSIBLE_CALLBACKS_ENABLED": "junit", "ANSIBLE_CALLBACK_PLUGINS": "/mine"}
    (record,) = _hook_run(tmp_path, "ansible-playbook", "on", route="callback", env=env)
    seen = record["env_seen"]
    assert seen["ANSIBLE_CALLBACKS_ENABLED"] == "junit,ansible_accel"
    assert seen["ANSIBLE_CALLBACK_PLUGINS"] == os.pathsep.join(["/mine", "/plugins/callback"])
    assert seen["ANSIBLE_LOAD_CALLBACK_PLUGINS"] == "True"
    assert record["installed_at_start"] is False


def test_the_callback_route_sets_the_lists_when_unset(tmp_path):
    (record,) = _hook_run(tmp_path, "ansible", "on", route="callback", env={"ANSIBLE_LOAD_CALLBACK_PLUGINS": "0"})
    seen = record["env_seen"]
    assert seen["ANSIBLE_CALLBACKS_ENABLED"] == "ansible_accel"
    assert seen["ANSIBLE_CALLBACK_PLUGINS"] == "/plugins/callback"
    assert seen["ANSIBLE_LOAD_CALLBACK_PLUGINS"] == "0"


def test_the_hook_leaves_other_processes_alone(tmp_path):
    assert _hook_run(tmp_path, "AnsiballZ_ping.py", "on") == []


def test_the_hook_skips_ansible_tests_injector_stage(tmp_path):
    assert _hook_run(tmp_path, "ansible-playbook", "on", via_link=True) == []


# --- the tree ansible-test tests -------------------------------------------------------------


def fake_sdist(root) -> str:
    (root / "lib" / "ansible" / "cli").mkdir(parents=True)
    (root / "lib" / "ansible" / "cli" / "playbook.py").write_text("# playbook\n")
    stub = root / runner.TEST_CLI_STUB
    stub.parent.mkdir(parents=True)
    stub.write_text("# stub\n")
    (root / "test" / "results").mkdir()
    (root / "test" / "integration" / "targets" / "ping" / "results").mkdir(parents=True)
    (root / ".complete").write_text("")
    return str(root)


def test_the_tree_is_a_source_checkout_with_its_own_bin(tmp_path):
    tree = runner.source_tree(fake_sdist(tmp_path / "sdist"), "2.0.0", str(tmp_path / "cache"))
    assert tree == str(tmp_path / "cache" / "integration" / "ansible_core-2.0.0")
    assert os.access(os.path.join(tree, "bin", "ansible-test"), os.X_OK)
    assert open(os.path.join(tree, "bin", "ansible-playbook")).read() == "# playbook\n"
    assert not os.path.exists(os.path.join(tree, "test", "results"))
    assert os.path.isdir(os.path.join(tree, "test", "integration", "targets", "ping", "results"))
    assert os.path.isfile(os.path.join(tree, ".complete"))
    # made once: a second call finds it
    assert runner.source_tree("/nonexistent", "2.0.0", str(tmp_path / "cache")) == tree


def test_the_hook_goes_in_and_out(tmp_path):
    tree = tmp_path / "tree"
    (tree / "lib").mkdir(parents=True)
    runner.write_hook(str(tree), runner.hook_config("on", "install", "/r"))
    assert (tree / "lib" / "sitecustomize.py").read_text() == open(runner.HOOK_SOURCE).read()
    config = json.loads((tree / "lib" / runner.HOOK_CONFIG).read_text())
    assert config["mode"] == "on" and "ansible-playbook" in config["install_commands"]
    assert os.path.isfile(os.path.join(config["callback_plugins"], "ansible_accel.py"))
    runner.write_hook(str(tree), None)
    assert os.listdir(tree / "lib") == []
