"""The public API (docs/api.md): each function against ansible-core's own way of doing the same
job, on the installed ansible-core; clear exceptions for bad input; the public stubs name
exactly what the modules make public."""

from __future__ import annotations

import ast
import copy
import importlib
import io
import subprocess
import sys
import types
import warnings
import zipfile
from pathlib import Path

import pytest
from ansible.module_utils.common import parameters
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

import ansible_accel
from ansible_accel import argspec, finder, masking, payload

PACKAGE = Path(ansible_accel.__file__).resolve().parent
EXAMPLE_MODULE = (
    Path(__file__).resolve().parents[2]
    / "examples/collections/ansible_collections/accel_examples/toolkit/plugins/modules/hello.py"
)


def _native(path: str) -> int:
    return ansible_accel.status()[path]["native"]


def _fallbacks(path: str) -> dict:
    return dict(ansible_accel.status()[path]["fallback"])


# --- the stubs name the public API, and nothing else is public ------------------------------

PUBLIC_MODULES = ["ansible_accel", "ansible_accel.argspec", "ansible_accel.finder", "ansible_accel.masking",
                  "ansible_accel.no_log", "ansible_accel.payload"]


def _stub_names(module_name: str) -> set[str]:
    stub = PACKAGE / ("__init__.pyi" if module_name == "ansible_accel" else module_name.split(".")[1] + ".pyi")
    names = set()
    for node in ast.parse(stub.read_text()).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.Assign):
            names.update(target.id for target in node.targets if isinstance(target, ast.Name))
        elif isinstance(node, ast.ImportFrom):
            # A stub re-exports a name only as ``from m import name as name``.
            names.update(alias.name for alias in node.names if alias.asname == alias.name)
    return names - {"__all__"}


@pytest.mark.parametrize("module_name", PUBLIC_MODULES)
def test_stub_names_are_the_public_names(module_name: str) -> None:
    module = importlib.import_module(module_name)
    public = {
        name for name, value in vars(module).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType) and name != "annotations"
    }
    stub = _stub_names(module_name)
    assert stub <= set(vars(module)), stub - set(vars(module))
    assert public == {name for name in stub if not name.startswith("__")}


def test_no_public_bytecode_modules() -> None:
    assert not list(PACKAGE.glob("bytecode*.py"))


# --- argspec.validate ------------------------------------------------------------------------

SPEC = {
    "name": {"type": "str", "required": True, "aliases": ["host"]},
    "count": {"type": "int", "default": 1},
    "ratio": {"type": "float"},
    "enabled": {"type": "bool", "default": False},
    "mode": {"type": "str", "choices": ["a", "b"], "default": "a"},
    "tags": {"type": "list", "elements": "str"},
    "password": {"type": "str", "no_log": True},
    "old": {"type": "str", "removed_in_version": "9.0.0", "removed_from_collection": "ns.coll"},
    "nested": {
        "type": "dict",
        "options": {"size": {"type": "int", "required": True}, "unit": {"type": "str", "default": "mb"}},
    },
    "items": {"type": "list", "elements": "dict", "options": {"key": {"type": "str", "required": True}}},
}
CHECKS = {
    "mutually_exclusive": [["count", "ratio"]],
    "required_if": [["mode", "b", ["tags"]]],
    "required_by": {"password": ["name"]},
}
PARAMETER_SETS = [
    {"name": "x"},
    {"host": "x", "count": "3", "enabled": "yes", "tags": "a,b", "password": "hunter2 pw"},
    {"name": "x", "nested": {"size": "10"}, "items": [{"key": "k"}, {"key": 5}]},
    {"count": "many", "mode": "c", "unknown": 1},
    {"name": "x", "count": 1, "ratio": 0.5, "mode": "b"},
    {"name": "x", "nested": {"unit": "gb"}, "items": [{}], "old": "y"},
    {"name": ["not", "a", "str"], "enabled": "perhaps", "ratio": "x"},
]


def _typed(value):
    """``value`` with the type of every part spelled out (1, True and 1.0 differ)."""
    if isinstance(value, dict):
        return ("dict", [(_typed(k), _typed(v)) for k, v in value.items()])
    if isinstance(value, (list, tuple, set, frozenset)):
        items = [_typed(v) for v in value]
        return (type(value).__name__, sorted(items, key=repr) if isinstance(value, (set, frozenset)) else items)
    return (type(value).__name__, repr(value))


