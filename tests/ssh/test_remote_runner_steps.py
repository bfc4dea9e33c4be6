"""With ansible-core's defaults (no pipelining) and the remote runner on, a module task's
``chmod`` of its script runs in the module's own SSH command (``ssh_steps``), and once the host
has a runner, its keeper takes the remote tmp's expansion, the ``mkdtemp``, the script's
transfer and the removal (``ssh_keeper_steps``): the same results and ``-v`` output as plain
ansible-core, the script and its directory with the same modes while the module runs, the
hosts' temporary directories gone afterwards, one SSH command per later module task, and the
tasks that cannot carry them (``become``) counted apart."""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import subprocess

import pytest

from test_playbook_ssh import BIN, _differences, run_playbook

HERE = os.path.dirname(os.path.abspath(__file__))
LIBRARY = os.path.join(HERE, "library")

PLAY = """\
- hosts: all
  gather_facts: false
  tasks:
    - ping:
    - accel_tmp_modes:
    - command: echo hello
    - command: "false"
      ignore_errors: true
    - copy: {content: "one\\n", dest: "{{ work }}/{{ inventory_hostname }}.txt", mode: "0644"}
    - accel_tmp_modes:
      become: true
      become_method: su
    - file: {path: "{{ work }}/{{ inventory_hostname }}.txt", state: absent}
"""


def _ansible_tmp_dirs(remote_tmp) -> list[str]:
    return [name for name in os.listdir(remote_tmp) if name.startswith("ansible-tmp-")]


def test_chmod_runs_in_the_module_command_with_the_same_results(sshd, host_interpreters, tmp_path, remote_tmp):
    env = {"ANSIBLE_LIBRARY": LIBRARY}
    plain, _, plain_out = run_playbook(sshd, host_interpreters, tmp_path, accel=False, pipelining=False,
                                       play_text=PLAY, remote_tmp=remote_tmp, extra_env=env, verbose=True)
    assert _ansible_tmp_dirs(remote_tmp) == []
    fast, stats, fast_out = run_playbook(sshd, host_interpreters, tmp_path, accel=True, pipelining=False,
                                         play_text=PLAY, remote_tmp=remote_tmp, extra_env=env, verbose=True)
    assert fast == plain, "\n".join(_differences(plain, fast)[:20])
    assert _ansible_tmp_dirs(remote_tmp) == []
    # What the module saw of its directory and script: the modes after ansible-core's sftp and
    # chmod (0700 both), the owner, the one file, the terminal on its standard streams.
    for name, tasks in plain["hosts"].items():
        seen = [t["result"] for t in tasks if t["action"] == "accel_tmp_modes"]
        assert seen[0]["dir"]["mode"] == "0o700" and seen[0]["files"] == {"AnsiballZ_accel_tmp_modes.py": {
            "mode": "0o700", "uid": os.geteuid(), "gid": os.getegid(), "type": "file"}}, (name, seen[0])
        assert seen[0]["tty"] == [True, True, True], seen[0]
        assert seen[0]["tmpdir"].startswith(remote_tmp + "/ansible-tmp-") and seen[0]["remote_tmp"] == remote_tmp, seen[0]
    remote = stats["run"]["paths"]["remote_runner"]
    print(f"\nremote runner: {json.dumps(remote, sort_keys=True)}")
    events = remote["events"]
    # ping, accel_tmp_modes, two commands, copy's stat and copy modules, file: 7 module tasks
    # per host go to the runner with their chmod folded; the become task's goes apart.
    assert events["steps: chmod in the module's command"] == remote["native"] == 3 * 7, remote
    assert events["steps apart: become"] == 3, remote
    assert remote["fallback"] == {"become": 3}, remote
    # Once a host's runner is ready (during the first task's module), its keeper takes the
    # steps: 7 directories per host (copy's two modules share one), the first made and its
    # script written by SSH commands; 9 files written (copy's source too), the first by sftp.
    assert events["keeper apart: no keeper on the host yet"] == 3 * 2, remote
    assert events["keeper: mkdtemp"] == 3 * 6, remote
    assert events["keeper: a file transferred"] == 3 * 8, remote
    assert events["keeper: the directory removed"] == 3 * 7, remote
    assert _lines(fast_out) == _lines(plain_out)


def _lines(out: str) -> list[str]:
    """The ``-v`` output's lines, in order but for the hosts' (three forks), times blanked."""
    out = re.sub(r"ansible-tmp-[0-9.]+-[0-9]+-[0-9]+", "ansible-tmp-X", out)
    return sorted(re.sub(r'"(start|end|delta|mtime|atime|ctime|inode)": ("[^"]*"|[0-9.]+)', r'"\1": X', out).splitlines())


