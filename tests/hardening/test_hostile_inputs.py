"""Hostile and odd inputs, each against ansible-core's own result or error (or a counted
fallback): never a crash, a hang, or output with a secret left in."""

from __future__ import annotations

import os
import pathlib
import resource
import subprocess
import sys
import time
import warnings
import zipfile

import pytest

from ansible_accel import _activation, _counters, finder, masking, no_log, payload

HERE = pathlib.Path(__file__).parent
sys.path.insert(0, str(HERE.parent / "fuzz"))
try:
    from _outcomes import zipfile_reference  # the fuzz tests' reference archive (tests is no package)
finally:
    sys.path.pop(0)
MINOR = _activation.core_minor()
#: the slow ones (100 MB, a million secrets) run under `make fuzz` only
SLOW = bool(os.environ.get("ANSIBLE_ACCEL_FUZZ_EXAMPLES"))
needs_222 = pytest.mark.skipif(MINOR < (2, 22), reason="ansible-core before 2.22 has no mask_object")
needs_no_log_native = pytest.mark.skipif(MINOR >= (2, 22), reason="2.22: the no_log functions go to ansible-core")


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


# --- deep and cyclic structures (a fresh interpreter each: a stack overflow only kills it) ----

DEEP_CASES = [
    pytest.param("mask_object:deep_list", "reference=AnsibleSecretMaskError:secret masking failed native=AnsibleSecretMaskError:secret masking failed", marks=needs_222),
    pytest.param("mask_object:deep_dict", "reference=AnsibleSecretMaskError:secret masking failed native=AnsibleSecretMaskError:secret masking failed", marks=needs_222),
    pytest.param("mask_object:cyclic", "reference=AnsibleSecretMaskError:secret masking failed native=AnsibleSecretMaskError:secret masking failed", marks=needs_222),
    pytest.param("remove_values:deep_list", "reference=returned native=returned results=equal", marks=needs_no_log_native),
    pytest.param("remove_values:deep_dict", "reference=returned native=returned results=equal", marks=needs_no_log_native),
    # ansible-core walks a cycle forever (its queue grows): both must stay interruptible
    pytest.param("remove_values:cyclic", "reference=Interrupted:stopped native=Interrupted:stopped", marks=needs_no_log_native),
    pytest.param("sanitize_keys:deep_dict", "reference=returned native=returned results=equal", marks=needs_no_log_native),
    pytest.param("sanitize_keys:cyclic", "reference=Interrupted:stopped native=Interrupted:stopped", marks=needs_no_log_native),
]