def _observable(result) -> dict:
    return {
        "validated": _typed(result.validated_parameters),
        "supported": _typed(result._supported_parameters),
        "errors": [(type(e).__name__, str(e)) for e in result.errors],
        "error_messages": result.error_messages,
        "unsupported": result.unsupported_parameters,
        "no_log": result._no_log_values,
        "warnings": result._warnings,
        "deprecations": result._deprecations,
        "aliases": result._aliases,
    }


def _with_warnings(function, *args, **kwargs):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        value = function(*args, **kwargs)
    return value, [str(w.message) for w in caught]


@pytest.mark.parametrize("params", PARAMETER_SETS)
@pytest.mark.parametrize("checks", [{}, CHECKS])
def test_validate_is_ansible_cores(params: dict, checks: dict) -> None:
    before = copy.deepcopy(params)
    ours, ours_warnings = _with_warnings(argspec.validate, SPEC, params, **checks)
    theirs, their_warnings = _with_warnings(ArgumentSpecValidator(SPEC, **checks).validate, copy.deepcopy(params))
    assert type(ours) is type(theirs)
    assert _observable(ours) == _observable(theirs)
    assert ours_warnings == their_warnings
    assert params == before


def test_validate_goes_native_and_counts() -> None:
    before = _native("argspec")
    result = argspec.validate(SPEC, {"name": "x", "count": "2"})
    assert result.validated_parameters["count"] == 2
    assert _native("argspec") == before + 1


def test_validate_with_fallbacks_is_ansible_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACCEL_API_TEST_NAME", "from-env")
    spec = {"name": {"type": "str", "fallback": (parameters.env_fallback, ["ACCEL_API_TEST_NAME"])}}
    ours = argspec.validate(spec, {})
    theirs = ArgumentSpecValidator(spec).validate({})
    assert _observable(ours) == _observable(theirs)
    assert ours.validated_parameters == {"name": "from-env"}


def test_validate_after_install_uses_the_installed_path(accel) -> None:
    installed = ArgumentSpecValidator.__dict__["validate"]
    assert getattr(installed, "__ansible_accel_original__", None) is not None
    for params in PARAMETER_SETS:
        ours = argspec.validate(SPEC, copy.deepcopy(params), **CHECKS)
        theirs = installed.__ansible_accel_original__(ArgumentSpecValidator(SPEC, **CHECKS), copy.deepcopy(params))
        assert _observable(ours) == _observable(theirs)


@pytest.mark.parametrize(
    ("spec", "params", "message"),
    [
        (None, {}, "argument_spec must be a mapping, not NoneType"),
        ({"a": {}}, ["a"], "parameters must be a mapping, not list"),
        ({"a": 3}, {}, "argument_spec['a'] must be a mapping, not int"),
    ],
)
def test_validate_bad_input(spec, params, message) -> None:
    with pytest.raises(TypeError) as info:
        argspec.validate(spec, params)
    assert str(info.value) == message


# --- masking.mask ------------------------------------------------------------------------------


def _core_mask(value, given):
    """ansible-core's own way: 2.22's masker with only ``given`` registered, else remove_values."""
    try:
        from ansible.module_utils._internal import _secrets, _secrets_object
    except ImportError:
        _secrets = None
    if _secrets is None or not hasattr(_secrets, "SecretMasker"):
        return parameters.remove_values(value, given)
    masker = _secrets.SecretMasker()
    masker.register_secret_texts(given)
    if isinstance(value, str):
        return masker.mask_string(value)
    with masker._lock:
        if not masker._forms:
            return value
        return _secrets_object._Walker(masker, "$REDACTED$", {}).mask(value)


MASK_CASES = [
    ("the password is hunter2, really hunter2", ["hunter2"]),
    ("hunter2", ["hunter2"]),
    ("nothing to hide", ["hunter2"]),
    ("abcdef abc", ["abc", "abcdef", "cde"]),
    ("  padded  ", ["  padded  "]),
    ('{"k": "quo\\"te"}', ['quo"te']),
    ({"user": "bob", "pw": "hunter2", "hunter2 key": ["a hunter2", 12345, None, True, 1.5]}, ["hunter2", "12345"]),
    ([{"a": "x"}, ("t", "hunter2")], ["hunter2"]),
    ({"untouched": ["a", "b"]}, ["hunter2"]),
    ("hunter2", []),
    ({"a": "hunter2"}, []),
]


@pytest.mark.parametrize(("value", "given"), MASK_CASES)
def test_mask_is_ansible_cores(value, given) -> None:
    before = copy.deepcopy(value)
    ours = masking.mask(value, given)
    theirs = _core_mask(copy.deepcopy(value), list(given))
    assert _typed(ours) == _typed(theirs)
    assert value == before
    # An unchanged value comes back as itself exactly where ansible-core's does.
    ours_same = masking.mask(value, given) is value
    fresh = copy.deepcopy(value)
    assert ours_same == (_core_mask(fresh, list(given)) is fresh)


