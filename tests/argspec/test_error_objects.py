"""The error objects of a native result are ansible-core's own, attribute for attribute: the
same class, args, instance attributes (error_message) and text, in the same errors list."""

from __future__ import annotations

import copy

from _compare import ORIGINAL_VALIDATE, native_count
from ansible.module_utils.common import arg_spec


def _errors(result):
    return [(type(e), e.args, vars(e), str(e)) for e in result.errors.errors] + [
        (type(result.errors), result.errors.args, sorted(vars(result.errors)))]


def test_error_objects_are_ansible_cores():
    spec = {
        "name": {"type": "str", "required": True},
        "count": {"type": "int"},
        "state": {"type": "str", "choices": ["present", "absent"]},
        "a": {"type": "str"}, "b": {"type": "str"},
        "tags": {"type": "list", "elements": "int"},
    }
    checks = {"mutually_exclusive": [["a", "b"]], "required_together": [["count", "state"]],
              "required_by": {"a": ["count"]}}
    params = {"count": "x", "state": "gone", "a": "1", "b": "2", "tags": ["1", "y"], "extra": 1}
    before = native_count()
    got = arg_spec.ArgumentSpecValidator(copy.deepcopy(spec), **checks).validate(copy.deepcopy(params))
    assert native_count() == before + 1
    expected = ORIGINAL_VALIDATE(arg_spec.ArgumentSpecValidator(copy.deepcopy(spec), **checks), copy.deepcopy(params))
    assert len(got.errors.errors) >= 6
    assert _errors(got) == _errors(expected)
    assert got.error_messages == expected.error_messages
