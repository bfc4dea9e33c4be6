"""The runner's kept wrapper code: a script that differs from a kept one only in its arguments'
literal (same length) runs code identical to what compiling it gives, and every other script
is compiled as usual."""

from __future__ import annotations

import importlib.util
import marshal
import os
import re
import shutil
import struct
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_server import fresh, observed, warm  # noqa: E402


@pytest.fixture
def server():
    """A private instance of the runner's module, as a child sees it after the probe."""
    import ansible_accel

    path = os.path.join(os.path.dirname(ansible_accel.__file__), "_runner_server.py")
    spec = importlib.util.spec_from_file_location("_runner_server_under_test", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module._TRACEBACKS_ASKED = re.compile(rb'_ansible_tracebacks_for\\*"\s*:\s*\[\s*\\*"')
    module.sent = []

    def runner_side(kind, payload):  # what the runner does with a child's report, at once
        module.sent.append(kind)
        if kind == b"AARS":
            module._SEEN.add(struct.unpack("<q", payload)[0])
        elif kind == b"AARW":
            module._keep_wrapper(kind + payload)
        elif kind == b"AARC":
            module._keep_code(kind + payload)
        else:
            assert kind == b"AARV"
            module._VERIFIED.add(payload)

    module._report = runner_side
    return module


def report(server, source, at, params, code):
    """A child's report of a script it compiled, as the first and as the second child to compile
    it: the first sends the key's hash alone, the second the code."""
    kept = dict(server._WRAPPERS)
    server._report_wrapper(source, at, params, code)
    assert server._WRAPPERS == kept
    server._report_wrapper(source, at, params, code)


def shape(code):
    code_type = type(code)
    return (code.co_code, code.co_linetable, code.co_exceptiontable, code.co_names, code.co_varnames,
            code.co_cellvars, code.co_freevars, code.co_filename, code.co_name, code.co_qualname,
            code.co_firstlineno, code.co_flags, code.co_argcount, code.co_posonlyargcount, code.co_kwonlyargcount,
            code.co_stacksize, list(code.co_positions()),
            tuple(shape(c) if type(c) is code_type else (type(c), c) for c in code.co_consts))


def _with_params(source: bytes, server, literal: bytes) -> bytes:
    start, end = server._params_span(source, source.rfind(server._MAIN_CALL))
    return source[:start] + literal + source[end:]


def _prepare(server, source: bytes) -> int:
    at = source.rfind(server._MAIN_CALL)
    server._State.wrapper_head = source[:at]
    return at


def test_a_script_with_other_arguments_of_the_same_length_runs_what_compiling_it_gives(server, scripts):
    source = open(scripts["observe"], "rb").read()
    at = _prepare(server, source)
    params = server._params_span(source, at)
    literal = source[params[0]:params[1]]
    assert literal.startswith(b"'{") and b"ANSIBLE_MODULE_ARGS" in literal
    assert server._wrapper_code(source, at, params, "/a/x.py") is None  # nothing kept yet
    report(server, source, at, params, compile(source, "/a/x.py", "exec", dont_inherit=True))
    assert server.sent == [b"AARS", b"AARW"]
    assert len(server._WRAPPERS) == 1

    same_length = _with_params(source, server, literal.replace(b"ANSIBLE_MODULE_ARGS", b"ANSIBLE_MODULE_ARGZ"))
    for variant in (source, same_length):
        got = server._wrapper_code(variant, at, server._params_span(variant, at), "/b/AnsiballZ_x.py")
        assert got is not None
        assert shape(got) == shape(compile(variant, "/b/AnsiballZ_x.py", "exec", dont_inherit=True))
        value = server._literal_value(variant[slice(*server._params_span(variant, at))])
        assert value in got.co_consts and "ANSIBLE_MODULE_ARG" in value


@pytest.mark.parametrize("literal", [
    b"'{\"a\": 1}'",                             # shorter
    b"'{\"a\": \"it\\'s \\\\ \\n \\u00e9 \\U0001f600\"}'",  # escapes
    "'{\"a\": \"\u00e9\"}'".encode(),            # non-ASCII as such
    b'"{\\"a\\": \\"b\\"}"',                     # double-quoted repr
])
def test_scripts_of_other_lengths_and_quoting_are_exact_once_kept(server, scripts, literal):
    source = _with_params(open(scripts["observe"], "rb").read(), server, literal)
    at = _prepare(server, source)
    params = server._params_span(source, at)
    assert server._wrapper_code(source, at, params, "/a/x.py") is None
    report(server, source, at, params, compile(source, "/a/x.py", "exec", dont_inherit=True))
    got = server._wrapper_code(source, at, params, "/c/y.py")
    assert got is not None
    assert shape(got) == shape(compile(source, "/c/y.py", "exec", dont_inherit=True))


def test_arguments_equal_to_another_constant_or_interned_are_compiled_as_usual(server, scripts):
    source = open(scripts["observe"], "rb").read()
    at = _prepare(server, source)
    fqn = re.search(rb"\nmodule_fqn=('[^']*'),\n", source).group(1)
    # A literal equal to another string of the script shares its constant: no template.
    shared = _with_params(source, server, fqn)
    report(server, shared, at, server._params_span(shared, at), compile(shared, "f", "exec"))
    assert server._WRAPPERS == {}
    # A kept template does not serve arguments that would be interned or shared.
    report(server, source, at, server._params_span(source, at), compile(source, "f", "exec"))
    assert len(server._WRAPPERS) == 1
    length = server._params_span(source, at)[1] - server._params_span(source, at)[0]
    for literal in (b"'" + b"a" * (length - 2) + b"'", fqn.ljust(length, b" ")[:length]):
        variant = _with_params(source, server, literal)
        span = server._params_span(variant, at)
        if span is None or span[1] - span[0] != length:
            continue
        assert server._wrapper_code(variant, at, span, "f") is None
    # Scripts that are not this wrapper are never served from a template.
    other_head = source.replace(b"_ANSIBALLZ_WRAPPER = True", b"_ANSIBALLZ_WRAPPER = 1   ", 1)
    assert server._wrapper_code(other_head, at, server._params_span(other_head, at), "f") is None
    asked = source.replace(b'_ansible_tracebacks_for\\": []', b'_ansible_tracebacks_for\\": [\\"e\\"]')
    asked = asked.replace(b'_ansible_tracebacks_for": []', b'_ansible_tracebacks_for": ["e"]')
    assert asked != source
    assert server._wrapper_code(asked, at, server._params_span(asked, at), "f") is None


@pytest.mark.parametrize("body", [
    b"AARW", b"AARW" + b"\x00garbage", b"AARW" + marshal.dumps(("a", "b", 1, None, 0)),
    b"AARW" + marshal.dumps((b"x", b"y", 10, compile("1", "f", "exec"), 0)),
])
def test_a_malformed_report_is_dropped(server, body):
    server._keep_wrapper(body)
    assert server._WRAPPERS == {}


def test_a_kept_template_that_does_not_hold_for_other_arguments_is_refused(server, scripts):
    source = open(scripts["observe"], "rb").read()
    at = _prepare(server, source)
    params = server._params_span(source, at)
    code = compile(source, "f", "exec", dont_inherit=True)
    slot = server._wrapper_template(code, server._literal_value(source[params[0]:params[1]]))[0]
    before, after, length = server._wrapper_key(source, at, params)
    # The code of another script sent under this script's key: the runner's check compiles.
    other = compile(source.replace(b"rlimit_nofile=", b"rlimit_nofile=1+"), "f", "exec", dont_inherit=True)
    consts = list(other.co_consts)
    other_slot = consts.index(server._literal_value(source[params[0]:params[1]]))
    server._keep_wrapper(b"AARW" + marshal.dumps((before, after, length, other, other_slot)))
    assert server._WRAPPERS == {}
    server._keep_wrapper(b"AARW" + marshal.dumps((before, after, length, code, slot)))
    assert len(server._WRAPPERS) == 1


def test_modules_run_from_kept_code_see_what_a_fresh_interpreter_shows_them(runner, scripts, tmp_path):
    first = scripts["observe"]
    source = open(first, "rb").read()
    # Another run of the same task: same module and payload, other arguments of the same length.
    assert b'\\"_ansible_verbosity\\": 0' in source or b'"_ansible_verbosity": 0' in source
    other = tmp_path / "AnsiballZ_accel_observe.py"
    other.write_bytes(source.replace(b'_ansible_verbosity\\": 0', b'_ansible_verbosity\\": 1')
                      .replace(b'_ansible_verbosity": 0', b'_ansible_verbosity": 1'))
    shutil.copystat(first, other)
    for path in (first, first, str(other), str(other), first):
        rc, out, err = fresh(path, False)
        wrc, wout, werr = warm(runner, path, False)
        assert (wrc, werr) == (rc, err) == (0, b"")
        view = observed(wout)
        assert view["wrapper_code"][0] == os.path.abspath(path)
        assert view == observed(out)
    assert runner.fallbacks() == []


def test_payload_code_is_kept_from_the_second_child_that_compiles_it(server):
    """A payload file's code goes to the runner only once a child compiled it before: the first
    child sends its hash, the second the code; a later one gets the kept code, renamed."""
    server._ORIGINAL_COMPILE = lambda pathname, source: compile(source, pathname, "exec", dont_inherit=True)
    source = b"def f():\n    return 1\n\nclass C:\n    def g(self):\n        return f()\n"
    for payload in ("/tmp/p1.zip", "/tmp/p2.zip"):  # two children, each compiling the file
        server._State.current_zip = payload
        got = server._cached_compile(payload + "/ansible/modules/x.py", source)
        assert shape(got) == shape(compile(source, payload + "/ansible/modules/x.py", "exec", dont_inherit=True))
    assert server.sent == [b"AARS", b"AARC"]
    assert list(server._CODE) == ["ansible/modules/x.py"]
    server._State.current_zip = "/tmp/p3.zip"
    got = server._cached_compile("/tmp/p3.zip/ansible/modules/x.py", source)
    assert shape(got) == shape(compile(source, "/tmp/p3.zip/ansible/modules/x.py", "exec", dont_inherit=True))
    assert server.sent == [b"AARS", b"AARC"]  # served from the kept code: nothing compiled or sent
    other = server._cached_compile("/tmp/p3.zip/ansible/modules/x.py", source + b"# changed\n")
    assert other.co_filename == "/tmp/p3.zip/ansible/modules/x.py" and server.sent[-1] == b"AARS"


def test_a_checked_payload_is_kept_from_the_second_child_that_checks_it(server, scripts):
    source = open(scripts["observe"], "rb").read()
    at = _prepare(server, source)
    server._State.preloaded_files = {}
    params = server._params_span(source, at)
    assert server._script_mismatch(source, at, params) is None
    assert server.sent == [b"AARS"] and not server._VERIFIED
    assert server._script_mismatch(source, at, params) is None
    assert server.sent == [b"AARS", b"AARV"] and len(server._VERIFIED) == 1
    assert server._script_mismatch(source, at, params) is None
    assert server.sent == [b"AARS", b"AARV"]  # not checked again
