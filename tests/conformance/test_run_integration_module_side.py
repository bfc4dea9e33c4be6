"""run_integration.py --module-side: the module-side counts of a target's stats files are added
up, and a target that passes on without native module-side counts fails.  (No ansible-test.)"""

from __future__ import annotations

import importlib.util
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location("ansible_accel_run_integration_ms", os.path.join(HERE, "run_integration.py"))
runner = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = runner
_spec.loader.exec_module(runner)


def _stats(path, module_side):
    path.write_text(json.dumps({"run": {"paths": {}}, "module_side": module_side}))


def test_the_stats_files_module_side_counts_are_added_up(tmp_path):
    _stats(tmp_path / "stats-1.json", {
        "modules": 3, "fallback": {"ansible-accel not importable by this interpreter": 1},
        "argspec": {"native": 2, "fallback": {"spec: options on an option that is not a dict": 1}},
        "no_log": {"native": 5, "fallback": {}}, "masking": {"native": 0, "fallback": {}},
    })  # fmt: skip
    _stats(tmp_path / "stats-2.json", {"modules": 1, "fallback": {}, "argspec": {"native": 1, "fallback": {}},
                                       "no_log": {"native": 2, "fallback": {}}})  # fmt: skip
    _stats(tmp_path / "stats-3.json", {})  # a process whose runners ran nothing
    counts = runner.read_records(str(tmp_path))["module_side"]
    assert counts == {
        "modules": 4,
        "native": {"argspec": 3, "no_log": 7, "masking": 0},
        "fallback": {"argspec": {"spec: options on an option that is not a dict": 1}},
        "unused": {"ansible-accel not importable by this interpreter": 1},
    }


def _row(native: dict, outcome=runner.PASSED) -> dict:
    on = {"outcome": outcome, "module_side": {"modules": 2, "native": native, "fallback": {}, "unused": {}}}
    return {"target": "argspec", "skip": None, "runs": {"on": on}, "verdict": "ok", "problems": [], "notes": []}


def test_a_passing_target_needs_native_module_side_counts(monkeypatch):
    for version, second in (("2.21.5", "no_log"), ("2.22.0rc1", "masking")):
        monkeypatch.setattr(runner.metadata, "version", lambda name, v=version: v)
        row = _row({"argspec": 1, second: 4})
        runner.module_side_problems(row)
        assert (row["verdict"], row["problems"]) == ("ok", []), version
        row = _row({"argspec": 1, "no_log": 4, "masking": 4, second: 0})
        runner.module_side_problems(row)
        assert row["verdict"] == "FAIL" and f"no module-side native {second}" in row["problems"][0], version
        row = _row({"argspec": 0, "no_log": 0, "masking": 0})
        runner.module_side_problems(row)
        assert f"argspec or {second}" in row["problems"][0], version


def test_a_target_failing_on_is_judged_by_the_on_off_rule_only():
    row = _row({}, outcome=runner.FAILED)
    runner.module_side_problems(row)
    assert row["problems"] == []
