"""Which objects a result holds, call after call of one validator with the same keys (the
result dict then made from a kept template holding True, False and the spec's immutable
default objects): given ints, strs and floats, the spec's default objects, and bools, each
the very object ansible-core's result holds (or not), and None where a value is None."""

from __future__ import annotations

from _compare import ORIGINAL_VALIDATE, native_count, observe
from ansible.module_utils.common import arg_spec


def _relations(result, params, spec):
    validated = result.validated_parameters
    return {key: (type(validated[key]).__name__, validated[key] is params.get(key),
                  validated[key] is spec.get(key, {}).get("default"))
            for key in validated}


def test_objects_held_across_calls_of_one_shape():
    big_default = int("7" * 18)  # not a cached small int
    spec = {
        "name": {"type": "str"},
        "count": {"type": "int", "default": 10 ** 6 + 1},
        "limit": {"type": "int", "default": big_default},
        "ratio": {"type": "float", "default": 0.25},
        "label": {"type": "str", "default": "".join(["lab", "el"])},
        "flag": {"type": "bool", "default": False},
        "other": {"type": "bool", "default": True},
        "raw": {"type": "raw"},
    }
    values = [
        (10 ** 9, True, "yes", 0.5),
        (10 ** 9 + 1, False, "no", None),
        (None, None, True, 1.5),
        ("12", True, None, 2.5),
        (10 ** 6 + 1, "no", False, None),
        (3, False, "on", 7),
        (10 ** 10, True, True, True),
        (None, None, None, None),
    ]
    validator = arg_spec.ArgumentSpecValidator(spec)
    pure_validator = arg_spec.ArgumentSpecValidator(spec)
    for _ in range(3):
        for count, flag, other, raw in values:
            params = {"name": "".join(["n", "1"]), "count": count, "flag": flag, "other": other, "raw": raw}
            before = native_count()
            native = validator.validate(params)
            assert native_count() == before + 1
            pure = ORIGINAL_VALIDATE(pure_validator, params)
            assert observe(native) == observe(pure), params
            assert _relations(native, params, spec) == _relations(pure, params, spec), params
            assert native.validated_parameters is not pure.validated_parameters


def test_defaults_held_when_options_not_given():
    """Not given: the spec's own default objects (ints too), as ansible-core puts them in."""
    spec = {
        "count": {"type": "int", "default": 10 ** 7 + 3},
        "ratio": {"type": "float", "default": 1.75},
        "name": {"type": "str", "default": "".join(["na", "me"])},
        "flag": {"type": "bool", "default": True},
        "items": {"type": "list", "default": ["a"]},
    }
    validator = arg_spec.ArgumentSpecValidator(spec)
    for _ in range(4):
        native = validator.validate({})
        pure = ORIGINAL_VALIDATE(arg_spec.ArgumentSpecValidator(spec), {})
        assert observe(native) == observe(pure)
        assert _relations(native, {}, spec) == _relations(pure, {}, spec)
        assert native.validated_parameters["count"] is spec["count"]["default"]


def test_a_setattr_given_to_the_result_class_later_is_called(monkeypatch):
    """Results are given their attributes the generic way only while the class has no
    __setattr__ of its own: one set on it afterwards sees every attribute, in __init__'s order."""
    spec = {"a": {"type": "str"}, "b": {"type": "int", "default": 3}}
    validator = arg_spec.ArgumentSpecValidator(spec)
    for _ in range(3):
        validator.validate({"a": "x"})
    seen = []

    def recording(self, name, value):
        seen.append(name)
        object.__setattr__(self, name, value)

    monkeypatch.setattr(arg_spec.ValidationResult, "__setattr__", recording, raising=False)
    before = native_count()
    native = validator.validate({"a": "x"})
    assert native_count() == before + 1
    native_names = list(seen)
    del seen[:]
    pure = ORIGINAL_VALIDATE(arg_spec.ArgumentSpecValidator(spec), {"a": "x"})
    assert native_names == seen and len(seen) >= 8
    assert observe(native) == observe(pure)
    monkeypatch.undo()
    del seen[:]
    validator.validate({"a": "x"})
    assert seen == []
