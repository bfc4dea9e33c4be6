"""The one-call native validate(): fallbacks done natively (each strategy run once, its
exceptions what ansible-core raises), a replaced set_fallbacks respected, the compiled-spec
cache across validators and past its bound."""

from __future__ import annotations

import os

import pytest
from _compare import ORIGINAL_VALIDATE, compare, native_count, observe, outcome
from ansible.module_utils.common import arg_spec
from ansible.module_utils.common.parameters import AnsibleFallbackNotFound, env_fallback


class Calls:
    """A fallback strategy that counts its calls and gives what it is told to."""

    def __init__(self, give):
        self.give = give
        self.calls = 0

    def __call__(self, *args, **kwargs):
        self.calls += 1
        if isinstance(self.give, BaseException):
            raise self.give
        return self.give(*args, **kwargs) if callable(self.give) else self.give


def _both(spec, params, checks=None):
    """(native outcome, pure outcome, whether the call went native) on fresh copies."""
    before = native_count()
    got = outcome(arg_spec.ArgumentSpecValidator(spec, **(checks or {})).validate, dict(params))
    went_native = native_count() == before + 1
    expected = outcome(lambda p: ORIGINAL_VALIDATE(arg_spec.ArgumentSpecValidator(spec, **(checks or {})), p), dict(params))
    return got, expected, went_native


@pytest.mark.parametrize("form", [tuple, list])
def test_strategies_run_once_with_their_arguments(form):
    seen = []

    def strategy(*args, **kwargs):
        seen.append((args, kwargs))
        return "from " + ",".join(args)

    counted = Calls(lambda *a, **kw: 7)
    spec = {
        "a": {"fallback": form([strategy, ["x", "y"], {"k": 1}])},
        "b": {"type": "int", "fallback": form([counted])},
        "c": {"fallback": form([None])},
        "d": {"fallback": form([Calls(AnsibleFallbackNotFound())])},
        "e": {"fallback": form([strategy, ("z",)]), "no_log": True},
    }
    got, expected, went_native = _both(spec, {"e": "given"})
    assert got == expected
    assert went_native
    # Native run then the pure one: each strategy once per validation.
    assert seen == [(("x", "y"), {"k": 1})] * 2
    assert counted.calls == 2


def test_env_fallback_reads_os_environ_as_it_does(monkeypatch):
    monkeypatch.delenv("ACCEL_FB_A", raising=False)
    monkeypatch.setenv("ACCEL_FB_B", "second")
    spec = {
        "first": {"fallback": (env_fallback, ["ACCEL_FB_A", "ACCEL_FB_B"])},
        "none": {"fallback": (env_fallback, ["ACCEL_FB_A"])},
        "bare": {"fallback": (env_fallback,)},
        "secret": {"fallback": (env_fallback, ("ACCEL_FB_B",)), "no_log": True},
    }
    got, expected, went_native = _both(spec, {})
    assert got == expected and went_native
    assert ("str", "second") in [v for _, v in got["validated"][1]]
    assert got["no_log"] == ["second"]


def test_env_value_that_is_not_utf8():
    os.environb[b"ACCEL_FB_BYTES"] = b"caf\xe9"  # read back as a surrogate-escaped str
    try:
        spec = {"raw": {"fallback": (env_fallback, ["ACCEL_FB_BYTES"]), "no_log": True}}
        got, expected, _ = _both(spec, {})
        assert got == expected
        assert got["no_log"] == ["caf\udce9"]
    finally:
        del os.environb[b"ACCEL_FB_BYTES"]


def test_env_name_that_cannot_be_encoded_raises_as_ansible_core_does():
    spec = {"a": {"fallback": (env_fallback, ["bad\ud800name"])}}
    got, expected, _ = _both(spec, {})
    assert got[0] == "raised" and got == expected