def test_mask_counts_a_native_call() -> None:
    path = "no_log" if masking._core is None else "masking"
    before = _native(path)
    assert masking.mask("a hunter2 b", ["hunter2"]) != "a hunter2 b"
    assert _native(path) > before


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ("hunter2", "secrets must be a collection of str, not a single str"),
        (b"hunter2", "secrets must be a collection of str, not a single bytes"),
        (None, "secrets must be an iterable of str, not NoneType"),
        (5, "secrets must be an iterable of str, not int"),
    ],
)
def test_mask_bad_secrets(given, message) -> None:
    with pytest.raises(TypeError) as info:
        masking.mask("text", given)
    assert str(info.value) == message


# --- ansible_accel.secrets, the deprecated name of ansible_accel.masking ----------------------


def _import_secrets_afresh(monkeypatch) -> tuple[types.ModuleType, list[warnings.WarningMessage]]:
    """``ansible_accel.secrets`` imported as a first import does it, and the warnings it gave."""
    monkeypatch.delitem(sys.modules, "ansible_accel.secrets", raising=False)
    monkeypatch.delattr(ansible_accel, "secrets", raising=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        from ansible_accel import secrets
    return secrets, caught


def test_secrets_is_masking_under_its_former_name(monkeypatch) -> None:
    secrets, _ = _import_secrets_afresh(monkeypatch)
    assert secrets.__all__ == masking.__all__
    for name in masking.__all__:
        assert getattr(secrets, name) is getattr(masking, name), name
    assert secrets.mask is masking.mask
    assert _stub_names("ansible_accel.secrets") == _stub_names("ansible_accel.masking")


def test_importing_secrets_warns_naming_masking(monkeypatch) -> None:
    _, caught = _import_secrets_afresh(monkeypatch)
    deprecations = [w for w in caught if issubclass(w.category, DeprecationWarning)]
    assert [str(w.message) for w in deprecations] == [
        "ansible_accel.secrets is deprecated: use ansible_accel.masking, which has the same names"
    ]
    # Attributed to the code that imports it, so Python's default filters show it there.
    assert deprecations[0].filename == __file__


def test_nothing_of_the_package_imports_the_deprecated_name() -> None:
    code = (
        "import sys\n"
        "import ansible_accel\n"
        "from ansible_accel import argspec, masking, no_log, finder, payload\n"
        "ansible_accel.install()\n"
        "masking.mask('a hunter2 b', ['hunter2'])\n"
        "argspec.validate({'pw': {'type': 'str', 'no_log': True}}, {'pw': 'hunter2'})\n"
        "ansible_accel.uninstall()\n"
        "assert 'ansible_accel.secrets' not in sys.modules, 'imported'\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


# --- finder.scan_imports -----------------------------------------------------------------------


def _module_dep_finder(source: bytes, fqn: str, is_pkg_init: bool = False):
    import inspect

    from ansible.executor.module_common import ModuleDepFinder

    if "tree" in inspect.signature(ModuleDepFinder).parameters:
        found = ModuleDepFinder(fqn, compile(source, "<m>", "exec", ast.PyCF_ONLY_AST), is_pkg_init)
    else:
        found = ModuleDepFinder(fqn, source, is_pkg_init)
    return found.submodules, found.optional_imports


def _core_files():
    import ansible.module_utils.basic
    import ansible.modules.command
    import ansible.modules.copy
    import ansible.module_utils.common.arg_spec

    return [
        (Path(ansible.modules.command.__file__), "ansible.modules.command", False),
        (Path(ansible.modules.copy.__file__), "ansible.modules.copy", False),
        (Path(ansible.module_utils.basic.__file__), "ansible.module_utils.basic", False),
        (Path(ansible.module_utils.common.arg_spec.__file__), "ansible.module_utils.common.arg_spec", False),
        (Path(ansible.module_utils.basic.__file__).parent / "__init__.py", "ansible.module_utils", True),
        (EXAMPLE_MODULE, "ansible_collections.accel_examples.toolkit.plugins.modules.hello", False),
    ]


@pytest.mark.parametrize("index", range(6))
def test_scan_imports_is_module_dep_finders(index: int) -> None:
    path, fqn, is_pkg_init = _core_files()[index]
    source = path.read_bytes()
    before = _native("finder")
    scan = finder.scan_imports(source, fqn, is_pkg_init)
    assert _native("finder") == before + 1
    submodules, optional = _module_dep_finder(source, fqn, is_pkg_init)
    assert scan.submodules == submodules and scan.optional_imports == optional
    assert isinstance(scan.submodules, frozenset) and isinstance(scan.optional_imports, frozenset)


def test_scan_imports_leaves_a_syntax_error_to_ansible_core() -> None:
    source = b"import ansible.module_utils.basic\ndef broken(:\n"
    before = _fallbacks("finder")
    with pytest.raises(finder.ScanFallback) as info:
        finder.scan_imports(source, "ansible.modules.broken")
    assert info.value.reason and isinstance(info.value, ValueError)
    after = _fallbacks("finder")
    assert after.get(f"scan_imports: {info.value.reason}", 0) == before.get(f"scan_imports: {info.value.reason}", 0) + 1
    from ansible.errors import AnsibleError

    with pytest.raises((SyntaxError, AnsibleError)):  # 2.21+ wraps the SyntaxError
        _module_dep_finder(source, "ansible.modules.broken")


def test_scan_imports_bad_input() -> None:
    with pytest.raises(TypeError, match="bytes or str"):
        finder.scan_imports(None, "m")
    with pytest.raises(TypeError, match="module_fqn must be str"):
        finder.scan_imports(b"", 5)


# --- payload.build_zip -------------------------------------------------------------------------

DATE = (2024, 5, 6, 7, 8, 10)
ENTRIES = [
    ("ansible/__init__.py", b""),
    ("ansible/module_utils/basic.py", b"# module_utils\n" * 500),
    ("ansible/modules/thing.py", "print('caf\u00e9')\n"),
    ("data/blob.bin", bytes(range(256)) * 20),
    ("empty", bytearray()),
]


def _zipfile_bytes(entries, date_time, compression) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, mode="w", compression=compression) as archive:
        for name, data in entries:
            info = zipfile.ZipInfo(name, date_time)
            info.compress_type = compression
            archive.writestr(info, data)
    return buffer.getvalue()


@pytest.mark.parametrize("compression", [zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2])
def test_build_zip_is_zipfiles(compression: int) -> None:
    before = _native("payload")
    ours = payload.build_zip(ENTRIES, DATE, compression)
    assert ours == _zipfile_bytes(ENTRIES, DATE, compression)
    native = compression in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED)
    assert _native("payload") == before + (1 if native else 0)


