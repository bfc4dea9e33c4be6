"""``scan_imports`` against the installed ansible-core's ``ModuleDepFinder`` (on compile()'s
tree, as ansible-core builds it) for generated Python-looking sources, bytes and str.

Where we answer natively, the sets must be ansible-core's and ansible-core must not have
failed or warned; a fallback is always allowed (ansible-core's own code then answers), and
is counted by reason.
"""

from __future__ import annotations

import warnings

from hypothesis import given
from hypothesis import strategies as st
from ansible.executor import module_common

from ansible_accel import _activation
from ansible_accel.finder import ScanFallback, scan_imports

from .conftest import CASES, FALLBACKS, fuzz_settings

FRAGMENTS = [
    "import ansible.module_utils.basic\n", "import ansible.module_utils.a.b as c, os\n",
    "from ansible.module_utils import a, b as c\n", "from ansible.module_utils.x import (y,\n z)\n",
    "from ..module_utils.x import y\n", "from . import z\n", "from .m import *\n", "from ... import q\n",
    "from ansible_collections.ns.col.plugins.module_utils import u\n", "import ansible_collections.ns.col.plugins.module_utils.v\n",
    "from ansible.module_utils.embed import EmbedManager\n", "from ansible.module_utils import embed\n",
    "try:\n", "except ImportError:\n", "except (ImportError, ValueError):\n", "finally:\n", "else:\n",
    "if x:\n", "while 0:\n", "with a as b:\n", "match x:\n    case 1:\n", "def f():\n", "class C:\n", "async def g():\n",
    "    ", "  ", "\t", "(", ")", "[", "]", "{", "}", ":", ",", "pass\n", "\n", "\\\n", "x = 1\n",
    "'\\d'", "b'\\q'", "\"\"\"", "'''", "f'{x!r:>{y}}'", "f'{'", "0x", "1if 1 else 2\n", "1_000", "0b2",
    "# -*- coding: latin-1 -*-\n", "# coding: utf-8\n", "\ufeff", "\x00", "\x0c", "\r\n", "\r",
    "lambda: (yield)\n", "type X = int\n", "def f[T](): pass\n", "print 'x'\n", "exec 'x'\n",
    "return\n", "yield\n", "await x\n", "global g\n", "nonlocal n\n", "del x\n", "__import__('ansible.module_utils.z')\n",
    "é = 1\n", "\U0001f600", "\ud800", "# comment\n", "@dec\n", "...\n",
]
FQNS = [
    "ansible.modules.ping", "ansible.module_utils.basic", "ansible.module_utils.facts.system",
    "ansible_collections.ns.col.plugins.modules.m", "ansible_collections.ns.col.plugins.module_utils.u", "m",
]

IMPORTS = [f for f in FRAGMENTS if "import" in f and f.endswith("\n")] + ["x = 1\n", "pass\n", "'\\d'\n", "f(1if 1 else 2)\n"]
BLOCKS = ["if x:\n", "def f():\n", "class C:\n", "with a:\n", "while x:\n", "async def g():\n", "match x:\n    case 1:\n", "try:\n"]


@st.composite
def programs(draw, depth=0):
    """Mostly valid Python: import lines, and blocks (try/except too) holding more of them."""
    out = []
    for _ in range(draw(st.integers(1, 4))):
        if depth >= 3 or draw(st.integers(0, 2)):
            out.append(draw(st.sampled_from(IMPORTS)))
            continue
        head = draw(st.sampled_from(BLOCKS))
        body = draw(programs(depth + 1))
        pad = "        " if head.startswith("match") else "    "
        out.append(head + "".join(pad + line + "\n" for line in body.splitlines()))
        if head == "try:\n":
            out.append(draw(st.sampled_from(["except ImportError:\n", "except:\n", "finally:\n"])) + "    pass\n")
    return "".join(out)


sources = st.one_of(programs(), st.lists(st.sampled_from(FRAGMENTS), max_size=30).map("".join))


def reference_scan(fqn: str, source, is_pkg_init: bool):
    """(submodules, optional_imports) from ansible-core, raising its error; warnings are errors."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        if _activation.core_minor() >= (2, 21):
            finder = module_common.ModuleDepFinder(fqn, source, is_pkg_init=is_pkg_init)
        else:
            tree = module_common._compile_module_ast(fqn, source)
            finder = module_common.ModuleDepFinder(fqn, tree, is_pkg_init)
    return set(finder.submodules), set(finder.optional_imports)


@fuzz_settings()
@given(sources, st.sampled_from(FQNS), st.booleans(), st.sampled_from(["bytes", "str"]))
def test_scan_imports_like_module_dep_finder(text, fqn, is_pkg_init, kind):
    CASES["finder"] += 1
    if kind == "bytes":
        source: bytes | str = text.encode("utf-8", "surrogatepass")
    else:
        source = text
    try:
        expected = reference_scan(fqn, source, is_pkg_init)
    except Exception as ex:  # noqa: BLE001 - ansible-core's failure: we must not answer
        expected = ex
    try:
        scan = scan_imports(source, fqn, is_pkg_init)
    except ScanFallback as fallback:
        FALLBACKS["finder"][fallback.reason if isinstance(expected, Exception) else f"{fallback.reason} (core answered)"] += 1
        return
    _check(scan, expected)


def _check(scan, expected):
    if scan.embed_import and _activation.core_minor() >= (2, 21):
        # The finder integration leaves such files to ansible-core (it inspects the embeds).
        FALLBACKS["finder"]["embed_import (left to ansible-core)"] += 1
        return
    assert not isinstance(expected, Exception), f"native answered where ansible-core raised {expected!r}"
    assert (set(scan.submodules), set(scan.optional_imports)) == expected


@fuzz_settings(share=0.2)
@given(st.binary(max_size=300), st.sampled_from(FQNS), st.booleans())
def test_arbitrary_bytes_answer_or_fall_back(data, fqn, is_pkg_init):
    CASES["finder"] += 1
    try:
        expected = reference_scan(fqn, data, is_pkg_init)
    except Exception as ex:  # noqa: BLE001
        expected = ex
    try:
        scan = scan_imports(data, fqn, is_pkg_init)
    except ScanFallback as fallback:
        FALLBACKS["finder"][fallback.reason if isinstance(expected, Exception) else f"{fallback.reason} (core answered)"] += 1
        return
    _check(scan, expected)
