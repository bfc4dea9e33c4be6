"""Collection routing files (meta/runtime.yml) parsed once per content: the collection
loader's parser, wrapped while the accelerator is on, answers from a record on disk exactly
what ansible-core's own parser answers for the same content, and nothing it could not give
back exactly (a YAML alias) or did not parse (an error) is ever kept."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from ansible.utils.collection_loader import _collection_finder, _collection_meta

import ansible_accel
from ansible_accel._integrations import _finder_routing

ORIGINAL = _collection_meta._meta_yml_to_dict

ROUTING = b"""\
requires_ansible: '>=2.15.0'
plugin_routing:
  modules:
    old_name:
      redirect: probe.collection.new_name
      deprecation:
        removal_version: 3.0.0
        warning_text: use new_name
    gone:
      tombstone:
        removal_date: '2021-01-01'
        warning_text: it is gone
  module_utils:
    old_util:
      redirect: probe.collection.plugins.module_utils.new_util
action_groups:
  group:
  - one
  - two
  - {metadata: {extend_group: [other.collection.group]}}
empty:
number: 1.10
date: 2024-01-01
yes_no: yes
"""


@pytest.fixture
def accel_disk(tmp_path, monkeypatch):
    """The accelerator on, with routing records in a private local tmp of the test's own."""
    from ansible import constants as C

    root = tmp_path / "tmp"
    root.mkdir(mode=0o700)
    monkeypatch.setattr(C, "DEFAULT_LOCAL_TMP", str(root / "ansible-local-test"), raising=False)
    monkeypatch.setenv("ANSIBLE_ACCEL_FINDER_DISK", "1")
    monkeypatch.setenv("ANSIBLE_ACCEL_FINDER_PREWARM", "0")
    ansible_accel.install()
    try:
        yield root / "ansible_accel_finder_v2"
    finally:
        ansible_accel.uninstall()


def _records(directory) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.startswith("routing-")) if directory.is_dir() else []


def _shape(value):
    """The value with every container's and scalar's exact type spelled out."""
    if isinstance(value, dict):
        return (type(value), [(type(k), k, _shape(v)) for k, v in value.items()])
    if isinstance(value, list):
        return (type(value), [_shape(v) for v in value])
    return (type(value), value)


def _hits() -> int:
    return ansible_accel.status()["finder"].get("events", {}).get("routing_disk_hit", 0)


def test_the_collection_loader_parses_through_the_wrapper_only_while_installed(accel_disk):
    assert _collection_finder._meta_yml_to_dict is not ORIGINAL
    assert _collection_finder._meta_yml_to_dict.__wrapped_original__ is ORIGINAL
    ansible_accel.uninstall()
    assert _collection_finder._meta_yml_to_dict is ORIGINAL


@pytest.mark.parametrize("data", [ROUTING, ROUTING.decode(), b"", b"---\n", "plugin_routing: {}\n"])
def test_a_record_answers_exactly_what_ansible_core_parses(accel_disk, data):
    parse = _collection_finder._meta_yml_to_dict
    expected = ORIGINAL(data, ("probe.collection", "runtime.yml"))
    hits = _hits()
    first = parse(data, ("probe.collection", "runtime.yml"))
    assert _records(accel_disk)  # left for the next process
    second = parse(data, ("probe.collection", "runtime.yml"))
    assert _hits() == hits + 1
    assert _shape(first) == _shape(second) == _shape(expected)
    assert first is not second  # a fresh object each time, as ansible-core's parser gives
    second["plugin_routing"] = "changed"
    assert _shape(parse(data, ("probe.collection", "runtime.yml"))) == _shape(expected)


def test_changed_content_is_another_record_never_the_old_answer(accel_disk):
    parse = _collection_finder._meta_yml_to_dict
    parse(ROUTING, ("probe.collection", "runtime.yml"))
    changed = ROUTING.replace(b"new_name", b"newer_name")
    assert parse(changed, ("probe.collection", "runtime.yml")) == ORIGINAL(changed, None)
    assert len(_records(accel_disk)) == 2


def test_an_alias_is_parsed_each_time_and_never_kept(accel_disk):
    data = b"action_groups:\n  a: &shared [one, two]\n  b: *shared\n"
    parse = _collection_finder._meta_yml_to_dict
    for _ in range(2):
        result = parse(data, None)
        assert result == ORIGINAL(data, None)
        assert result["action_groups"]["a"] is result["action_groups"]["b"]  # shared, as ansible-core's
    assert _records(accel_disk) == []


