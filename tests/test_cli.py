"""The ``ansible-accel`` command as users run it: the status table, --version, errors, a
closed pipe, and ANSIBLE_ACCEL as given.  Runs the installed entry point in subprocesses."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import ansible_accel
import pytest
from ansible_accel import _activation, _cli

CLI = os.path.join(os.path.dirname(sys.executable), "ansible-accel")


def run(*args: str, stdout=subprocess.PIPE, **env: str) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    environment.update(env)
    return subprocess.run([CLI, *args], env=environment, stdout=stdout, stderr=subprocess.PIPE, text=True, timeout=120)


def core_version() -> str:
    from ansible.release import __version__

    return __version__


def table(text: str) -> list[str]:
    """The lines of the path table: from its header to the end."""
    lines = text.splitlines()
    return lines[next(i for i, line in enumerate(lines) if line.startswith("path ")) :]


def test_status_table_has_a_row_per_path_in_aligned_columns():
    completed = run("status")
    assert completed.returncode == 0, completed.stderr
    header, *rows = table(completed.stdout)
    assert header.split()[:4] == ["path", "active", "native", "fallbacks"]
    paths = len(_activation.PATH_MODULES)
    assert [row.split()[0] for row in rows[:paths]] == list(_activation.PATH_MODULES)
    # Then the paths inside the modules the warm runners run.
    assert [" ".join(row.split()[:2]) for row in rows[paths:]] == ["argspec (modules)", "no_log (modules)", "masking (modules)"]
    # Left-aligned words start, right-aligned counts end, where their headings do.
    active_at = header.index("active")
    native_end = header.index("native") + len("native")
    fallbacks_end = header.index("fallbacks") + len("fallbacks")
    report = json.loads(run("status", "--json").stdout)
    for path, row in zip(_activation.PATH_MODULES, rows):
        assert row[active_at:].split()[0] == ("yes" if report[path]["active"] else "no"), row
        assert row[:native_end].split()[-1].isdigit() and row[native_end : native_end + 1] in ("", " "), row
        assert row[:fallbacks_end].split()[-1].isdigit() and row[fallbacks_end : fallbacks_end + 1] in ("", " "), row
        if not report[path]["active"]:
            assert row[fallbacks_end:].strip() == report[path]["reason"]
    module_side = report["module_side"]
    for path, row in zip(("argspec", "no_log", "masking"), rows[paths:]):
        active = module_side["active"] and report[path]["active"]
        assert row[active_at:].split()[0] == ("yes" if active else "no"), row
        assert row[:native_end].split()[-1] == str(module_side[path]["native"]), row


def test_status_table_shows_counts_and_the_top_fallback_reason(monkeypatch):
    """format_status on a report with counts, for every path _activation lists (a path
    added there shows up without changes here)."""
    monkeypatch.setitem(_activation.PATH_MODULES, "extra", "extra")
    report = {"ansible_core": "2.21.5", "supported": True, "installed": True, "reason": None}
    for path in _activation.PATH_MODULES:
        report[path] = {"active": True, "reason": None, "native": 0, "fallback": {}}
    report["finder"].update(native=123456, fallback={"unknown_import": 7, "syntax_error": 2, "other": 1})
    report["payload"].update(native=5, fallback={"zip64": 1})
    report["extra"].update(active=False, reason="not available here")
    rows = {line.split()[0]: line for line in table(_cli.format_status(report))[1:]}
    assert list(rows) == list(_activation.PATH_MODULES)
    assert rows["finder"].split()[:4] == ["finder", "yes", "123456", "10"]
    assert rows["finder"].endswith("unknown_import (7), and 2 other reasons")
    assert rows["payload"].endswith("zip64 (1)")
    assert rows["extra"].split()[:4] == ["extra", "no", "0", "0"] and rows["extra"].endswith("not available here")
    assert rows["argspec"].split() == ["argspec", "yes", "0", "0"]
    assert len({line.index(line.split()[2]) + len(line.split()[2]) for line in rows.values()}) == 1  # counts align


def test_status_json_is_status():
    report = json.loads(run("status", "--json").stdout)
    assert set(report) == set(ansible_accel.status())
    assert report["installed"] is True and report["ansible_core"] == core_version()


@pytest.mark.parametrize("value", ["false", "no", "off", "0", "False", "OFF"])
def test_disabled_is_reported_with_the_value_given(value):
    text = run("status", ANSIBLE_ACCEL=value).stdout
    assert f"installed     no (disabled by ANSIBLE_ACCEL={value})" in text
    report = json.loads(run("status", "--json", ANSIBLE_ACCEL=f" {value} ").stdout)
    assert report["reason"] == f"disabled by ANSIBLE_ACCEL={value}"
    assert {report[path]["reason"] for path in _activation.PATH_MODULES} == {report["reason"]}


def test_version_prints_both_versions():
    completed = run("--version")
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.splitlines() == [
        f"ansible-accel {ansible_accel.__version__}",
        f"ansible-core {core_version()} (supported)",
    ]


def test_module_entry_point_is_the_same_command():
    environment = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    completed = subprocess.run(
        [sys.executable, "-m", "ansible_accel._cli", "--version"], env=environment, capture_output=True, text=True
    )
    assert completed.returncode == 0 and completed.stdout == run("--version").stdout


def test_unknown_command_lists_the_wrapped_ansible_commands():
    completed = run("playbook")
    assert completed.returncode == 2
    message = completed.stderr.splitlines()[-1]
    assert message.startswith("ansible-accel: error: unknown command 'playbook'")
    for command in (*_cli.OWN_COMMANDS, *_cli.ANSIBLE_COMMANDS):
        assert re.search(rf"[ (]{re.escape(command)}(,|\)|$)", message), command


def test_help_lists_the_wrapped_ansible_commands():
    text = run("--help").stdout
    assert ", ".join(_cli.ANSIBLE_COMMANDS) in text


@pytest.mark.parametrize("args", [("status",), ("status", "--json"), ("config",), ("--version",)])
def test_closed_pipe_exits_quietly(args):
    """Output into a pipe nobody reads any more (``ansible-accel status | head -1``): no
    traceback, the status a shell gives a command stopped by SIGPIPE."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        completed = run(*args, stdout=write_end)
    finally:
        os.close(write_end)
    assert completed.stderr == ""
    assert completed.returncode == _cli.EXIT_BROKEN_PIPE == 141


def test_status_piped_into_head():
    environment = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    completed = subprocess.run(
        ["bash", "-c", f"'{CLI}' status | head -1"], env=environment, capture_output=True, text=True, timeout=120
    )
    assert completed.stdout == f"ansible-accel {ansible_accel.__version__}\n"
    assert completed.stderr == ""
