"""ansible-core's own filter and test plugins imported in the controller before the first fork:
real ``ansible-playbook`` runs give ansible-core's results and output (builtin filters and tests,
a playbook's own ``filter_plugins``/``test_plugins``, one of them named like a builtin, a
collection's filter, redirected and deprecated names), the user's plugins are imported by the
workers only, never by the controller, and the workers find ansible-core's own already
imported."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from _playbook_run import run_playbook  # noqa: E402

DONE = "filter and test plugins imported before the fork"
LEFT = "filter and test plugins left to the workers: "
SWITCH = "ANSIBLE_ACCEL_WORKERS_JINJA"
HOSTS = ["j0", "j1", "j2"]

PLAY = """\
- hosts: all
  gather_facts: false
  vars:
    data: {b: 2, a: [1, 2]}
  tasks:
    - debug: {msg: "{{ data | to_json }}"}
    - debug: {msg: "{{ data | to_nice_json }}"}
    - debug: {msg: "{{ data | ansible.builtin.to_nice_json }}"}
    - debug: {msg: "{{ inventory_hostname | accel_shout }}"}
    - debug: {msg: "{{ 21 | accel.demo.twice }}"}
    - debug: {msg: "{{ 21 | accel.demo.old_twice }}"}
    - debug: {msg: "{{ ('5' | int) + (data.a | length) }}"}
    - debug: {msg: "{{ 'yes' | formerly_core_filter }}"}
    - debug: {msg: "{{ data | dict2items | map(attribute='key') | list }}"}
    - debug: {msg: "{{ 'abc' is match('a') }}"}
    - debug: {msg: "{{ 'abc' is truthy }}"}
    - debug: {msg: "{{ inventory_hostname is accel_odd_length }}"}
    - debug: {msg: "{{ 'abc' is formerly_core_test('b') }}"}
    - command: echo {{ inventory_hostname | upper }}
      register: out
    - assert: {that: [out.stdout is search('J'), out is succeeded]}
      when: data.a is defined
"""

# Imported by the worker that first looks up a filter (or a test); each import appends a line:
# KIND PID PARENT-PID and whether ansible-core's own core filters were imported already.
_MARK = """\
import os as _os
import sys as _sys
with open(_os.environ["ACCEL_MARKER"], "a") as _marker:
    _core = any(_n.startswith("ansible.plugins.filter.core_") for _n in _sys.modules)
    _marker.write(f"{KIND} {_os.getpid()} {_os.getppid()} {int(_core)}\\n")
"""
USER_FILTERS = 'KIND = "filter_plugins"\n' + _MARK + """
import json


def shout(value):
    return str(value).upper() + "!"


def nice_json(value):
    return "user's to_nice_json: " + json.dumps(value, sort_keys=True)


class FilterModule:
    def filters(self):
        return {"accel_shout": shout, "to_nice_json": nice_json}
"""
USER_TESTS = 'KIND = "test_plugins"\n' + _MARK + """

def odd_length(value):
    return len(value) % 2 == 1


def never(value):
    return False


class TestModule:
    def tests(self):
        return {"accel_odd_length": odd_length, "truthy": never}
"""
COLLECTION_FILTERS = 'KIND = "collection"\n' + _MARK + """

def twice(value):
    return value * 2


class FilterModule:
    def filters(self):
        return {"twice": twice}
"""
COLLECTION_RUNTIME = """\
requires_ansible: ">=2.15"
plugin_routing:
  filter:
    old_twice:
      redirect: accel.demo.twice
      deprecation:
        removal_version: "9.0.0"
        warning_text: Use accel.demo.twice.
"""


def _project(tmp_path) -> dict[str, str]:
    (tmp_path / "filter_plugins").mkdir(exist_ok=True)
    (tmp_path / "filter_plugins" / "accel_user.py").write_text(USER_FILTERS)
    (tmp_path / "test_plugins").mkdir(exist_ok=True)
    (tmp_path / "test_plugins" / "accel_user_tests.py").write_text(USER_TESTS)
    collection = tmp_path / "collections" / "ansible_collections" / "accel" / "demo"
    (collection / "plugins" / "filter").mkdir(parents=True, exist_ok=True)
    (collection / "meta").mkdir(exist_ok=True)
    (collection / "meta" / "runtime.yml").write_text(COLLECTION_RUNTIME)
    (collection / "plugins" / "filter" / "demo.py").write_text(COLLECTION_FILTERS)
    return {"ANSIBLE_COLLECTIONS_PATH": str(tmp_path / "collections"), "ANSIBLE_FORKS": "1"}


def _run(tmp_path, accel: bool, *args: str, **extra_env: str) -> tuple[dict, dict | None, str, list[tuple]]:
    marker = tmp_path / "imported"
    marker.unlink(missing_ok=True)
    env = {**_project(tmp_path), "ACCEL_MARKER": str(marker), **extra_env}
    done, results, stats = run_playbook(tmp_path, PLAY, HOSTS, accel, env, args)
    marks = [tuple(line.split()) for line in marker.read_text().splitlines()]
    return results, stats, done.stdout + "\n--- stderr\n" + done.stderr, marks


def _comparable(report: dict) -> dict:
    return {h: [{**t, "result": {k: v for k, v in t["result"].items() if k not in ("start", "end", "delta")}} for t in tasks]
            for h, tasks in report["hosts"].items()}


def _jinja_events(stats: dict) -> dict:
    events = stats["run"]["paths"]["workers"].get("events", {})
    return {name: n for name, n in events.items() if name == DONE or name.startswith(LEFT)}


def _imported_by_workers_only(marks: list[tuple]) -> None:
    """Every import of the user's plugins was a worker's: the controller is this test's child."""
    assert marks
    assert all(parent != str(os.getpid()) for _, _, parent, _ in marks), marks
    assert len({parent for _, _, parent, _ in marks}) == 1, marks  # all forked by one controller