@pytest.mark.parametrize("data", [b"plugin_routing: [unclosed\n", b"- a list\n- not a mapping\n", b"\xff\xfe\x00bad"])
def test_errors_are_ansible_cores_own_and_nothing_is_kept(accel_disk, data):
    with pytest.raises(Exception) as expected:
        ORIGINAL(data, None)
    with pytest.raises(expected.type) as raised:
        _collection_finder._meta_yml_to_dict(data, None)
    assert str(raised.value) == str(expected.value)
    assert _records(accel_disk) == []


def test_an_unreadable_record_is_a_miss(accel_disk):
    parse = _collection_finder._meta_yml_to_dict
    parse(ROUTING, None)
    (name,) = _records(accel_disk)
    for garbage in (b"{not json", b'{"format": 1, "routing": [1]}', b'{"format": 99, "routing": {}}'):
        (accel_disk / name).write_bytes(garbage)
        hits = _hits()
        assert _shape(parse(ROUTING, None)) == _shape(ORIGINAL(ROUTING, None))
        assert _hits() == hits


def test_no_record_without_the_disk(accel_disk, monkeypatch):
    monkeypatch.setenv("ANSIBLE_ACCEL_FINDER_DISK", "0")
    assert _collection_finder._meta_yml_to_dict(ROUTING, None) == ORIGINAL(ROUTING, None)
    assert _records(accel_disk) == []


def test_another_parser_put_in_place_by_a_tool_is_left_alone(monkeypatch):
    monkeypatch.setattr(_collection_finder, "_meta_yml_to_dict", lambda data, content_id: {"tool": "own"})
    assert _finder_routing.plan() == []


@pytest.mark.parametrize(("value", "exact"), [
    ({"a": ["b", {"c": "d"}]}, True), ({}, True), ({1: "a"}, False), ({"a": 1}, False), ({"a": None}, False),
    ({"a": ("b",)}, False), ({"a": [], "b": []}, True),
])  # fmt: skip
def test_only_what_json_gives_back_exactly_is_kept(value, exact):
    assert _finder_routing.exactly_json(value) is exact
    shared = []
    assert not _finder_routing.exactly_json({"a": shared, "b": shared})


# A collection imported in a fresh interpreter: its metadata, the loader's messages.
IMPORT = r"""
import json, sys
from ansible.plugins.loader import init_plugin_loader
from ansible.utils.display import Display
init_plugin_loader([sys.argv[1]])
import ansible_accel
ansible_accel.install()
from ansible.utils.collection_loader._collection_finder import _get_collection_metadata
shown = []
Display.warning = lambda self, msg, *a, **k: shown.append(msg)
meta = _get_collection_metadata("probe.collection")
events = ansible_accel.status()["finder"].get("events", {})
print(json.dumps({"meta": meta, "types": repr(type(meta)), "shown": shown, "hits": events.get("routing_disk_hit", 0)}))
"""


def test_a_fresh_process_imports_a_collection_with_the_same_metadata_and_messages(tmp_path):
    collection = tmp_path / "collections" / "ansible_collections" / "probe" / "collection"
    (collection / "meta").mkdir(parents=True)
    # an unsupported ansible version: the loader's warning must still be shown on every import
    (collection / "meta" / "runtime.yml").write_bytes(ROUTING.replace(b">=2.15.0", b"<2.0"))
    local_tmp = tmp_path / "tmp"
    local_tmp.mkdir(mode=0o700)

    def run(accelerated: str) -> dict:
        env = dict(os.environ, ANSIBLE_LOCAL_TEMP=str(local_tmp), ANSIBLE_ACCEL_FINDER_DISK="1",
                   ANSIBLE_ACCEL=accelerated)
        out = subprocess.run([sys.executable, "-c", IMPORT, str(tmp_path / "collections"), accelerated], env=env,
                             capture_output=True, text=True, check=True)
        return json.loads(out.stdout.strip().splitlines()[-1])

    expected = run("0")
    assert expected["shown"]  # (the version mismatch warning)
    first, second = run("1"), run("1")
    assert (first["hits"], second["hits"]) == (0, 1)
    for result in (first, second):
        assert (result["meta"], result["types"], result["shown"]) == (expected["meta"], expected["types"],
                                                                      expected["shown"])
