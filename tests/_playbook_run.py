"""One real ``ansible-playbook`` run on local host aliases, plain or through ``ansible-accel``,
with the end-to-end benchmark's results callback and the accelerator's stats file: what the
playbook-level tests compare."""

from __future__ import annotations

import json
import os
import subprocess
import sys

BIN = os.path.dirname(sys.executable)
RESULTS_CALLBACK = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "benches", "e2e", "callback_plugins")


def run_playbook(work, play: str, hosts: list[str], accel: bool, env: dict[str, str] | None = None,
                 args: tuple[str, ...] = (), *, results: bool = True
                 ) -> tuple[subprocess.CompletedProcess, dict | None, dict | None]:
    """Run ``play`` in ``work`` (a pathlib directory, also the working directory) on ``hosts``
    (local connection, this interpreter), with ``env`` added to an environment cleared of
    ``ANSIBLE_*`` and ``args`` after the playbook.  Fails unless the run succeeds; gives the
    completed process, the task results (``results``: without it the results callback is not
    enabled, and None) and (``accel``) the stats."""
    (work / "play.yml").write_text(play)
    (work / "hosts").write_text("".join(f"{host} ansible_connection=local ansible_python_interpreter={sys.executable}\n"
                                        for host in hosts))
    results_file, stats = work / "results.json", work / "stats.json"
    results_file.unlink(missing_ok=True)
    stats.unlink(missing_ok=True)
    run_env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    if results:
        run_env.update(ANSIBLE_CALLBACK_PLUGINS=RESULTS_CALLBACK, ANSIBLE_CALLBACKS_ENABLED="e2e_results",
                       E2E_RESULTS_FILE=str(results_file))
    run_env.update(ANSIBLE_ACCEL_STATS=str(stats), ANSIBLE_NOCOLOR="1", **(env or {}))
    command = [os.path.join(BIN, "ansible-accel"), "ansible-playbook"] if accel else [os.path.join(BIN, "ansible-playbook")]
    done = subprocess.run([*command, "-i", str(work / "hosts"), str(work / "play.yml"), *args], env=run_env, cwd=work,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return (done, json.loads(results_file.read_text()) if results else None,
            json.loads(stats.read_text()) if accel else None)
