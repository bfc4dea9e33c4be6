"""``benches/profile_stages.py``: stages told apart by where a stack is, and a small real run
whose stages add up to what the processes measured, with results identical off and on."""

from __future__ import annotations

import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)

from benches import profile_stages  # noqa: E402


def _frame_in(calls: list[tuple[str, str]]):
    """The frame of the innermost of nested calls, each (file name, function name)."""
    following = None
    for filename, function in reversed(calls):
        body = "    return following()\n" if following else "    return sys._getframe()\n"
        namespace = {"sys": sys, "following": following}
        exec(compile(f"def {function}():\n{body}", filename, "exec"), namespace)  # noqa: S102 - our own two lines
        following = namespace[function]
    return following()


def test_the_first_stage_on_the_stack_wins():
    controller = profile_stages.Classifier(profile_stages.CONTROLLER_STAGES, "other")
    workers = profile_stages.Classifier(profile_stages.WORKER_STAGES, "other")
    strategy = "/x/ansible/plugins/strategy/__init__.py"
    tqm = "/x/ansible/executor/task_queue_manager.py"
    # a callback fired while queueing a task is a callback
    stage, leaf = controller.stage_of_frame(_frame_in([(strategy, "_queue_task"), (tqm, "send_callback")]))
    assert stage == "callbacks" and leaf[2] == "send_callback"
    assert controller.stage_of_frame(_frame_in([(strategy, "_queue_task"), ("/x/y.py", "helper")]))[0] == "queueing"
    # templating inside post_validate is templating; post_validate's own work is post_validate
    templar = "/x/ansible/_internal/_templating/_engine.py"
    assert workers.stage_of_frame(_frame_in([("/x/ansible/playbook/base.py", "post_validate"), (templar, "template")]))[0] == "templating"
    assert workers.stage_of_frame(_frame_in([("/x/ansible/playbook/base.py", "post_validate"), ("/x/z.py", "f")]))[0] == "post_validate"
    # a plugin looked up while building a payload is payload building
    action = "/x/ansible/plugins/action/__init__.py"
    loader = "/x/ansible/plugins/loader.py"
    assert workers.stage_of_frame(_frame_in([(action, "_configure_module"), (loader, "find_plugin")]))[0] == "payload build"
    assert workers.stage_of_frame(_frame_in([(action, "run"), (loader, "find_plugin")]))[0] == "plugin lookup and load"
    assert workers.stage_of_frame(_frame_in([("/x/elsewhere.py", "f")]))[0] == "other"


def test_a_small_run_adds_up_and_keeps_the_results(tmp_path):
    report = tmp_path / "profile.json"
    done = subprocess.run([sys.executable, "-m", "benches.profile_stages", "--python", sys.executable, "--playbooks", "cheap",
                           "--cheap-hosts", "2", "--cheap-forks", "2", "--modes", "off,runner", "--json", str(report)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "Results: identical" in done.stdout and "| **controller: sampled** |" in done.stdout
    assert "| workers: minor page faults (count, per task-host) |" in done.stdout
    (playbook,) = json.loads(report.read_text())
    assert playbook["task_hosts"] == 10 and not playbook["problems"]
    for run in playbook["runs"]:
        assert run["returncode"] == 0 and run["workers"]["count"] >= 8  # the last workers may be ended early
        for kind in ("controller", "workers"):
            sampled, measured = sum(run[kind]["stages"].values()), run[kind]["cpu"]
            # every bit of CPU is charged to a stage, or is the sampler's own
            assert abs(measured - sampled - run[kind]["sampler_cpu"]) < 0.15 * measured, (kind, sampled, measured)
            # the kernel's share is part of the process CPU, and a forked process faults pages in
            assert 0 < run[kind]["system_cpu"] <= measured + 0.01, (kind, run[kind]["system_cpu"], measured)
            assert run[kind]["minor_faults"] > 0, kind
        # Samples land in the task's own stages, not only in a worker's start and end (a stage
        # of a few ms in all may get no sample of ~4 ms: any two of them will do).
        task_stages = ("connection/exec", "payload build", "templating", "plugin lookup and load", "post_validate",
                       "plugin options and config", "result shipping", "task executor (other)", "action plugin (other)")
        assert sum(run["workers"]["stages"].get(stage, 0) > 0 for stage in task_stages) >= 2, run["workers"]["stages"]
        controller = run["controller"]["stages"]
        assert controller.get("fork (worker start in the controller)", 0) + controller.get("queueing", 0) > 0, controller