@pytest.fixture
def home_tmp():
    """A remote tmp under the (one) user's home, ``~/NAME/tmp``, expanded by the hosts; removed
    at the end."""
    name = ".accel-steps-" + secrets.token_hex(4)
    yield f"~/{name}/tmp", os.path.join(os.path.expanduser("~"), name)
    shutil.rmtree(os.path.join(os.path.expanduser("~"), name), ignore_errors=True)


def test_mkdtemp_runs_with_the_expansion_with_the_same_results(sshd, host_interpreters, tmp_path, home_tmp):
    remote_tmp, made = home_tmp
    env = {"ANSIBLE_LIBRARY": LIBRARY}
    plain, _, plain_out = run_playbook(sshd, host_interpreters, tmp_path, accel=False, pipelining=False,
                                       play_text=PLAY, remote_tmp=remote_tmp, extra_env=env, verbose=True)
    assert os.listdir(os.path.join(made, "tmp")) == []
    shutil.rmtree(made)
    fast, stats, fast_out = run_playbook(sshd, host_interpreters, tmp_path, accel=True, pipelining=False,
                                         play_text=PLAY, remote_tmp=remote_tmp, extra_env=env, verbose=True)
    assert fast == plain, "\n".join(_differences(plain, fast)[:20])
    assert _lines(fast_out) == _lines(plain_out)
    assert [n for n in os.listdir(os.path.join(made, "tmp")) if not n.startswith("ansible-accel-")] == []
    assert oct(os.stat(made).st_mode & 0o777) == oct(os.stat(os.path.join(made, "tmp")).st_mode & 0o777) == "0o700"
    for name, tasks in fast["hosts"].items():
        seen = [t["result"] for t in tasks if t["action"] == "accel_tmp_modes"]
        assert seen[0]["dir"]["mode"] == "0o700" and seen[0]["files"]["AnsiballZ_accel_tmp_modes.py"]["mode"] == "0o700"
        assert seen[0]["tmpdir"].startswith(made + "/tmp/ansible-tmp-") and seen[0]["remote_tmp"] == remote_tmp, seen[0]
    events = stats["run"]["paths"]["remote_runner"]["events"]
    print(f"\nremote runner: {json.dumps(events, sort_keys=True)}")
    # Per host, the first task's expansion and mkdtemp run as SSH commands (the expansion not
    # known yet, no runner yet); the other six tasks' (the become task's too: neither runs with
    # become) are the keeper's.
    assert events["mkdtemp apart: the expansion not known yet"] == 3, events
    assert events["keeper: the remote tmp's expansion"] == events["keeper: mkdtemp"] == 3 * 6, events
    assert events["keeper apart: no keeper on the host yet"] == 3 * 3, events
    assert "steps: mkdtemp in the expansion's command" not in events
    # Without the keeper's steps, the expansion and the mkdtemp run in one SSH command.
    shutil.rmtree(made)
    apart, stats, apart_out = run_playbook(sshd, host_interpreters, tmp_path, accel=True, pipelining=False,
                                           play_text=PLAY, remote_tmp=remote_tmp, verbose=True,
                                           extra_env=dict(env, ANSIBLE_ACCEL_REMOTE_STEPS="0"))
    assert apart == plain, "\n".join(_differences(plain, apart)[:20])
    assert _lines(apart_out) == _lines(plain_out)
    events = stats["run"]["paths"]["remote_runner"]["events"]
    # Per host: ping (its expansion not known yet), accel_tmp_modes, two commands, copy (one
    # directory for its modules), file; the become task apart.
    assert events["mkdtemp apart: the expansion not known yet"] == 3, events
    assert events["steps: mkdtemp in the expansion's command"] == 3 * 5, events
    assert events["mkdtemp apart: become"] == 3, events
    assert not [event for event in events if event.startswith("keeper")], events


def test_a_remote_tmp_that_cannot_be_made_after_its_expansion(sshd, host_interpreters, tmp_path, home_tmp):
    """``~/NAME/tmp`` where NAME is a file: every task's mkdtemp fails; from the second task on
    it fails in the expansion's command first, then as ansible-core's own command, whose failure
    ansible-core reports."""
    remote_tmp, made = home_tmp
    play = "- hosts: all\n  gather_facts: false\n  tasks:\n" + "    - ping:\n      ignore_unreachable: true\n" * 3
    with open(made, "w") as handle:
        handle.write("a file, not a directory\n")
    plain, _, plain_out = run_playbook(sshd, host_interpreters, tmp_path, accel=False, pipelining=False, play_text=play,
                                       remote_tmp=remote_tmp, verbose=True)
    fast, stats, fast_out = run_playbook(sshd, host_interpreters, tmp_path, accel=True, pipelining=False, play_text=play,
                                         remote_tmp=remote_tmp, verbose=True)
    assert fast == plain, "\n".join(_differences(plain, fast)[:20])
    assert _lines(fast_out) == _lines(plain_out)
    assert "Failed to create temporary directory" in json.dumps(fast)
    events = stats["run"]["paths"]["remote_runner"]["events"]
    assert events["mkdtemp apart: failed in the expansion's command"] == 3 * 2, events
    assert "steps: mkdtemp in the expansion's command" not in events
    os.unlink(made)