@pytest.fixture(scope="module")
def deep_outcomes() -> dict[str, str]:
    """Every case of this ansible-core in one fresh interpreter: case -> its outcome line."""
    cases = [p.values[0] for p in DEEP_CASES if not any(m.args[0] for m in p.marks)]
    run = subprocess.run([sys.executable, str(HERE / "_deep_and_cyclic.py"), *cases], capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stderr[-2000:]
    return dict(line.split(" ", 1) for line in run.stdout.splitlines() if line.split(" ", 1)[0] in cases)


@pytest.mark.parametrize("case, expected", DEEP_CASES)
def test_deep_and_cyclic_structures_like_core(case, expected, deep_outcomes):
    assert deep_outcomes.get(case) == expected


# --- masking ------------------------------------------------------------------------------


@pytest.mark.skipif(not SLOW, reason="100 MB of text: make fuzz only")
def test_100_mb_string_is_masked_completely():
    masker = masking.SecretMasker()
    masker.register_secret_texts(["hunter2", "s3cr3t-token", "pässwörd"])
    chunk = "log line with hunter2 and s3cr3t-token, pässwörd; " + "x" * 40 + "\n"
    text = chunk * (100 * 2**20 // len(chunk))
    start = time.perf_counter()
    masked = masker.mask_string(text)
    elapsed = time.perf_counter() - start
    expected = text.replace("hunter2", "$REDACTED$").replace("s3cr3t-token", "$REDACTED$").replace("pässwörd", "$REDACTED$")
    assert masked == expected
    print(f"\n100 MB mask_string: {elapsed:.2f} s")


@pytest.mark.skipif(not SLOW, reason="a million secrets: make fuzz only")
def test_a_million_secrets():
    before = _rss_mb()
    masker = masking.SecretMasker()
    start = time.perf_counter()
    for block in range(100):
        masker.register_secret_texts([f"secret-{block:03d}-{i:05d}" for i in range(10_000)])
    registered = time.perf_counter() - start
    text = "a secret-042-01234 b secret-099-09999 c secret-100-00000 d" * 1000
    start = time.perf_counter()
    masked = masker.mask_string(text)
    first_mask = time.perf_counter() - start
    assert masked == "a $REDACTED$ b $REDACTED$ c secret-100-00000 d" * 1000
    grown = _rss_mb() - before
    print(f"\n1,000,000 secrets: registered in {registered:.1f} s, first mask {first_mask:.1f} s, RSS +{grown:.0f} MB")
    assert len(masker._registry) == 1_000_000


@pytest.mark.parametrize("secret", ["\ud800", "a\udcffb", "é\ud83d", "\x00\x01", " \t", "\u2028"])
def test_odd_secrets_and_texts(secret):
    masker = masking.SecretMasker()
    masker.register_secret_text(secret)
    text = f"<{secret}>{secret.strip()}\ud800 end"
    masked = masker.mask_string(text)
    if secret.strip(" \t\r\n"):
        assert secret.strip(" \t\r\n") not in masked
    if MINOR >= (2, 22):
        from ansible.module_utils._internal import _secrets

        reference = _secrets.SecretMasker()
        reference.register_secret_text(secret)
        assert masked == reference.mask_string(text)


@needs_222
def test_non_str_keys_and_values_in_mask_object():
    from ansible.module_utils._internal import _secrets, _secrets_object

    value = {1: "pw", None: ["pw", 1.5], (1, "pw"): b"pw", 2.5: {"pw"}, True: frozenset({"pw"}), "pw": bytearray(b"pw"), 12: 12}
    reference, ours = _secrets.SecretMasker(), masking.SecretMasker()
    for masker in (reference, ours):
        masker.register_secret_texts(["pw", "12"])
    def outcome(fn, *args):
        try:
            return fn(*args)
        except Exception as ex:  # noqa: BLE001 - compared
            # 2.22 raises "from None" inside its except block: the cause is hidden, the context
            # kept (suppressed); ours carries neither, so nothing of the value can ride along.
            assert ex.__context__ is None or ex.__suppress_context__
            return type(ex), str(ex), ex.__cause__

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_secrets_object, "_secret_masker", reference)
        expected = outcome(_secrets_object.mask_object, value)
    assert outcome(masking._mask_object_with, ours, value, "$REDACTED$", None) == expected
    # and without the tuple key (masked into an unhashable list, which fails in both)
    del value[12], value[(1, "pw")]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_secrets_object, "_secret_masker", reference)
        expected = outcome(_secrets_object.mask_object, value)
    assert outcome(masking._mask_object_with, ours, value, "$REDACTED$", None) == expected


# --- no_log ---------------------------------------------------------------------------------


@needs_no_log_native
@pytest.mark.parametrize("values", [["pw", b"\xff\xfe"], ["\ud800"], [b"pw"], [1, "1"], ["pw\x00"], []])
def test_no_log_odd_values_and_keys(values):
    from ansible.module_utils.common import parameters

    data = {1: "pw1", None: ["pw", b"pw\xff", "\ud800x"], (1,): {"pw": "\ud800"}, b"pw": frozenset({"pw"}), 2.5: "1"}
    for reference, ours in ((parameters.remove_values, no_log.remove_values), (parameters.sanitize_keys, no_log.sanitize_keys)):
        try:
            expected = reference(data, values)
        except Exception as ex:  # noqa: BLE001
            with pytest.raises(type(ex)) as got:
                ours(data, values)
            assert str(got.value) == str(ex)
        else:
            assert ours(data, values) == expected