def test_env_values_are_read_on_every_call(monkeypatch):
    """The native lookup remembers how a name is encoded, and what the os module's decoder
    made of a value only while the environment is unchanged: each change shows at once."""
    spec = {"a": {"fallback": (env_fallback, ["ACCEL_FB_LIVE", "ACCEL_FB_LIVE_2"])}}
    validator = arg_spec.ArgumentSpecValidator(spec)
    seen = []
    steps = ("one", "one", "two", "two", None, "three", "three", "one")
    for at, step in enumerate(steps):
        if step is None:
            monkeypatch.delenv("ACCEL_FB_LIVE", raising=False)
        elif at == 0 or steps[at - 1] != step:
            monkeypatch.setenv("ACCEL_FB_LIVE", step)
        before = native_count()
        got = validator.validate({}).validated_parameters
        assert native_count() == before + 1
        assert got == ORIGINAL_VALIDATE(arg_spec.ArgumentSpecValidator(spec), {}).validated_parameters
        seen.append(got["a"])
    assert seen == ["one", "one", "two", "two", None, "three", "three", "one"]


def test_replaced_environ_decodevalue_is_called(monkeypatch):
    """A value is decoded by whatever `os.environ.decodevalue` is at the call: only what the
    os module's own decoder made is reused, and only for the same unchanged environment."""
    monkeypatch.setenv("ACCEL_FB_DECODED", "plain")
    spec = {"a": {"fallback": (env_fallback, ["ACCEL_FB_DECODED"])}}
    validator = arg_spec.ArgumentSpecValidator(spec)
    real = os.environ.decodevalue
    calls = []

    def decoder(value):
        calls.append(value)
        return "decoded " + real(value)

    def step(expected, decoded):
        """One native validation (which calls the replaced decoder `decoded` times), then
        ansible-core's own."""
        before, calls_before = native_count(), len(calls)
        got = validator.validate({}).validated_parameters["a"]
        assert native_count() == before + 1
        assert len(calls) == calls_before + decoded
        assert got == expected == ORIGINAL_VALIDATE(arg_spec.ArgumentSpecValidator(spec), {}).validated_parameters["a"]

    step("plain", 0)
    step("plain", 0)
    monkeypatch.setattr(os.environ, "decodevalue", decoder)
    step("decoded plain", 1)
    step("decoded plain", 1)
    monkeypatch.setattr(os.environ, "decodevalue", real)
    step("plain", 0)
    monkeypatch.setenv("ACCEL_FB_DECODED", "changed")
    step("changed", 0)


def test_fallbacks_changed_in_place_on_a_reused_validator(monkeypatch):
    """The native loop reads a spec's fallbacks once per compiled spec: changing them in
    place (names added, a strategy replaced, a fallback removed) is seen on the next call."""
    monkeypatch.setenv("ACCEL_FB_SECOND", "second")
    monkeypatch.setenv("ACCEL_FB_THIRD", "third")
    names = ["ACCEL_FB_NONE"]
    spec = {"a": {"fallback": (env_fallback, names)}, "b": {"fallback": (env_fallback, ["ACCEL_FB_THIRD"])}}
    validator = arg_spec.ArgumentSpecValidator(spec)
    seen = []

    def step():
        before = native_count()
        got = validator.validate({}).validated_parameters
        assert native_count() == before + 1
        assert got == ORIGINAL_VALIDATE(arg_spec.ArgumentSpecValidator(spec), {}).validated_parameters
        seen.append((got["a"], got["b"]))

    step()
    names.append("ACCEL_FB_SECOND")
    step()
    spec["a"]["fallback"] = (lambda: "called",)
    step()
    del spec["b"]["fallback"]
    step()
    assert seen == [(None, "third"), ("second", "third"), ("called", "third"), ("called", None)]


def test_replaced_environ_encodekey_is_called(monkeypatch):
    """The native lookup remembers encoded names only for the encoder that made them."""
    monkeypatch.setenv("ACCEL_FB_UPPER", "found under the upper-case name")
    monkeypatch.setenv("ACCEL_FB_OTHER", "found under another name")
    monkeypatch.delenv("accel_fb_upper", raising=False)
    spec = {"a": {"fallback": (env_fallback, ["accel_fb_upper"])}}
    real = os.environ.encodekey
    for encoder, value in [
        (None, None),
        (lambda name: real(name.upper()), "found under the upper-case name"),
        (lambda name: real("ACCEL_FB_OTHER"), "found under another name"),
        (real, None),
    ]:
        if encoder is not None:
            monkeypatch.setattr(os.environ, "encodekey", encoder)
        got, expected, went_native = _both(spec, {})
        assert got == expected and went_native
        assert (type(value).__name__, value) in [v for _, v in got["validated"][1]]


