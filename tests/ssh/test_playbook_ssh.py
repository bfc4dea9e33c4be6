"""Real ``ansible-playbook`` runs over the private sshd (ansible-core's ``ssh`` connection),
accelerator off and on, pipelining off and on: every task result of every host is the same.

Three host aliases on 127.0.0.1-3, each with its own SSH connection and ControlPersist master,
the first on this environment's Python and the others on the other test environments' base
Pythons (what a managed node has: a Python, nothing installed)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import ansible_accel
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
BIN = os.path.dirname(sys.executable)
RESULTS_CALLBACK = os.path.join(os.path.dirname(os.path.dirname(HERE)), "benches", "e2e", "callback_plugins")

PLAY = """\
- hosts: all
  gather_facts: false
  vars:
    d: "{{ work }}/{{ inventory_hostname }}"
    items: [one, two]
  tasks:
    - file: {path: "{{ d }}", state: directory, mode: "0755"}
    - ping: {data: marker}
    - command: echo hello
      environment: {GREETING: "it's a b"}
    - shell: "echo $GREETING | tr a-z A-Z; echo oops >&2"
      environment: {GREETING: quoted}
    - copy: {content: "one\\ntwo\\n", dest: "{{ d }}/f.txt", mode: "0644"}
    - copy: {content: "one\\ntwo\\n", dest: "{{ d }}/f.txt", mode: "0644"}
    - template: {src: "{{ templates }}/motd.j2", dest: "{{ d }}/motd"}
    - stat: {path: "{{ d }}/motd"}
    - stat: {path: "{{ d }}/missing"}
    - lineinfile: {path: "{{ d }}/f.txt", line: three}
    - slurp: {src: "{{ d }}/f.txt"}
    - setup: {gather_subset: ["!all", "!min", "platform", "python"]}
    - command: "cat {{ d }}/missing"
      ignore_errors: true
    - file: {path: "{{ d }}/f.txt", state: directory}
      ignore_errors: true
    - shell: "echo the secret is {{ secret }}"
      no_log: true
    - command: "false"
      no_log: true
      ignore_errors: true
    - copy: {content: "{{ secret }}", dest: "{{ d }}/secret", mode: "0600"}
      no_log: true
    - file: {path: "{{ d }}", state: absent}
