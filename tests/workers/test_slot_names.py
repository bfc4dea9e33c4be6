"""Slot names for pickling (``copyreg._slotnames``) computed in the controller before the fork:
a worker pickling its result no longer computes them; with the path off, every worker does."""

from __future__ import annotations

import json
import os
import subprocess
import sys

SCRIPT = '''
import copyreg, json, os, sys
work, accel = sys.argv[1], sys.argv[2] == "on"
from ansible.executor.process import worker
run = worker.WorkerProcess._run

def _run(self):
    # Written at once: the controller may end a worker as soon as its result has arrived.
    computed = []
    record = os.path.join(work, f"worker-{os.getpid()}.json")
    def write():
        with open(record, "w") as f:
            json.dump(computed, f)
    slotnames = copyreg._slotnames
    def recording(cls):
        computed.append(cls.__qualname__)
        write()
        return slotnames(cls)
    copyreg._slotnames = recording
    write()
    return run(self)

worker.WorkerProcess._run = _run
if accel:
    import ansible_accel
    ansible_accel.install()
from ansible.cli.playbook import main
sys.argv = ["ansible-playbook", "-i", os.path.join(work, "hosts"), os.path.join(work, "play.yml")]
sys.exit(main())
'''

PLAY = """\
- hosts: all
  gather_facts: false
  tasks:
    - command: "true"
    - set_fact: {seen: "{{ inventory_hostname }}"}
    - debug: {var: seen}
    - ping:
"""


def _computed(tmp_path, accel: bool, **env) -> list[list[str]]:
    work = tmp_path / ("on" if accel else "off")
    work.mkdir()
    (work / "play.yml").write_text(PLAY)
    (work / "hosts").write_text("".join(f"s{i} ansible_connection=local ansible_python_interpreter={sys.executable}\n"
                                        for i in range(2)))
    run_env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    run_env.update(ANSIBLE_NOCOLOR="1", **env)
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(work), "on" if accel else "off"], env=run_env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return [json.loads(path.read_text()) for path in sorted(work.glob("worker-*.json"))]


def test_workers_pickle_their_results_without_computing_slot_names(tmp_path):
    on = _computed(tmp_path, accel=True)
    assert len(on) == 8 and all(computed == [] for computed in on), on


def test_with_the_path_off_every_worker_computes_them(tmp_path):
    off = _computed(tmp_path, accel=True, ANSIBLE_ACCEL_WORKERS="0")
    assert len(off) == 8 and all("TemplateEngine" in computed for computed in off), off