def test_option_keys_ansible_core_never_reads_are_not_converted():
    """`description` and the like may hold anything (ansible-core ignores them): the spec is
    still taken natively, with the same result."""
    spec = {
        "a": {"type": "int", "description": {object(), 1.5}, "context": object(), "version_added": 2.5},
        "b": {"type": "dict", "options": {"c": {"default": "x", "description": [object()]}}, "notes": b"raw"},
    }
    got, expected, went_native = _both(spec, {"a": "3", "b": {}})
    assert got == expected and went_native


def test_replaced_environ_mapping_is_used(monkeypatch):
    monkeypatch.setattr(os, "environ", {"ACCEL_FB_DICT": "from a plain dict"})
    spec = {"a": {"fallback": (env_fallback, ["ACCEL_FB_DICT"])}}
    got, expected, went_native = _both(spec, {})
    assert got == expected and went_native
    assert ("str", "from a plain dict") in [v for _, v in got["validated"][1]]


@pytest.mark.parametrize("error", [ValueError("no value"), TypeError("bad call"), KeyError("k")])
def test_strategy_raising_gives_the_same_exception_and_runs_once(error):
    strategy = Calls(error)
    spec = {"a": {"fallback": (strategy,)}, "b": {"type": "int"}}
    got, expected, went_native = _both(spec, {"b": "1"})
    assert got == expected == ("raised", type(error), str(error))
    assert not went_native
    assert strategy.calls == 2  # once per validation


@pytest.mark.parametrize("fallback", [
    (lambda *a: "x", 5),  # *args of an int: ansible-core's own TypeError
    (lambda **kw: "x", {1: "not a keyword"}),
    (),  # no strategy: IndexError
    "env",  # a str: its first letter is called
])
def test_unusual_fallbacks_are_ansible_cores_to_run(fallback):
    got, expected, _ = _both({"a": {"fallback": fallback}}, {})
    assert got == expected


def test_a_replaced_set_fallbacks_is_called(monkeypatch):
    calls = []
    real = arg_spec.set_fallbacks

    def recording(spec, parameters):
        calls.append(sorted(spec))
        return real(spec, parameters)

    monkeypatch.setattr(arg_spec, "set_fallbacks", recording)
    spec = {"a": {"fallback": (lambda: "v",)}}
    assert compare(spec, {}, expect_native=True)
    assert calls == [["a"], ["a"]]  # the native attempt and the pure reference both called it


def test_fallback_no_log_values_as_this_version_records_them():
    spec = {"secret": {"no_log": True, "fallback": (lambda: "hunter2",)},
            "listed": {"no_log": True, "type": "list", "fallback": (lambda: ["one", "two"],)}}
    got, expected, _ = _both({"secret": spec["secret"]}, {})
    assert got == expected and got["no_log"] == ["hunter2"]
    # 2.19/2.21 put the list itself into a set (TypeError); 2.22 records its strings.
    got, expected, _ = _both(spec, {})
    assert got == expected


def test_compiled_spec_shared_by_validators_of_the_same_spec_objects():
    from ansible_accel import argspec

    spec = {"a": {"type": "int"}}
    first = argspec._compile_spec(arg_spec.ArgumentSpecValidator(spec))
    assert argspec._compile_spec(arg_spec.ArgumentSpecValidator(spec)) is first
    assert argspec._compile_spec(arg_spec.ArgumentSpecValidator(dict(spec))) is not first


def test_many_specs_past_the_cache_bound():
    before = native_count()
    specs = [{f"o{i}": {"type": "int", "default": i}} for i in range(1200)]
    for i, spec in enumerate(specs):
        assert arg_spec.ArgumentSpecValidator(spec).validate({}).validated_parameters == {f"o{i}": i}
    for i, spec in enumerate(specs[:10]):
        assert arg_spec.ArgumentSpecValidator(spec).validate({}).validated_parameters == {f"o{i}": i}
    assert native_count() == before + 1210