def _count_ssh_commands(sshd, host_interpreters, tmp_path, remote_tmp, accel: bool,
                        direct: bool = True) -> tuple[int, int]:
    """(SSH commands, of which sftp) of a play of 4 ``ping`` tasks on one host, at ``-vvv``.
    ansible-core logs each command before it starts it; a module the keeper runs (no SSH
    command) is logged too, so those the accelerator counts are taken off."""
    play = tmp_path / "count.yml"
    play.write_text("- hosts: all\n  gather_facts: false\n  tasks:\n" + "    - ping:\n" * 4)
    inventory = tmp_path / "count-hosts"
    inventory.write_text(sshd.inventory(sshd.aliases(1, host_interpreters), remote_tmp=str(remote_tmp)))
    stats = tmp_path / "count-stats.json"
    stats.unlink(missing_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env.update(ANSIBLE_PIPELINING="False", ANSIBLE_NOCOLOR="1", ANSIBLE_ACCEL_STATS=str(stats))
    if not direct:
        env["ANSIBLE_ACCEL_REMOTE_DIRECT"] = "0"
    command = [os.path.join(BIN, "ansible-accel"), "ansible-playbook"] if accel else [os.path.join(BIN, "ansible-playbook")]
    done = subprocess.run([*command, "-i", str(inventory), str(play), "-vvv"], env=env, capture_output=True, text=True,
                          timeout=600, check=False)
    assert done.returncode == 0, done.stdout[-3000:]
    lines = [line for line in done.stdout.splitlines() if "SSH: EXEC " in line]
    through_keeper = 0
    if accel:
        events = json.loads(stats.read_text())["run"]["paths"]["remote_runner"].get("events", {})
        through_keeper = events.get("keeper: a module run (no SSH command)", 0)
        assert through_keeper == (4 if direct else 0), events
    return len(lines) - through_keeper, sum(" sftp " in line for line in lines)


def test_ssh_commands_per_module_task(sshd, host_interpreters, tmp_path, remote_tmp, home_tmp):
    counts = {}
    for where, tmp in (("absolute", remote_tmp), ("home", home_tmp[0])):
        for accel in (False, True):
            counts[where, accel] = _count_ssh_commands(sshd, host_interpreters, tmp_path, tmp, accel)
        counts[where, "command route"] = _count_ssh_commands(sshd, host_interpreters, tmp_path, tmp, True,
                                                             direct=False)
    print(f"\nSSH commands for 4 ping tasks (all, sftp): {counts}")
    # An absolute remote tmp, plain: mkdtemp, sftp, chmod, run, rm: 5 per task.  With the
    # runner: the first task's mkdtemp and sftp, the runner's install, then the two looks at the
    # process state a module's command would have (its shape, once); every module runs through
    # the keeper, with its chmod and rm and every other step: no SSH command for the later tasks.
    assert counts["absolute", False] == (5 * 4, 4), counts
    assert counts["absolute", True] == (3 + 2, 1), counts
    # Modules through their own command: the first task's three, then one per task (its run,
    # with its chmod).
    assert counts["absolute", "command route"] == (3 + 4, 1), counts
    # ~/NAME/tmp, plain: echo ~USER first, 6 per task.  With the runner: the first task's
    # expansion too.
    assert counts["home", False] == (6 * 4, 4), counts
    assert counts["home", True] == (4 + 2, 1), counts
    assert counts["home", "command route"] == (4 + 4, 1), counts


def test_a_remote_tmp_where_nothing_can_be_made(sshd, host_interpreters, tmp_path):
    """A remote tmp under a file: the runner cannot start there, every module task fails as with
    plain ansible-core, and no step is folded."""
    blocker = tmp_path / "blocker"
    blocker.write_text("a file, not a directory\n")
    play = "- hosts: all\n  gather_facts: false\n  tasks:\n" + "    - ping:\n      ignore_unreachable: true\n" * 2
    plain, _, _ = run_playbook(sshd, host_interpreters, tmp_path, accel=False, pipelining=False, play_text=play,
                               remote_tmp=str(blocker / "tmp"))
    fast, stats, _ = run_playbook(sshd, host_interpreters, tmp_path, accel=True, pipelining=False, play_text=play,
                                  remote_tmp=str(blocker / "tmp"))
    assert fast == plain, "\n".join(_differences(plain, fast)[:20])
    remote = stats["run"]["paths"]["remote_runner"]
    assert "steps: chmod in the module's command" not in remote.get("events", {}), remote