def test_build_zip_duplicate_names_warn_as_zipfile_does() -> None:
    entries = [("a", b"1"), ("a", b"2")]
    ours, ours_warnings = _with_warnings(payload.build_zip, entries, DATE, zipfile.ZIP_DEFLATED)
    theirs, their_warnings = _with_warnings(_zipfile_bytes, entries, DATE, zipfile.ZIP_DEFLATED)
    assert ours == theirs and ours_warnings == their_warnings == ["Duplicate name: 'a'"]


@pytest.mark.parametrize(
    ("entries", "date_time", "compression", "error"),
    [
        (None, DATE, zipfile.ZIP_STORED, TypeError),
        ([("a",)], DATE, zipfile.ZIP_STORED, TypeError),
        ([(1, b"x")], DATE, zipfile.ZIP_STORED, TypeError),
        ([("a", 3)], DATE, zipfile.ZIP_STORED, TypeError),
        ([("a", b"x")], (1980, 1), zipfile.ZIP_STORED, ValueError),
        ([("a", b"x")], (1979, 1, 1, 0, 0, 0), zipfile.ZIP_STORED, ValueError),
        ([("a", b"x")], DATE, 99, NotImplementedError),
    ],
)
def test_build_zip_bad_input(entries, date_time, compression, error) -> None:
    with pytest.raises(error):
        payload.build_zip(entries, date_time, compression)


# --- install, uninstall, status ----------------------------------------------------------------


def test_install_uninstall_status() -> None:
    original = ArgumentSpecValidator.__dict__["validate"]
    try:
        first = ansible_accel.install()
        assert first["installed"] is True and ansible_accel.status()["installed"] is True
        assert ansible_accel.install()["installed"] is True  # idempotent
        assert ArgumentSpecValidator.__dict__["validate"] is not original
    finally:
        after = ansible_accel.uninstall()
    assert after["installed"] is False and ansible_accel.uninstall()["installed"] is False
    assert ArgumentSpecValidator.__dict__["validate"] is original
    for path in ("finder", "payload", "argspec", "masking", "no_log"):
        entry = ansible_accel.status()[path]
        assert {"active", "native", "fallback"} <= set(entry), entry
