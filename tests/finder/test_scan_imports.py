"""scan_imports against the installed ansible-core's own ModuleDepFinder."""

from __future__ import annotations

import sys
import warnings

import pytest

from ansible.errors import AnsibleError

from ansible_accel import finder
from ansible_accel.finder import ScanFallback, scan_imports

from ._reference import GOLDEN, core_python_files, model_dep_finder

CORE_FILES = core_python_files()


@pytest.mark.parametrize("fqn, path, is_pkg_init", CORE_FILES, ids=[f[0] + ("/__init__" if f[2] else "") for f in CORE_FILES])
def test_every_core_file_scans_like_module_dep_finder(fqn, path, is_pkg_init):
    source = path.read_bytes()
    submodules, optional, _ = model_dep_finder(fqn, source, is_pkg_init)
    scan = scan_imports(source, fqn, is_pkg_init)  # no fallback on ansible-core's own files
    assert set(scan.submodules) == submodules
    assert set(scan.optional_imports) == optional
    assert isinstance(scan.submodules, frozenset) and all(type(n) is tuple for n in scan.submodules)


def test_differential_covers_modules_and_module_utils():
    kinds = {fqn.split(".")[1] for fqn, _, _ in CORE_FILES}
    assert kinds == {"modules", "module_utils"}
    assert len(CORE_FILES) > 200


def _golden_cases():
    cases = []
    for source_path in sorted(GOLDEN.glob("*.py")):
        header = dict(line.split(" ", 1) if " " in line else (line, "")
                      for line in source_path.with_suffix(".expected").read_text().splitlines()[:3]
                      if line.split(" ", 1)[0] in ("fqn", "pkg_init", "python"))
        cases.append(pytest.param(source_path, header["fqn"], header["pkg_init"] == "true",
                                  header.get("python"), id=source_path.stem))
    return cases


@pytest.mark.parametrize("source_path, fqn, is_pkg_init, min_python", _golden_cases())
def test_golden_fixture_matches_module_dep_finder(source_path, fqn, is_pkg_init, min_python):
    """Each fixture through both: same sets, or a fallback exactly where we cannot be sure."""
    source = source_path.read_bytes()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            reference = model_dep_finder(fqn, source, is_pkg_init)
        except Exception as ex:  # noqa: BLE001 - the reference's own error is the expectation
            reference = ex
    try:
        scan = scan_imports(source, fqn, is_pkg_init)
    except ScanFallback as fallback:
        _check_fallback_is_justified(source_path.stem, fallback.reason, reference, caught, min_python)
        return
    assert not isinstance(reference, Exception), f"ModuleDepFinder raised {reference!r} but we answered"
    assert not caught, f"compile() warned {[str(w.message) for w in caught]} but we answered"
    submodules, optional, embeds = reference
    assert set(scan.submodules) == submodules
    assert set(scan.optional_imports) == optional
    if scan.embed_import:
        assert source_path.stem == "embed_import"


def _check_fallback_is_justified(stem, reason, reference, caught, min_python):
    if reason in ("syntax_error", "unsupported_syntax"):
        assert isinstance(reference, AnsibleError) and "Unable to compile" in str(reference)
        if min_python:
            assert sys.version_info[:2] < tuple(map(int, min_python.split(".")))
    elif reason == "compile_warning":
        assert caught, "we expected compile() to warn"
    elif reason == "finder_error":
        assert isinstance(reference, AttributeError)
    else:  # decoding questions: compile() may well succeed; the fixture names the case
        assert (stem, reason) in {("latin1_coding", "coding_declaration"), ("invalid_utf8", "invalid_utf8")}


def test_golden_embed_import_is_flagged():
    scan = scan_imports((GOLDEN / "embed_import.py").read_bytes(), "ansible.modules.thing")
    assert scan.embed_import