def test_result_holds_the_objects_ansible_core_holds():
    """Given strs (and floats) the checks keep, and the spec's default objects, are the very
    objects in the result, as in ansible-core's; converted values are new objects."""
    default_list = ["d1", "d2"]
    default_str = "".join(["def", "ault"])  # not interned: identity means something
    spec = {
        "name": {"type": "str"},
        "path": {"type": "path"},
        "ratio": {"type": "float"},
        "count": {"type": "int"},
        "items": {"type": "list", "default": default_list},
        "elements": {"type": "list", "elements": "str", "default": ["e"]},
        "label": {"type": "str", "default": default_str},
        "flag": {"type": "bool", "default": "yes"},
        "alias_given": {"type": "str", "aliases": ["other"], "default": "x"},
    }
    params = {"name": "".join(["we", "b"]), "path": "/srv/app", "ratio": 0.5, "count": "3",
              "other": "".join(["o", "ther"]), "extra": "".join(["ex", "tra"])}

    def identities(result):
        validated = result.validated_parameters
        return {key: (validated[key] is params.get(key), validated[key] is spec.get(key, {}).get("default"))
                for key in validated}

    before = native_count()
    native = arg_spec.ArgumentSpecValidator(spec).validate(dict(params))
    assert native_count() == before + 1
    pure = ORIGINAL_VALIDATE(arg_spec.ArgumentSpecValidator(spec), dict(params))
    assert observe(native) == observe(pure)
    assert identities(native) == identities(pure)
    assert identities(native)["name"] == (True, False)
    assert identities(native)["items"] == (False, True)


def test_reused_validator_results_of_repeated_and_changing_shapes():
    """One validator, called again and again with the same keys (the result dict made from a
    kept template), with other keys in between, with values None and not None under the same
    keys, and sub-option dicts given in another key order: every result as ansible-core's,
    each its own dict."""
    spec = {
        "name": {"type": "str", "required": True},
        "state": {"type": "str", "choices": ["present", "absent"], "default": "present"},
        "count": {"type": "int"},
        "flag": {"type": "bool", "default": False},
        "label": {"type": "str", "aliases": ["tag"]},
        "tags": {"type": "dict"},
        "net": {"type": "dict", "options": {"ip": {"type": "str"}, "up": {"type": "bool", "default": True},
                                            "mask": {"type": "int", "default": 24}}},
        "unused": {"type": "list", "elements": "str"},
    }
    calls = [
        {"name": "a", "count": "1"},
        {"name": "b", "count": "2"},
        {"name": "c", "count": None},
        {"name": "d", "count": 4, "tags": {"x": "1", "y": 2}},
        {"name": "e", "count": "5"},
        {"name": "f", "count": "6"},
        {"count": "7", "name": "g"},
        {"name": "h", "tag": "t", "count": "8"},
        {"name": "i", "tag": "t", "count": "9"},
        {"name": "j", "net": {"mask": "16", "ip": "10.0.0.1"}, "count": "1"},
        {"name": "k", "net": {"ip": "10.0.0.2", "mask": 8}, "count": "1"},
        {"name": "l", "net": {"ip": "10.0.0.2", "mask": 8}, "count": "1"},
        {"name": "m", "count": "1", "bogus": 1},
        {"name": "n", "count": "1", "bogus": 1},
        {"name": "o", "count": "1"},
        {"name": "p", "count": "1"},
    ]
    native = arg_spec.ArgumentSpecValidator(spec)
    pure = arg_spec.ArgumentSpecValidator(spec)
    results = []
    for params in calls:
        before = native_count()
        got = native.validate(dict(params))
        assert native_count() == before + 1
        assert observe(got) == observe(ORIGINAL_VALIDATE(pure, dict(params))), params
        results.append(got)
    first, second = results[-2].validated_parameters, results[-1].validated_parameters
    assert first is not second
    first["count"] = "changed"
    assert second["count"] == 1
    assert list(second) == list(ORIGINAL_VALIDATE(pure, dict(calls[-1])).validated_parameters)