@needs_no_log_native
def test_no_log_internal_failure_falls_back_counted(monkeypatch):
    from ansible.module_utils.common import parameters

    from ansible_accel import _native

    def broken(*args):
        return "internal error in the native engine"  # what a panic inside answers

    monkeypatch.setattr(_native, "remove_values_walk", broken)
    monkeypatch.setattr(_native, "sanitize_keys_walk", broken)
    monkeypatch.setattr(_native, "heuristic_scan_text", broken)
    before = _counters.snapshot()["no_log"]["fallback_reasons"].get("internal error in the native engine", 0) if "fallback_reasons" in _counters.snapshot()["no_log"] else None
    assert no_log.remove_values({"a": "x pw"}, ["pw"]) == parameters.remove_values({"a": "x pw"}, ["pw"])
    assert no_log.sanitize_keys({"pw": 1}, ["pw"]) == parameters.sanitize_keys({"pw": 1}, ["pw"])
    from ansible.module_utils import basic

    assert no_log.heuristic_log_sanitize("http://u:p@h") == basic.heuristic_log_sanitize("http://u:p@h")
    assert "internal error in the native engine" in repr(_counters.snapshot()["no_log"])
    del before


# --- finder ---------------------------------------------------------------------------------


def _core_scan(fqn, source):
    from ansible.executor import module_common as mc

    if MINOR >= (2, 21):
        found = mc.ModuleDepFinder(fqn, source, is_pkg_init=False)
    else:
        found = mc.ModuleDepFinder(fqn, mc._compile_module_ast(fqn, source), False)
    return set(found.submodules), set(found.optional_imports)


@pytest.mark.parametrize("source", [
    bytes(range(256)) * 4, b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", b"import os\n\xff\xfe", b"\x00import ansible.module_utils.x\n",
    "import ansible.module_utils.x  # \ud800\n", b"\xef\xbb\xbfimport ansible.module_utils.x\n", b"# -*- coding: latin-1 -*-\nx = '\xe9'\n",
    # regressions found by tests/fuzz/test_fuzz_finder.py: a U+FEFF compile() does not skip
    b"\xef\xbb\xbf\xef\xbb\xbf", b"import ansible.module_utils.x\n\xef\xbb\xbf\n", "import ansible.module_utils.x\n\ufeff\n",
])
def test_binary_and_badly_encoded_sources(source):
    try:
        expected = _core_scan("ansible.modules.m", source)
    except Exception as ex:  # noqa: BLE001
        expected = ex
    try:
        scan = finder.scan_imports(source, "ansible.modules.m")
    except finder.ScanFallback:
        return  # ansible-core's own code answers (with its own error where it has one)
    assert not isinstance(expected, Exception), expected
    assert (set(scan.submodules), set(scan.optional_imports)) == expected


@pytest.mark.skipif(not SLOW, reason="ansible-core compiles 10 MB for the reference: make fuzz only")
def test_a_10_mb_module():
    body = "".join(
        f"def f{i}(x):\n    import ansible.module_utils.m{i % 97}\n    return x * {i}  # {'#' * 30}\n"
        f"try:\n    from ansible.module_utils.opt{i % 13} import y\nexcept ImportError:\n    pass\n"
        for i in range(60_000)
    )
    source = ("import ansible.module_utils.basic\n" + body).encode()
    assert len(source) > 10 * 2**20
    assert (lambda s: (set(s.submodules), set(s.optional_imports)))(finder.scan_imports(source, "ansible.modules.big")) == _core_scan("ansible.modules.big", source)


def test_module_utils_import_cycle():
    run = subprocess.run([sys.executable, str(HERE / "_import_cycle.py")], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-3000:]
    assert "same payload" in run.stdout, run.stdout


# --- payload --------------------------------------------------------------------------------