"""

_NAMES = [
    (re.compile(r"ansible-tmp-[0-9.]+-[0-9]+-[0-9]+"), "ansible-tmp-X"),
    (re.compile(r"ansible_[a-z0-9_.]+_payload[a-z0-9_]*"), "ansible_X_payload"),
    (re.compile(r"tmp[a-z0-9_]{8}"), "tmpX"),
]
# Values that differ between two runs by nature: times, the work directory's inode, names of
# temporary files.
_VOLATILE_KEYS = {"_original_basename", "start", "end", "delta", "atime", "ctime", "mtime", "inode", "version"}


def _normalise(value):
    if isinstance(value, dict):
        return {k: "X" if k in _VOLATILE_KEYS else _normalise(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_normalise(v) for v in value]
    if isinstance(value, str):
        for pattern, replacement in _NAMES:
            value = pattern.sub(replacement, value)
    return value


def _differences(a, b, where="") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        return [d for k in sorted(set(a) | set(b)) for d in _differences(a.get(k), b.get(k), f"{where}/{k}")]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in _differences(x, y, f"{where}[{i}]")]
    return [] if a == b else [f"{where}: {a!r} != {b!r}"]


def run_playbook(sshd, interpreters, tmp_path, accel: bool, pipelining: bool, extra_env: dict | None = None,
                 play_text: str = PLAY, verbose: bool = False, remote_tmp: str | None = None,
                 callback_settings: str | None = None) -> tuple[dict, dict | None, str]:
    """One run over ``sshd``; returns the normalised results, the accelerator's counters, the output.
    With ``callback_settings`` (lines of an ``ansible.cfg``), the accelerator is switched on by
    its callback plugin in a plain ``ansible-playbook``, configured by them."""
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    remote_tmp = remote_tmp or tmp_path / "remote-tmp"
    play = tmp_path / "play.yml"
    play.write_text(play_text)
    inventory = tmp_path / "hosts"
    inventory.write_text(sshd.inventory(sshd.aliases(3, interpreters), remote_tmp=str(remote_tmp)))
    stats = tmp_path / "stats.json"
    stats.unlink(missing_ok=True)
    results = tmp_path / "results.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env.update(ANSIBLE_CALLBACK_PLUGINS=RESULTS_CALLBACK, ANSIBLE_CALLBACKS_ENABLED="e2e_results",
               E2E_RESULTS_FILE=str(results), ANSIBLE_PIPELINING=str(pipelining), ANSIBLE_NOCOLOR="1",
               ANSIBLE_FORKS="3", ANSIBLE_INJECT_INVOCATION="True", ANSIBLE_RETRY_FILES_ENABLED="False")
    if accel:
        env["ANSIBLE_ACCEL_STATS"] = str(stats)
    env.update(extra_env or {})
    command = [os.path.join(BIN, "ansible-accel"), "ansible-playbook"] if accel else [os.path.join(BIN, "ansible-playbook")]
    if accel and callback_settings is not None:
        config = tmp_path / "ansible.cfg"
        config.write_text(callback_settings)
        plugins = os.path.join(os.path.dirname(ansible_accel.__file__), "ansible_plugins", "callback")
        env.update(ANSIBLE_CONFIG=str(config), ANSIBLE_CALLBACK_PLUGINS=f"{RESULTS_CALLBACK}:{plugins}",
                   ANSIBLE_CALLBACKS_ENABLED="e2e_results,ansible_accel")
        command = [os.path.join(BIN, "ansible-playbook")]
    done = subprocess.run([*command, "-i", str(inventory), str(play), "-e", f"work={work}",
                           "-e", f"templates={os.path.join(HERE, 'templates')}", "-e", "secret=s3cr3t-value",
                           *(["-v"] if verbose else [])],
                          check=False, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    report = _normalise(json.loads(results.read_text()))
    return report, (json.loads(stats.read_text()) if accel else None), done.stdout


@pytest.mark.parametrize("pipelining", [False, True], ids=["files", "pipelining"])
def test_results_are_the_same_over_ssh(sshd, host_interpreters, tmp_path, pipelining):
    plain, _, plain_out = run_playbook(sshd, host_interpreters, tmp_path, accel=False, pipelining=pipelining)
    # The controller-side paths alone: the remote runner (on by default) is tried in
    # tests/ssh/test_remote_runner.py.
    fast, stats, fast_out = run_playbook(sshd, host_interpreters, tmp_path, accel=True, pipelining=pipelining,
                                         extra_env={"ANSIBLE_ACCEL_REMOTE_RUNNER": "0"})
    assert fast == plain, "\n".join(_differences(plain, fast)[:20])
    assert not stats["remote_runner"]["active"], stats["remote_runner"]
    assert stats["remote_runner"]["reason"] == "switched off by ANSIBLE_ACCEL_REMOTE_RUNNER=0", stats["remote_runner"]
    # The run really reached the hosts over SSH, on their own interpreters, and no_log held.
    text = json.dumps(plain)
    assert "s3cr3t-value" not in text and "s3cr3t-value" not in plain_out + fast_out
    assert "the output has been hidden" in text
    hosts = plain["hosts"]
    assert sorted(hosts) == ["h01", "h02", "h03"], list(hosts)
    for index, name in enumerate(sorted(hosts)):
        facts = next(t["result"]["ansible_facts"] for t in hosts[name] if t["action"] in ("setup", "ansible.builtin.setup"))
        wanted = host_interpreters[index % len(host_interpreters)]
        assert facts["ansible_python"]["executable"] == wanted, (name, facts["ansible_python"]["executable"], wanted)
    assert stats["run"]["paths"]["finder"]["native"] > 0 and stats["run"]["paths"]["payload"]["native"] > 0, stats["run"]["paths"]
    # Once a host's master listened, its SSH commands opened their sessions there from the workers.
    client = stats["run"]["paths"]["ssh_client"]
    assert client["native"] > 0 and set(client["fallback"]) <= {"master: no master listening"}, client
    assert "changed=" in plain_out and plain_out.count("ok=") == fast_out.count("ok=")
    # No module process of the run is left on the "hosts" (the sshd's cgroup holds only its
    # ControlPersist connections' processes and the listener).
    leftover = [p for p in sshd.host_processes() if "python" in _cmd(p)]
    assert leftover == [], leftover


def _cmd(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""
