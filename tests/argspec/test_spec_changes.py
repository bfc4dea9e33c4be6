"""A reused validator whose spec or checks were changed in place, anywhere inside, between two
calls: the next call must see the change (compiled again), never the spec compiled before.
On CPython 3.11-3.13 the native path proves a spec unchanged by the dicts' version tags and
the lists' and sets' items rather than by walking it: every kind of change is tried here."""

from __future__ import annotations

import copy
import sys

import pytest
from _compare import ORIGINAL_VALIDATE, native_count, observe
from ansible.module_utils.common import arg_spec
from ansible_accel import _native


def _pure(spec, params, checks):
    validator = arg_spec.ArgumentSpecValidator(copy.deepcopy(spec), **copy.deepcopy(checks))
    return observe(ORIGINAL_VALIDATE(validator, copy.deepcopy(params)))


def _spec():
    return {
        "name": {"type": "str", "required": True, "aliases": ["n"]},
        "state": {"type": "str", "choices": ["present", "absent"], "default": "present"},
        "count": {"type": "int", "default": 1},
        "env": {"type": "str", "fallback": ("env_fallback_placeholder", ["ACCEL_TEST_UNSET_VAR"])},
        "net": {
            "type": "dict",
            "options": {
                "ip": {"type": "str"},
                "groups": {"type": "list", "elements": "str", "default": ["a"]},
                "mode": {"type": "str", "choices": ["x", "y"]},
            },
            "required_together": [["ip", "mode"]],
        },
        "flags": {"type": "list", "elements": "str", "choices": {"p", "q"} and ["p", "q"]},
    }


def _with_env_fallback(spec):
    from ansible.module_utils.common.parameters import env_fallback

    spec["env"]["fallback"] = (env_fallback, ["ACCEL_TEST_UNSET_VAR"])
    return spec


CHANGES = [
    ("option type replaced", lambda s, c: s["count"].__setitem__("type", "str")),
    ("default replaced by an equal int", lambda s, c: s["count"].__setitem__("default", True)),
    ("option key deleted and another added", lambda s, c: (s["count"].pop("default"), s["count"].__setitem__("required", True))),
    ("choice replaced in place", lambda s, c: s["state"]["choices"].__setitem__(1, "gone")),
    ("choice appended", lambda s, c: s["state"]["choices"].append("other")),
    ("alias list emptied", lambda s, c: s["name"]["aliases"].clear()),
    ("alias list sorted differently", lambda s, c: s["name"]["aliases"].extend(["m"]) or s["name"]["aliases"].reverse()),
    ("sub-option default list changed", lambda s, c: s["net"]["options"]["groups"]["default"].__setitem__(0, "b")),
    ("sub-option added", lambda s, c: s["net"]["options"].__setitem__("extra", {"type": "int", "default": 3})),
    ("sub-spec check changed", lambda s, c: s["net"]["required_together"][0].__setitem__(1, "groups")),
    ("apply_defaults added", lambda s, c: s["net"].__setitem__("apply_defaults", True)),
    ("fallback argument list changed inside its tuple", lambda s, c: s["env"]["fallback"][1].__setitem__(0, "ACCEL_TEST_SET_VAR")),
    ("option removed", lambda s, c: s.pop("flags")),
    ("option dict replaced by an equal one", lambda s, c: s.__setitem__("count", dict(s["count"], type="float"))),
    ("check group changed", lambda s, c: c["mutually_exclusive"][0].__setitem__(1, "state")),
    ("check list grown", lambda s, c: c["required_one_of"].append(["count", "state"])),
    ("required_by value changed", lambda s, c: c["required_by"].__setitem__("count", ["flags"])),
]


@pytest.mark.parametrize("label,change", CHANGES, ids=[c[0] for c in CHANGES])
def test_change_in_place_is_seen(label, change, monkeypatch):
    monkeypatch.setenv("ACCEL_TEST_SET_VAR", "from-env")
    monkeypatch.delenv("ACCEL_TEST_UNSET_VAR", raising=False)
    spec = _with_env_fallback(_spec())
    checks = {"mutually_exclusive": [["count", "flags"]], "required_one_of": [["name", "n"]],
              "required_by": {"count": ["name"]}}
    params = {"name": "web", "state": "absent", "count": "3", "net": {"ip": "1.2.3.4", "mode": "x"},
              "flags": ["p"]}
    validator = arg_spec.ArgumentSpecValidator(spec, **checks)
    for _ in range(2):  # compiled, then reused
        before = native_count()
        assert observe(validator.validate(copy.deepcopy(params))) == _pure(spec, params, checks)
        assert native_count() == before + 1
    change(spec, checks)
    before = native_count()
    got = observe(validator.validate(copy.deepcopy(params)))
    assert got == _pure(spec, params, checks), label
    assert native_count() == before + 1
    # And reused again after the change.
    assert observe(validator.validate(copy.deepcopy(params))) == got


def test_a_set_changed_in_place_is_seen():
    # Spec values the core refuses are still watched: the same validator, once the set was
    # replaced by something it takes, runs natively and right.  (Compared with ansible-core on
    # the same set object: a copy of a set may iterate in another order, and the choices
    # error lists them in that order.)
    spec = {"a": {"type": "str", "choices": {"x", "y"}}}
    validator = arg_spec.ArgumentSpecValidator(spec)

    def pure(params):
        return observe(ORIGINAL_VALIDATE(arg_spec.ArgumentSpecValidator(spec), dict(params)))

    assert observe(validator.validate({"a": "x"})) == pure({"a": "x"})
    spec["a"]["choices"].discard("y")
    spec["a"]["choices"].add("z")
    assert observe(validator.validate({"a": "y"})) == pure({"a": "y"})
    spec["a"]["choices"] = ["x"]
    before = native_count()
    assert observe(validator.validate({"a": "y"})) == pure({"a": "y"})
    assert native_count() == before + 1


def test_a_tagged_spec_changed_in_place_is_seen():
    # Controller specs are ansible-core's tagged dict and list subclasses.
    tags = pytest.importorskip("ansible.module_utils._internal._datatag", reason="no tagged data before 2.19")
    origin = pytest.importorskip("ansible._internal._datatag._tags").Origin(path="/meta.yml", line_num=1)

    def tag(value):
        return tags.AnsibleTagHelper.tag(value, [origin])

    spec = tag({"a": tag({"type": "str", "choices": tag(["x", "y"])}), "b": tag({"type": "int", "default": 2})})
    validator = arg_spec.ArgumentSpecValidator(spec)
    params = {"a": "y"}
    for change in (lambda: spec["a"]["choices"].remove("y"), lambda: spec["b"].__setitem__("type", "str"),
                   lambda: spec.__setitem__("c", tag({"required": True}))):
        before = native_count()
        assert observe(validator.validate(dict(params))) == _pure(spec, params, {})
        assert native_count() == before + 1
        change()
    assert observe(validator.validate(dict(params))) == _pure(spec, params, {})


def test_quick_check_is_used_where_dicts_have_version_tags():
    expected = (3, 11) <= sys.version_info[:2] <= (3, 13)
    assert _native.argspec_quick_spec_check() is expected