def _kinds(marks: list[tuple]) -> list[str]:
    return sorted(kind for kind, *_ in marks)


def test_builtin_and_user_plugins_give_ansible_cores_results_and_output(tmp_path):
    plain, _, plain_output, plain_marks = _run(tmp_path, accel=False)
    warm, stats, warm_output, warm_marks = _run(tmp_path, accel=True)
    cold, cold_stats, cold_output, cold_marks = _run(tmp_path, True, **{SWITCH: "0"})

    messages = [t["result"].get("msg") for t in plain["hosts"]["j1"][:13]]
    assert messages[1].startswith("user's to_nice_json: ") and not messages[2].startswith("user's")
    assert messages[3] == "J1!" and messages[4] == messages[5] == 42 and messages[10] is False
    assert "Filter \"accel.demo.old_twice\" has been deprecated" in " ".join(plain_output.split())

    assert _comparable(warm) == _comparable(plain) == _comparable(cold)
    assert warm_output == plain_output == cold_output

    assert _jinja_events(stats) == {DONE: 1}, stats["run"]["paths"]["workers"]
    assert _jinja_events(cold_stats) == {}, cold_stats["run"]["paths"]["workers"]

    for marks in (plain_marks, warm_marks, cold_marks):
        _imported_by_workers_only(marks)
    # the same workers import the user's plugins, whatever the controller did ahead
    assert _kinds(warm_marks) == _kinds(plain_marks) == _kinds(cold_marks)
    # ... and, with the imports made ahead, find ansible-core's own filters imported already
    assert {core for kind, _, _, core in warm_marks if kind == "filter_plugins"} == {"1"}, warm_marks
    assert {core for kind, _, _, core in plain_marks + cold_marks if kind == "filter_plugins"} == {"0"}


def test_verbose_runs_leave_the_imports_to_the_workers(tmp_path):
    _, stats, _, marks = _run(tmp_path, True, "-vv")
    assert _jinja_events(stats) == {LEFT + "verbosity": 1}
    _imported_by_workers_only(marks)


def test_python_warning_options_leave_the_imports_to_the_workers(tmp_path):
    _, stats, _, marks = _run(tmp_path, True, PYTHONWARNINGS="ignore::DeprecationWarning")
    assert _jinja_events(stats) == {LEFT + "Python warning options": 1}
    _imported_by_workers_only(marks)


_LOADS = textwrap.dedent("""\
    import json, sys
    from ansible.plugins import loader
    loader.init_plugin_loader()
    loader.filter_loader.add_directory(sys.argv[1] + "/filter")
    loader.test_loader.add_directory(sys.argv[1] + "/test")
    ahead = {}
    if sys.argv[2] == "ahead":
        from ansible_accel._integrations import _plugin_prewarm
        _plugin_prewarm._jinja_plugins(loader)
        ahead = {p: m.__name__ for l in (loader.filter_loader, loader.test_loader) for p, m in l._module_cache.items()}
    loaded = []
    for plugins in (loader.filter_loader, loader.test_loader):
        original = plugins._load_module_source
        plugins._load_module_source = lambda *, python_module_name, path, _o=original: loaded.append(path) or _o(
            python_module_name=python_module_name, path=path)
    found = [loader.filter_loader.get(n).ansible_name for n in ("to_json", "to_nice_json", "accel_shout")]
    found.append(loader.filter_loader.get("int") is None)
    found += [loader.test_loader.get(n).ansible_name for n in ("match", "truthy")]
    cache = {p: m.__name__ for l in (loader.filter_loader, loader.test_loader) for p, m in l._module_cache.items()}
    print(json.dumps({"ahead": ahead, "loaded": loaded, "found": found, "cache": cache}))
""")


def test_the_imports_made_ahead_are_the_workers_own(tmp_path):
    """The modules imported ahead are the ones a first lookup imports from ansible-core's own
    directories, under the same names and cache keys; the first lookup then imports only the
    user's files, and finds what it finds without them."""
    plugins = tmp_path / "plugins"
    for kind, source in (("filter", USER_FILTERS), ("test", USER_TESTS)):
        (plugins / kind).mkdir(parents=True)
        (plugins / kind / "accel_user.py").write_text(source)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env.update(PYTHONHASHSEED="7", ACCEL_MARKER=str(tmp_path / "imported"))

    def loads(mode: str) -> dict:
        done = subprocess.run([sys.executable, "-c", _LOADS, str(plugins), mode], env=env, capture_output=True,
                              text=True, timeout=120, check=True)
        assert not done.stderr
        return json.loads(done.stdout)

    first, ahead = loads("first"), loads("ahead")
    user_files = {str(plugins / kind / "accel_user.py") for kind in ("filter", "test")}
    assert ahead["ahead"] and not user_files & set(ahead["ahead"])  # nothing of the user's ahead
    assert sorted(ahead["loaded"]) == sorted(user_files)
    assert set(first["loaded"]) == user_files | set(ahead["ahead"])
    assert ahead["cache"] == first["cache"]  # the same modules, under the same names, in the same entries
    assert ahead["found"] == first["found"] == ["ansible.builtin.to_json", "to_nice_json", "accel_shout", True,
                                                "ansible.builtin.match", "truthy"]