@pytest.mark.parametrize("entries, date_time", [
    # regressions found by tests/fuzz/test_fuzz_payload.py: a part beyond 64 bits, unused or used
    ([], (0, 0, 0, 0, 0, 9_223_372_036_854_775_808)),
    ([("a", b"x")], (1980, 1, 1, 0, 0, 2**70)),
    # a lone surrogate in the name and a pre-1980 date: ZipInfo refuses the date first
    ([("\ud800", b"")], (0, 0, 0, 0, 0, 0)),
    ([("\ud800", b"")], (2000, 1, 1, 0, 0, 0)),
    ([("a\x00b", b"x"), ("a", b"y")], (2000, 1, 1, 0, 0, 0)),
])
@pytest.mark.parametrize("compression", [zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED])
def test_odd_zip_inputs_like_zipfile(entries, date_time, compression):
    def run(fn):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                return ("returned", fn(entries, date_time, compression)), [str(w.message) for w in caught]
            except Exception as ex:  # noqa: BLE001
                return ("raised", type(ex), str(ex)), [str(w.message) for w in caught]

    assert run(payload.build_zip) == run(zipfile_reference)


# --- argspec --------------------------------------------------------------------------------

WRONG_SPECS = [
    {"a": None}, {"a": "str"}, {"a": {"type": 5}}, {"a": {"type": "nope"}}, {"a": {"choices": "abc"}},
    {"a": {"aliases": "b"}}, {"a": {"required": "yes"}}, {"a": {"type": "list", "elements": 3}},
    {"a": {"options": ["x"]}}, {"a": {"type": "dict", "options": {"b": None}}}, {"a": {"default": 1j}}, {"a": {"default": frozenset({1})}},
    {"a": {"no_log": "maybe"}}, {1: {}}, {"a": {"deprecated_aliases": "b"}}, {"a": {"fallback": "env"}},
    # regression found by tests/fuzz/test_fuzz_argspec.py: a present None is iterated (AliasError)
    {"a": {"no_log": True}, "b": {"required": True, "choices": [], "aliases": ["z"], "deprecated_aliases": None, "no_log": True}},
    {"a": {"deprecated_aliases": None}},
    # regression found by the 100,000-case run: ansible-core reads `fallback[0]` of every option
    # that has the key, given or not, so a fallback that cannot be indexed raises on every call
    {"a": {"choices": [], "no_log": True, "fallback": None}}, {"a": {"fallback": ()}}, {"a": {"fallback": 5}},
]


@pytest.mark.parametrize("spec", WRONG_SPECS, ids=[repr(s)[:40] for s in WRONG_SPECS])
@pytest.mark.parametrize("params", [{"a": "1"}, {"a": ["x"]}, {}, {"b": 1}])
def test_specs_with_wrong_types_like_core(accel, spec, params):
    sys.path.insert(0, str(HERE.parent / "argspec"))
    try:
        from _compare import compare
    finally:
        sys.path.pop(0)
    from ansible.module_utils.common import arg_spec

    try:
        arg_spec.ArgumentSpecValidator(spec)
    except Exception:  # noqa: BLE001 - the (never accelerated) constructor refuses it in both
        return
    with pytest.MonkeyPatch.context() as patch:
        if MINOR >= (2, 22):
            from ansible.module_utils import secrets as core_secrets
            from ansible.module_utils._internal import _secrets

            fresh = _secrets.SecretMasker()
            patch.setattr(_secrets, "_secret_masker", fresh)
            patch.setattr(core_secrets, "_secret_masker", fresh)
        compare(spec, params)


@pytest.mark.parametrize("entries, date_time", [
    # regressions found by tests/fuzz/test_fuzz_payload.py: zipfile writes the entries in order
    # and fails at the first bad one (a date part out of range before a later unencodable name)
    ([("", b""), ("\ud800", b"")], (1980, 0, 0, 0, 0, -1)),
    ([("ok", b"x"), ("\ud800", b"")], (1980, 1, 1, 0, 0, 0)),
    # ZipInfo cuts the name at its first NUL before encoding it
    ([("a\x00\ud800", b"x")], (1980, 1, 1, 0, 0, 0)),
])
def test_zip_errors_in_zipfile_order(entries, date_time):
    test_odd_zip_inputs_like_zipfile(entries, date_time, zipfile.ZIP_DEFLATED)
