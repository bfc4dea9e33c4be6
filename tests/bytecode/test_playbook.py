"""Real ``ansible-playbook`` runs (local connection, one host per reference Python) with the
bytecode mode off and on: every module result and the whole failure output (tracebacks of a
module that raises included) are identical, on this environment's Python (bytecode loaded),
on the other two (bytecode for another version: sources run, silently), and on another
Python whose bytecode a compile server of that interpreter made."""

from __future__ import annotations

import json
import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

import ansible_accel

from .conftest import HERE, ROOT, VERSIONS, interpreter

OWN = "%d.%d" % sys.version_info[:2]
PLUGIN_DIR = pathlib.Path(ansible_accel.__file__).parent / "ansible_plugins" / "callback"
COLLECTIONS = [HERE / "collections"]
# The community collections the 3.12 environment has (ini_file is one of the modules run).
_COMMUNITY = ROOT / ".venv" / "py312" / "lib" / "python3.12" / "site-packages"
WITH_COMMUNITY = (_COMMUNITY / "ansible_collections" / "community" / "general").is_dir()
if WITH_COMMUNITY:
    COLLECTIONS.append(_COMMUNITY)

_VOLATILE = [
    (re.compile(r"(ansible_[\w.]+_payload)_[a-z0-9_]{8}/"), r"\1_XXXX/"),
    (re.compile(r"ansible-tmp-[0-9.]+-[0-9]+-[0-9]+"), "ansible-tmp-XXXX"),
    (re.compile(r'"(start|end|delta|atime)": "?[^",}]*"?'), r'"\1": "X"'),
]


def _differences(a, b, where="") -> list[str]:
    """Where two JSON values differ, as readable lines (for assertion messages)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return [d for k in sorted(set(a) | set(b)) for d in _differences(a.get(k), b.get(k), f"{where}/{k}")]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in _differences(x, y, f"{where}[{i}]")]
    return [] if a == b else [f"{where}: {a!r} != {b!r}"]


def _host(version: str) -> str:
    return "py" + version.replace(".", "")


def _normalise(text: str) -> str:
    for pattern, replacement in _VOLATILE:
        text = pattern.sub(replacement, text)
    return text


def _inventory(path: pathlib.Path, hosts: dict[str, str], plain: set[str]) -> None:
    """``hosts``: name -> interpreter.  Hosts not in ``plain`` name it through a template,
    which the accelerator does not resolve: their bytecode is for the controller's Python."""
    lines = ["all:", "  hosts:"]
    for name, python in hosts.items():
        lines.append(f"    {name}:")
        lines.append("      ansible_connection: local")
        if name in plain:
            lines.append(f"      ansible_python_interpreter: {python}")
        else:
            lines.append(f"      python_of_host: {python}")
            lines.append("      ansible_python_interpreter: '{{ python_of_host }}'")
    path.write_text("\n".join(lines) + "\n")


class Run:
    def __init__(self, tmp: pathlib.Path, label: str, *, bytecode_cfg: bool, env: dict | None = None, limit: str | None = None):
        self.tmp, self.label = tmp, label
        base = tmp / label
        base.mkdir()
        work = tmp / "work"  # the same path in every run: it shows in results
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir()
        config = base / "ansible.cfg"
        config.write_text(
            "[defaults]\n"
            f"callback_plugins = {PLUGIN_DIR}\ncallbacks_enabled = ansible_accel\n"
            f"forks = 3\nretry_files_enabled = False\nlocal_tmp = {base / 'local'}\nnocolor = True\n"
            "[connection]\npipelining = True\n"
            f"[callback_ansible_accel]\nbytecode = {str(bytecode_cfg).lower()}\n"
        )
        full_env = {k: v for k, v in os.environ.items() if not k.startswith(("ANSIBLE", "PYTHON"))}
        full_env.update(
            ANSIBLE_CONFIG=str(config),
            ANSIBLE_HOME=str(base / "home"),
            ANSIBLE_ACCEL_STATS=str(base / "stats.json"),
            ANSIBLE_ACCEL_BYTECODE_CACHE=str(tmp / "bytecode-cache"),
            ANSIBLE_COLLECTIONS_PATH=os.pathsep.join(map(str, COLLECTIONS)),
            ANSIBLE_DISPLAY_TRACEBACK="error",
            **(env or {}),
        )
        command = [
            os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", str(tmp / "inventory.yml"),
            str(HERE / "playbook.yml"), "-e", f"work={work}", "-e", f"fixed_file={HERE / 'playbook.yml'}",
            "-e", f"with_community={WITH_COMMUNITY}", *(["-e", f"target_hosts={limit}"] if limit else []),
        ]  # fmt: skip
        done = subprocess.run(command, capture_output=True, text=True, env=full_env, timeout=600)
        assert done.returncode == 0, done.stdout + done.stderr
        self.stdout = _normalise(done.stdout)
        self.results = {
            path.name.removeprefix("results-").removesuffix(".json"): json.loads(_normalise(path.read_text()))
            for path in work.glob("results-*.json")
        }
        self.stats = json.loads((base / "stats.json").read_text())

    def shim(self, host: str) -> bool:
        return self.results[host]["reporter"].pop("bytecode_shim")

    def bytecode_counts(self) -> dict:
        return self.stats["run"]["paths"]["bytecode"]