@pytest.mark.parametrize("params", [
    {"ports": ["1", 2, "x", 3.0, True]},
    {"ports": [1, 2], "names": ["a", "b"], "paths": ["/a", "~/b", "$HOME/c"]},
    {"names": "a,b", "vols": [{"size": "1"}, {"size": 2, "kind": "io1"}]},
    {"vols": [{"size": "x"}, "not a dict"]},
    {"names": ["a", 1, None], "vols": []},
])
def test_lists_of_elements_checked_in_place(params):
    """Lists of elements (converted item by item, or kept as they are) and lists of
    sub-option dicts, reused validator and fresh: as ansible-core gives them."""
    spec = {
        "ports": {"type": "list", "elements": "int"},
        "names": {"type": "list", "elements": "str"},
        "paths": {"type": "list", "elements": "path"},
        "vols": {"type": "list", "elements": "dict",
                 "options": {"size": {"type": "int"}, "kind": {"choices": ["gp3", "io1"], "default": "gp3"}}},
    }
    validator = arg_spec.ArgumentSpecValidator(spec)
    for _ in range(3):
        assert outcome(validator.validate, dict(params)) == outcome(
            lambda p: ORIGINAL_VALIDATE(arg_spec.ArgumentSpecValidator(spec), p), dict(params))


def test_a_container_given_twice_is_ansible_cores_to_validate():
    for shared_at in (None, 0, 5, 40):
        _container_given_twice(shared_at)


def _container_given_twice(shared_at):
    """A list object met twice among the parameters (first among few containers or among
    many): ansible-core's deep copy keeps the sharing, so the call is left to it (counted);
    as many distinct containers are taken natively."""
    from ansible_accel import _counters

    spec = {"items": {"type": "list", "elements": "dict", "options": {"v": {"type": "list", "elements": "str"},
                                                                      "w": {"type": "list"}}}}
    lists = [[str(i)] for i in range(50)]
    items = [{"v": lists[i]} for i in range(45)]
    if shared_at is not None:
        items[45 - 1]["w"] = lists[shared_at]
    params = {"items": items}
    reason = "value: container shared between parameters"
    before_fallback = _counters.snapshot()["argspec"]["fallback"].get(reason, 0)
    before_native = native_count()
    got = outcome(arg_spec.ArgumentSpecValidator(spec).validate, params)
    assert got == outcome(lambda p: ORIGINAL_VALIDATE(arg_spec.ArgumentSpecValidator(spec), p), params)
    shared = shared_at is not None
    assert _counters.snapshot()["argspec"]["fallback"].get(reason, 0) == before_fallback + shared
    assert native_count() == before_native + (not shared)


def test_env_lookups_follow_every_change_to_the_environment(monkeypatch):
    """Which of several names is found is remembered only while os.environ is unchanged:
    setting, replacing and removing any of them (and unrelated variables) shows at once."""
    names = ["ACCEL_FB_M1", "ACCEL_FB_M2", "ACCEL_FB_M3"]
    spec = {"a": {"fallback": (env_fallback, names)}, "b": {"fallback": (env_fallback, ["ACCEL_FB_M3"]), "no_log": True}}
    validator = arg_spec.ArgumentSpecValidator(spec)
    for name in names:
        monkeypatch.delenv(name, raising=False)
    steps = [
        (), (), ("ACCEL_FB_M3", "three"), (), ("ACCEL_FB_M1", "one"), (), ("ACCEL_FB_M1", None),
        ("ACCEL_FB_OTHER", "x"), (), ("ACCEL_FB_M3", "THREE"), ("ACCEL_FB_M2", "two"), (), ("ACCEL_FB_M2", None),
        ("ACCEL_FB_M3", None), (),
    ]
    seen = []
    for step in steps:
        if step:
            name, value = step
            if value is None:
                monkeypatch.delenv(name)
            else:
                monkeypatch.setenv(name, value)
        before = native_count()
        got = validator.validate({})
        assert native_count() == before + 1
        assert observe(got) == observe(ORIGINAL_VALIDATE(arg_spec.ArgumentSpecValidator(spec), {}))
        seen.append((got.validated_parameters["a"], got.validated_parameters["b"]))
    assert seen == [
        (None, None), (None, None), ("three", "three"), ("three", "three"), ("one", "three"), ("one", "three"),
        ("three", "three"), ("three", "three"), ("three", "three"), ("THREE", "THREE"), ("two", "THREE"),
        ("two", "THREE"), ("THREE", "THREE"), (None, None), (None, None),
    ]
