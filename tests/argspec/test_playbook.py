"""Role argument specs (meta/argument_specs.yml) and the validate_argument_spec action in a
real ansible-playbook run, local connection, good and bad inputs: the printed output is the
same with the accelerator off and on, and the controller's and workers' counters show the
argspec path answered natively, with no fallback.

Controller data reaches the validator as ansible-core's tagged types (origin-tagged dict,
list, str, int subclasses from YAML and templating); the action plugins debug and assert
validate their own arguments with callables as type (ActionBase.validate_argument_spec).
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import subprocess
import sys

import pytest

HERE = pathlib.Path(__file__).parent / "playbook"
BIN = pathlib.Path(sys.executable).parent


def _run(tmp_path, accel: bool):
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    stats = tmp_path / f"stats-{accel}.json"
    # The bool error lists a set whose order follows the hash seed: the same seed both times.
    env.update(ANSIBLE_CONFIG=str(HERE / "ansible.cfg"), ANSIBLE_NOCOLOR="1", PYTHONHASHSEED="0",
               ANSIBLE_ACCEL_STATS=str(stats), ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"))
    command = [str(BIN / "ansible-playbook"), "-i", "inventory.ini", "playbook.yml"]
    if accel:
        command = [str(BIN / "ansible-accel"), "ansible-playbook", "-i", "inventory.ini", "playbook.yml"]
    done = subprocess.run(command, cwd=HERE, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, timeout=600)
    (tmp_path / f"output-{accel}.log").write_text(done.stdout)
    counters = json.loads(stats.read_text()) if accel else None
    return done.returncode, done.stdout, counters


def _lines(output: str) -> list[str]:
    """Printed lines, sorted: hosts finish in any order, and 'included: ... for' lists them
    in that order."""
    lines = []
    for line in output.splitlines():
        included = re.match(r"(included: .* for )(.*)$", line)
        lines.append(included[1] + ", ".join(sorted(included[2].split(", "))) if included else line)
    return sorted(lines)


def test_role_and_action_specs_same_output_and_native(tmp_path):
    try:
        import ansible.module_utils._internal._datatag  # noqa: F401
    except ImportError:
        pytest.skip("no tagged controller data before ansible-core 2.19")
    rc_off, out_off, _ = _run(tmp_path, accel=False)
    rc_on, out_on, stats = _run(tmp_path, accel=True)
    assert rc_off == 0, out_off
    assert (rc_on, _lines(out_on)) == (rc_off, _lines(out_off))
    # Good and bad inputs both reached ansible-core's validation.
    assert "The arg spec validation passed" in out_off
    assert "value of checked_mode must be one of: dev, prod, got: staging" in out_off
    assert "Supported parameters include: groups, name, shell (login_shell)" in out_off
    assert "Validation of arguments failed" in out_off
    argspec = stats["run"]["paths"]["argspec"]
    assert stats["run"]["processes"] > 1
    assert argspec["native"] >= 40, argspec
    assert not argspec["fallback"], argspec