@pytest.fixture(scope="module")
def hosts() -> dict[str, str]:
    found = {_host(v): interpreter(v) for v in VERSIONS if interpreter(v)}
    return found


@pytest.fixture(scope="module")
def runs(tmp_path_factory, hosts):
    """Mode off, then on, over all hosts: this Python's host named plainly (its bytecode is
    for it), the others through a template (bytecode for this Python too: they run sources)."""
    tmp = tmp_path_factory.mktemp("bytecode-playbook")
    _inventory(tmp / "inventory.yml", hosts, plain={_host(OWN)})
    off = Run(tmp, "off", bytecode_cfg=False)
    on = Run(tmp, "on", bytecode_cfg=True)
    return tmp, off, on


def test_every_result_and_the_failure_output_are_identical(runs, hosts):
    _tmp, off, on = runs
    assert sorted(off.results) == sorted(hosts)
    for host in hosts:
        assert off.shim(host) is False
        assert on.shim(host) is (host == _host(OWN)), host  # loaded where the Python matches
    assert on.results == off.results, "\n".join(_differences(on.results, off.results))
    # forks = 3: the hosts' lines interleave in any order
    assert sorted(on.stdout.splitlines()) == sorted(off.stdout.splitlines())
    # What was compared: the failures, a traceback from a module that raises, and the paths.
    own = off.results[_host(OWN)]
    assert own["raiser"]["failed"] and "raised in probe_util" in json.dumps(own["raiser"])
    assert "probe_util.py" in json.dumps(own["raiser"]["exception"])
    assert "/ansible_collections/accel_test/bytecode/plugins/module_utils/probe_util.py" in own["reporter"]["caught_traceback"]
    assert own["reporter"]["python_warnings"][0][0].endswith("plugins/module_utils/probe_util.py")
    assert own["reporter"]["modules"]["__main__"][0].endswith("ansible_collections/accel_test/bytecode/plugins/modules/reporter.py")
    assert own["command_fails"]["rc"] == 1 and own["file_fails"]["failed"] and own["bad_argument"]["failed"]
    assert own["ini_file"].get("changed") is True if WITH_COMMUNITY else own["ini_file"].get("skipped")
    assert "raised in probe_util" in off.stdout and "Traceback" in off.stdout


def test_the_counters_show_bytecode_payloads_and_cache_hits(runs):
    _tmp, off, on = runs
    assert off.stats["bytecode"]["active"] is False and off.bytecode_counts()["native"] == 0
    assert on.stats["bytecode"]["active"] is True, on.stats["bytecode"]
    counts = on.bytecode_counts()
    assert counts["native"] >= 7, counts  # file, command, copy, stat, reporter, raiser, ping, ini_file
    assert counts["fallback"] == {}
    events = counts["events"]
    # ansible-core builds each module's payload once per run, for whichever host's worker gets
    # there first (forks = 3): the plainly named host's (its local interpreter) or a templated
    # one's (not known here: the controller's Python, the same version).  Every payload is one
    # of the two; the local-interpreter route alone is checked by the compile-server test.
    choices = {name: n for name, n in events.items() if name.startswith("for ")}
    assert set(choices) <= {
        f"for the target's Python {OWN} (local interpreter)",
        f"for the controller's Python {OWN} (target interpreter not known)",
    }, events
    assert sum(choices.values()) == counts["native"], events
    assert events.get("cache hits", 0) > 0  # module_utils shared by the modules compiled once
    assert events.get("compiled", 0) > 0


def test_a_compile_server_makes_bytecode_for_another_local_python(runs, hosts):
    tmp, off, _on = runs
    others = [v for v in VERSIONS if v != OWN and _host(v) in hosts]
    if not others:
        pytest.skip("no other reference Python here")
    other = others[0]
    _inventory(tmp / "inventory.yml", hosts, plain={_host(other)})
    server = Run(tmp, "server", bytecode_cfg=False, env={"ANSIBLE_ACCEL_BYTECODE": "1"}, limit=_host(other))
    assert server.shim(_host(other)) is True
    off.results[_host(other)]["reporter"].pop("bytecode_shim", None)
    assert server.results[_host(other)] == off.results[_host(other)], "\n".join(
        _differences(server.results[_host(other)], off.results[_host(other)]))
    events = server.bytecode_counts()["events"]
    assert events.get(f"for the target's Python {other} (local interpreter)", 0) >= 7, events
