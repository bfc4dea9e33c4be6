"""Differential: the real argument specs of ansible-core's modules and (on the venv that has
them) the community collections' modules, captured by ``_real_specs`` (cached under .cache/),
each validated with generated parameters by ansible-core's pure code and the native path,
every result field compared.

``ANSIBLE_ACCEL_FUZZ_EXAMPLES`` sets the number of generated cases (spread over the specs);
the default is a small derandomized subset for ``make test``.  ``ARGSPEC_RANDOM=1`` draws a
new random set instead of the seeded one.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import _real_specs
from _compare import compare
from ansible_accel import _counters

EXAMPLES = int(os.environ.get("ANSIBLE_ACCEL_FUZZ_EXAMPLES", "1000"))

noise = st.one_of(
    st.none(), st.booleans(), st.integers(-5, 5), st.integers(), st.floats(allow_nan=False), st.text(max_size=8),
    st.sampled_from(["", "yes", "no", "on", "1", "0", "a,b", "k=v", "{\"k\": 1}", "10M", "1.5", "~/x", "$HOME/y"]),
    st.lists(st.text(max_size=3), max_size=3), st.dictionaries(st.sampled_from(["k", "j"]), st.integers(), max_size=2),
)


def _kind(option):
    kind = option.get("type", "str")
    return kind if isinstance(kind, str) else "callable"


def valid_value(option, depth):
    """Values the option's type accepts (mostly), or its choices."""
    kind = _kind(option)
    choices = option.get("choices")
    if isinstance(choices, (list, tuple)) and choices:
        return st.sampled_from(list(choices)) | noise if kind != "list" else st.lists(st.sampled_from(list(choices)), max_size=3)
    sub = option.get("options")
    if isinstance(sub, dict) and depth < 3:
        one = params_for(sub, depth + 1)
        return st.lists(one, max_size=3) if kind == "list" else one
    elements = option.get("elements")
    if kind == "list":
        item = valid_value({"type": elements} if isinstance(elements, str) else {}, depth + 1)
        return st.lists(item, max_size=3) | st.sampled_from(["a,b", "x"])
    return {
        "str": st.text(max_size=8) | st.sampled_from(["name", "present", "/tmp/x"]),
        "int": st.integers(-10, 10000) | st.sampled_from(["42", "0", "-1"]),
        "float": st.floats(-10, 10, allow_nan=False) | st.sampled_from(["1.5", "2"]),
        "bool": st.booleans() | st.sampled_from(["yes", "no", "true", "False", "on", 0, 1]),
        "path": st.sampled_from(["/tmp/a", "~/b", "$HOME/c", "rel/d", ""]),
        "raw": noise,
        "dict": st.dictionaries(st.sampled_from(["k", "j", "l"]), st.text(max_size=4), max_size=3) | st.sampled_from(["k=v", "{\"a\": 1}"]),
        "jsonarg": st.sampled_from(["{\"a\": 1}", "[1, 2]", " {} "]) | st.dictionaries(st.sampled_from(["a"]), st.integers(), max_size=1),
        "json": st.sampled_from(["{\"a\": 1}", "[]"]),
        "bytes": st.sampled_from(["1K", "10 MB", "5", 7]),
        "bits": st.sampled_from(["1Kb", "10 Mb", "5"]),
    }.get(kind, noise)


@st.composite
def params_for(draw, spec, depth=0):
    params = {}
    names = list(spec)
    for name in draw(st.lists(st.sampled_from(names), max_size=min(len(names), 8), unique=True)) if names else []:
        option = spec[name] if isinstance(spec[name], dict) else {}
        key = name
        aliases = option.get("aliases")
        if isinstance(aliases, (list, tuple)) and aliases and draw(st.integers(0, 3)) == 0:
            key = draw(st.sampled_from(list(aliases)))
        params[key] = draw(noise) if draw(st.integers(0, 5)) == 0 else draw(valid_value(option, depth))
    # Required options present most of the time (missing sometimes).
    for name, option in spec.items():
        if isinstance(option, dict) and option.get("required") and name not in params and draw(st.integers(0, 4)):
            params[name] = draw(valid_value(option, depth))
    if draw(st.integers(0, 9)) == 0:
        params[draw(st.sampled_from(["unknown", "_ansible_extra", "bogus"]))] = draw(noise)
    return params


@pytest.fixture(scope="module")
def captured():
    data = _real_specs.load()
    if not data["specs"]:
        pytest.fail(f"no module spec captured: {data['skipped']}")
    return data


def test_capture_found_the_core_modules(captured):
    names = {os.path.basename(p) for p in captured["specs"]}
    assert {"user.py", "file.py", "copy.py", "uri.py"} <= names, sorted(names)[:20]


def test_real_specs_match_pure_python(captured):
    specs = [captured["specs"][p] for p in sorted(captured["specs"])]
    before = _counters.snapshot()["argspec"]
    native_before = before["native"]
    seen = {"cases": 0}

    @settings(max_examples=EXAMPLES, derandomize=not os.environ.get("ARGSPEC_RANDOM"), deadline=None,
              suppress_health_check=list(HealthCheck), database=None)
    @given(st.data())
    def check(data):
        found = data.draw(st.sampled_from(specs))
        spec = found["argument_spec"]
        checks = {k: found[k] for k in _real_specs.KEYS[1:] if found.get(k) is not None}
        params = data.draw(params_for(spec))
        compare(spec, params, checks)
        seen["cases"] += 1

    check()
    after = _counters.snapshot()["argspec"]
    native = after["native"] - native_before
    fallbacks = {k: v - before["fallback"].get(k, 0) for k, v in after["fallback"].items() if v != before["fallback"].get(k, 0)}
    print(f"\nreal specs: {len(specs)} captured of {captured['modules']} modules (skipped: {captured['skipped']}); "
          f"{seen['cases']} cases, {native} native, fallbacks {fallbacks}")
    assert native > seen["cases"] // 2, (native, seen, fallbacks)


def test_capture_goes_on_after_a_module_that_kills_its_worker(tmp_path):
    good = "from ansible.module_utils.basic import AnsibleModule\n\ndef main():\n    AnsibleModule(argument_spec={%r: {}})\n"
    files = []
    for name, text in [("first", good % "a"), ("killer", "import os\nos._exit(3)\n"), ("last", good % "b")]:
        (tmp_path / f"{name}.py").write_text(text)
        files.append(str(tmp_path / f"{name}.py"))
    results = _real_specs._capture(files, str(tmp_path / "records"), str(tmp_path))
    assert results[files[0]]["argument_spec"] == {"a": {}}
    assert results[files[1]] == "failed: worker died or hung"
    assert results[files[2]]["argument_spec"] == {"b": {}}