def test_match_statement_reach_follows_the_installed_core(core_minor):
    source = (GOLDEN / "match_statement.py").read_bytes()
    scan = scan_imports(source, "ansible.modules.thing")
    in_case = ("ansible", "module_utils", "in_case")
    assert (in_case in scan.submodules) == (core_minor < (2, 21))
    assert finder.default_reach() == (finder.EVERY_LISTED_NODE if core_minor < (2, 21) else finder.POSITIONED_NODES)


def test_str_source_and_tagged_bytes():
    from ansible._internal._datatag._tags import Origin

    text = "from ansible.module_utils.basic import AnsibleModule\n"
    tagged = Origin(path="/tmp/x.py").tag(text.encode())
    expected = {("ansible", "module_utils", "basic", "AnsibleModule")}
    assert set(scan_imports(text, "m").submodules) == expected
    assert set(scan_imports(tagged, "m").submodules) == expected


def test_bad_arguments_get_clear_errors():
    with pytest.raises(TypeError, match="bytes or str"):
        scan_imports(123, "m")
    with pytest.raises(TypeError):
        scan_imports(b"", None)
    with pytest.raises(ValueError, match="reach"):
        scan_imports(b"", "m", reach="nowhere")
    with pytest.raises(ScanFallback) as info:
        scan_imports("x = '\ud800'\n", "m")
    assert info.value.reason == "invalid_utf8"


# Sources compile() rejects or warns about: the scanner must never answer for them.
TRICKY = [
    "def f(x=1, y): pass\n",
    "f(**x, *y)\n",
    "x = '\\N{NO SUCH NAME}'\n",
    "if True:\n        x = 1\n\ty = 2\n",
    "0777\n",
    "print 'x'\n",
    "a, b += 1\n",
    "del f()\n",
    "x = 1_\n",
    "f'{x!z}'\n",
    "from __future__ import braces\n",
    "import a.b as\n",
    "x = b'\\u1234'\n",
    "x = '\\777'\n",
    "x = 0x1for\n",
    "x = [1 for x in y if 1else 2]\n",
    "class C(x for x in y): pass\n",
    "f(x for x in y, 1)\n",
    "lambda: (yield)\n",
    "x: int, y: int = 1, 2\n",
    "async def f():\n    yield from x\n",
    "def f():\n  x = 1\n y = 2\n",
    "x = (\n",
    "@x\n",
    "try:\n    pass\n",
    "except* E:\n    pass\n",
    "try:\n    pass\nexcept* E:\n    pass\nexcept F:\n    pass\n",
    "with (a as b, c as d): pass\n",
    "match x:\n    case {**rest, 'a': 1}: pass\n",
    "x = f'{'a'}'\n",
    "x = f'{x:{y:{z}}}'\n",
    "type X = int\n",
    "def f[T=int](): pass\n",
    "except A, B:\n    pass\n",
    "nonlocal x\n",
    "return 1\n",
    "\x0cif x:\n    pass\n",
    "if x:\n\x0c    pass\n",
    "x = 1\r\ny = 2\rz = 3\n",
    "ℌ = 1\nimport ansible.module_utils.ℌ\n",
    "import ansible.module_utils.ｂasic\n",
    "\\\n",
    "x = 1 \\\n",
]


@pytest.mark.parametrize("source", TRICKY)
def test_tricky_sources_agree_with_compile(source):
    """Where compile() fails or warns the scanner falls back; where it answers, it agrees."""
    data = source.encode()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            reference = model_dep_finder("ansible.modules.thing", data, False)
        except Exception as ex:  # noqa: BLE001
            reference = ex
    try:
        scan = scan_imports(data, "ansible.modules.thing")
    except ScanFallback:
        return
    assert not isinstance(reference, Exception), f"compile() raised {reference!r}, we answered"
    assert not caught, f"compile() warned {[str(w.message) for w in caught]}, we answered"
    assert (set(scan.submodules), set(scan.optional_imports)) == reference[:2]
