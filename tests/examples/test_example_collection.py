"""The example collection (examples/): its action plugin, run by a real ansible-playbook of this
environment, gives the same task results with ansible-accel importable (the plugin then calls
its public API) and with ansible-accel made unimportable in the controller and its workers
(the plugin then calls ansible-core's own functions)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
CALLBACKS = Path(__file__).resolve().parent / "callback"
PLAYBOOK_BIN = Path(sys.executable).parent / "ansible-playbook"

# A sitecustomize for the controller (the workers are its forks): a meta-path finder that
# refuses ansible_accel and its submodules, as if the package were not installed.
BLOCKER = textwrap.dedent(
    """\
    import sys


    class _NoAnsibleAccel:
        def find_spec(self, name, path=None, target=None):
            if name == "ansible_accel" or name.startswith("ansible_accel."):
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None


    sys.meta_path.insert(0, _NoAnsibleAccel())
    """
)


def _run(tmp_path: Path, label: str, *, blocked: bool) -> list:
    work = tmp_path / label
    work.mkdir()
    env = {key: value for key, value in os.environ.items() if not key.startswith(("ANSIBLE_", "PYTHONPATH"))}
    results = work / "results.json"
    env.update(
        ANSIBLE_COLLECTIONS_PATH=str(EXAMPLES / "collections"),
        ANSIBLE_CALLBACK_PLUGINS=str(CALLBACKS),
        ANSIBLE_CALLBACKS_ENABLED="example_results",
        ANSIBLE_LOCAL_TEMP=str(work / "tmp"),
        ANSIBLE_HOME=str(work / "home"),
        ANSIBLE_LOCALHOST_WARNING="0",
        ANSIBLE_NOCOLOR="1",
        EXAMPLE_RESULTS_FILE=str(results),
    )
    if blocked:
        shim = work / "shim"
        shim.mkdir()
        (shim / "sitecustomize.py").write_text(BLOCKER)
        env["PYTHONPATH"] = str(shim)
    done = subprocess.run(
        [str(PLAYBOOK_BIN), "-i", "localhost,", str(EXAMPLES / "playbook.yml")],
        cwd=work, env=env, capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(results.read_text())


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list]:
    tmp_path = tmp_path_factory.mktemp("example")
    return {"importable": _run(tmp_path, "importable", blocked=False), "blocked": _run(tmp_path, "blocked", blocked=True)}


def _audits(records: list) -> list:
    return [record for record in records if "accelerated" in record[3]]


def test_the_blocker_makes_ansible_accel_unimportable(tmp_path: Path) -> None:
    (tmp_path / "sitecustomize.py").write_text(BLOCKER)
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    done = subprocess.run(
        [sys.executable, "-c", "import ansible_accel"], env=env, capture_output=True, text=True, timeout=60,
    )
    assert done.returncode != 0 and "No module named 'ansible_accel'" in done.stderr


def test_results_are_the_same_with_and_without_ansible_accel(runs: dict[str, list]) -> None:
    importable, blocked = _audits(runs["importable"]), _audits(runs["blocked"])
    assert [r[0] for r in importable] == [
        "Valid arguments, a secret masked, imports scanned, files zipped",
        "A module of ansible-core scanned",
        "Invalid arguments fail with ansible-core's messages",
    ]
    # Every record but the plugin's own report of whether the API was there.
    for on, off in zip(importable, blocked, strict=True):
        on_result, off_result = dict(on[3]), dict(off[3])
        on_result.pop("accelerated")
        off_result.pop("accelerated")
        assert (on[:3], on_result) == (off[:3], off_result)
    assert runs["importable"][-1][:3] == runs["blocked"][-1][:3]  # the debug task
    assert runs["importable"][-1][3]["msg"] == runs["blocked"][-1][3]["msg"]


def test_the_results_hold_what_each_job_did(runs: dict[str, list]) -> None:
    valid, core, invalid = _audits(runs["importable"])
    assert valid[2] == "ok" and valid[3]["params"]["count"] == 3
    assert "s3cr3t-t0ken" not in json.dumps(valid[3]["params"]) + valid[3]["message"]
    assert "ansible_collections.accel_examples.toolkit.plugins.module_utils.greeting.greet" in valid[3]["imports"]
    assert valid[3]["optional_imports"] == ["ansible.module_utils.common.text.converters.to_text"]
    assert valid[3]["archive_names"] == ["a.txt", "b.txt"]
    assert "ansible.module_utils.basic.AnsibleModule" in core[3]["imports"]
    assert invalid[2] == "failed" and "missing required arguments: name" in invalid[3]["msg"]


def test_the_api_answered_natively_only_where_importable(runs: dict[str, list]) -> None:
    valid = _audits(runs["importable"])[0][3]["accelerated"]
    # validate, scan_imports and build_zip once each; the masking of the secret natively,
    # through registered-secret masking (2.22) or the no_log path (2.19-2.21).
    assert valid["argspec"] == 1 and valid["finder"] == 1 and valid["payload"] == 1, valid
    assert valid["masking"] + valid["no_log"] >= 2, valid
    assert all(record[3]["accelerated"] is False for record in _audits(runs["blocked"]))
