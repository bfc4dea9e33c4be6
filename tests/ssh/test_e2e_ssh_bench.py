"""``benches/e2e/ssh.py``'s own logic, without running playbooks: the inventory it writes for the
test bed's server, which runs it calls problems (an accelerated run's difference) and which it
only reports (Mitogen's), and the ratios in its table."""

from __future__ import annotations

import configparser

from benches.e2e import ssh


class _Server:
    addresses = ("127.0.0.1", "127.0.0.2")

    @staticmethod
    def host_vars(address):
        return {"ansible_connection": "ssh", "ansible_host": address, "ansible_port": "2222",
                "ansible_ssh_common_args": "-o UserKnownHostsFile=/k -o StrictHostKeyChecking=yes"}


def test_inventory_spreads_hosts_over_the_addresses():
    text = ssh.inventory(_Server, 3, "/usr/bin/python3", "/tmp/r")
    lines = text.splitlines()
    assert lines[0] == "[e2e]" and [line.split()[0] for line in lines[1:]] == ["host01", "host02", "host03"]
    assert [line.split("ansible_host=")[1].split()[0] for line in lines[1:]] == ["127.0.0.1", "127.0.0.2", "127.0.0.1"]
    assert "ansible_ssh_common_args='-o UserKnownHostsFile=/k -o StrictHostKeyChecking=yes'" in lines[1]
    assert all("ansible_python_interpreter=/usr/bin/python3" in line and "ansible_remote_tmp=/tmp/r" in line for line in lines[1:])
    parsed = configparser.ConfigParser(allow_no_value=True, delimiters=(" ",))
    parsed.read_string(text)
    assert len(parsed["e2e"]) == 3


def _run(mode, results, cpu=10.0, wall=5.0, hosts_cpu=6.0):
    return {"mode": mode, "pipelining": False, "returncode": 0, "wall": wall, "controller_cpu": cpu - hosts_cpu,
            "hosts_cpu": hosts_cpu, "cpu": cpu, "left_behind": [], "left_on_hosts": [], "outlived": {},
            "load_before": [1.0], "load_after": [1.0], "output": "ok: [host01]\n", "results": results,
            "stats": {"installed": True} if mode in ("on", "runner") else None}


def _results(value):
    return {"hosts": {"host01": [{"play": "p", "task": "t", "action": "command", "status": "ok",
                                  "result": {"stdout": value}}]}, "stats": {"host01": {"ok": 1}}}


def test_a_difference_is_a_problem_for_the_accelerator_and_reported_for_mitogen():
    reference = _run("off", _results("a"))
    assert ssh.check(_run("runner", _results("a")), reference) == ([], [])
    problems, reported = ssh.check(_run("runner", _results("b")), reference)
    assert reported == [] and len(problems) == 1 and '"a" (off run 1) != "b" (runner)' in problems[0]
    problems, reported = ssh.check(_run("mitogen", _results("b")), reference)
    assert problems == [] and len(reported) == 1
    problems, _ = ssh.check(dict(_run("runner", _results("a")), left_on_hosts=["123 python"]), reference)
    assert problems and "left behind" in problems[0]


def test_table_ratios_are_medians_over_off_and_mitogen():
    runs = [_run("off", None, cpu=100.0, wall=50.0), _run("runner", None, cpu=60.0, wall=40.0),
            _run("mitogen", None, cpu=20.0, wall=20.0)]
    report = {"modes": ["off", "runner", "mitogen"],
              "settings": {"defaults": {"runs": runs, "problems": {}, "reported": ["x"]}}}
    rows = {line.split()[1]: line.split() for line in ssh.table(report)[1:]}
    # columns: setting mode runs wall cpu controller hosts cpu/off wall/off cpu/mitogen wall/mitogen
    assert rows["on/no-remote"][7:11] == ["0.600", "0.800", "3.000", "2.000"]
    assert rows["mitogen"][7:9] == ["0.200", "0.400"]
    assert " ".join(rows["mitogen"][11:]) == "1 differences (reported)"
    assert rows["on/no-remote"][11] == "identical"


def test_a_remote_runner_run_that_ran_no_module_in_a_runner_is_a_problem():
    reference = _run("off", _results("a"))
    counted = {"installed": True, "run": {"paths": {"remote_runner": {"native": 4, "fallback": {"runner starting": 2}}}}}
    assert ssh.check(dict(_run("remote", _results("a")), stats=counted), reference) == ([], [])
    assert "remote runner 4 native, 2 fallbacks" in ssh.describe(dict(_run("remote", _results("a")), stats=counted))
    none = {"installed": True, "run": {"paths": {"remote_runner": {"native": 0, "fallback": {"runner starting": 6}}}}}
    problems, _ = ssh.check(dict(_run("remote", _results("a")), stats=none), reference)
    assert len(problems) == 1 and "no module ran in a remote runner" in problems[0]
