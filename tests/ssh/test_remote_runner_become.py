"""Tasks run with ``become`` over the test bed's sshd with the remote runner on
(as it comes), mixed with tasks without it: every become task's modules go
the ordinary way on the host (a fresh interpreter started by the become plugin), counted as
``remote_runner`` fallbacks with reason ``become``; the others run in the hosts' runners; every
task result is the same as plain ansible-core's, pipelining off and on; and no process of the
run is left on the hosts.

The play is the local become test's (``tests/runner/test_become.py``): ``su`` (which never
pipelines) as root and as ``nobody`` (on the system's Python, the one ``nobody`` may run), and
the tests' ``accel_runuser`` plugin, whose modules are pipelined."""

from __future__ import annotations

import json
import os
import sys

import pytest
from test_playbook_ssh import _differences, run_playbook
from test_remote_runner import REMOTE, wait_no_python

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "runner"))
from test_become import BECOME, BECOME_PLUGINS, BECOME_RUNS, OTHER_RUNS, PLAY, _results, work  # noqa: E402, F401

HOSTS = 3  # the aliases run_playbook makes: h01, h02, h03, each on its own interpreter


@pytest.mark.parametrize(("pipelining", "method"), [(False, "su"), (True, "su"), (True, "accel_runuser")],
                         ids=["files-su", "pipelining-su", "pipelining-runuser"])
def test_become_tasks_go_the_ordinary_way_on_the_hosts(sshd, host_interpreters, tmp_path, remote_tmp, work,
                                                       pipelining, method):
    play = PLAY.replace("METHOD", method).replace("{{ work }}", work)
    env = {"ANSIBLE_BECOME_PLUGINS": BECOME_PLUGINS}
    plain, _, plain_out = run_playbook(sshd, host_interpreters, tmp_path, accel=False, pipelining=pipelining,
                                       play_text=play, remote_tmp=remote_tmp, extra_env=env)
    fast, stats, fast_out = run_playbook(sshd, host_interpreters, tmp_path, accel=True, pipelining=pipelining,
                                         play_text=play, remote_tmp=remote_tmp, extra_env=dict(REMOTE, **env))
    assert fast == plain, "\n".join(_differences(plain, fast)[:20])
    assert plain_out.count("ok=") == fast_out.count("ok=")

    # The become plugin switched users on each host, and each become task's module ran in an
    # interpreter of its own there, started as the plugin's pipelining allows.
    words = "1" if pipelining and method != "su" else "2"
    assert sorted(fast["hosts"]) == [f"h0{i}" for i in range(1, HOSTS + 1)], list(fast["hosts"])
    for host in fast["hosts"]:
        assert [r["stdout"] for r in _results(fast, host, "command")] == ["root", "root", "nobody"]
        assert [r["stdout"] for r in _results(fast, host, "shell")] == [f"{words} 0"] * 2
        denied = _results(fast, host, "copy", "failed (ignored)")
        assert [r["msg"] for r in denied] == [f"Destination {work}/{host} not writable"], denied

    remote = stats["run"]["paths"]["remote_runner"]
    print(f"\nremote runner: {json.dumps(remote, sort_keys=True)}")
    assert stats["remote_runner"]["active"], stats["remote_runner"]
    fallback = dict(remote["fallback"])
    assert fallback.pop(BECOME, 0) == BECOME_RUNS * HOSTS, remote
    # Every other module run went to its host's runner (or, not ready within its wait, the
    # ordinary way), through the native client.
    assert set(fallback) <= {"runner starting"}, remote
    assert remote["native"] + sum(fallback.values()) == OTHER_RUNS * HOSTS and remote["native"] > 0, remote
    assert remote["events"]["native client"] == remote["native"], remote
    # Only the runners' modules sent module-side lines (the hosts' interpreters have no
    # ansible-accel, so each says why it ran without the paths).
    side = stats["module_side"]
    assert side["remote_modules"] == side["modules"] == remote["native"], side
    assert wait_no_python(sshd) == []
