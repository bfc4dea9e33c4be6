"""Import scanning and the module dependency walk: ansible-core's pure Python against ours.

- ``scan``: compile() + ModuleDepFinder against ``scan_imports`` per file, over every file
  of ansible-core's module_utils (and its biggest files alone); results compared as sets.
- ``walk``: recursive_finder for eight builtin modules, warm (the process has built them
  before); zip bytes and returned metadata compared.
"""

from __future__ import annotations

import datetime
import io
import pathlib
import zipfile

import ansible
from ansible.executor import module_common as mc

from ansible_accel._activation import core_minor
from ansible_accel._integrations import finder as integration
from ansible_accel.finder import scan_imports

from ._harness import Row, compare

WALK_MODULES = ("command", "copy", "file", "user", "apt", "dnf", "uri", "get_url")
DATE_TIME = datetime.datetime(2024, 5, 6, 7, 8, 10, tzinfo=datetime.timezone.utc)
ROOT = pathlib.Path(ansible.__file__).parent


def _module_utils_files() -> list[tuple[str, bytes, bool]]:
    files = []
    for path in sorted((ROOT / "module_utils").rglob("*.py")):
        parts = path.relative_to(ROOT.parent).with_suffix("").parts
        is_pkg_init = parts[-1] == "__init__"
        files.append((".".join(parts[:-1] if is_pkg_init else parts), path.read_bytes(), is_pkg_init))
    return files


def _python_scan(files):
    new_style = core_minor() >= (2, 21)
    out = []
    for fqn, data, is_pkg_init in files:
        if new_style:
            finder = mc.ModuleDepFinder(fqn, data, is_pkg_init=is_pkg_init)
        else:
            finder = mc.ModuleDepFinder(fqn, mc._compile_module_ast(fqn, data), is_pkg_init)
        out.append((set(finder.submodules), set(finder.optional_imports)))
    return out


def _native_scan(files):
    out = []
    for fqn, data, is_pkg_init in files:
        scan = scan_imports(data, fqn, is_pkg_init)
        out.append((set(scan.submodules), set(scan.optional_imports)))
    return out


def _scan_rows(quick: bool) -> list[Row]:
    files = _module_utils_files()
    rows = []
    repeat = 3 if quick else 7
    total = sum(len(data) for _, data, _ in files)
    rows.append(compare("finder", "scan: every module_utils file", f"{len(files)} files, {total // 1024} KiB",
                        lambda: _python_scan(files), lambda: _native_scan(files), repeat=repeat))
    for name in ("ansible.module_utils.basic", "ansible.module_utils.urls"):
        one = [f for f in files if f[0] == name]
        rows.append(compare("finder", f"scan: {name.rsplit('.', 1)[1]}.py", f"{len(one[0][1]) // 1024} KiB",
                            lambda one=one: _python_scan(one), lambda one=one: _native_scan(one),
                            repeat=repeat, number=3))
    return rows


def _walker(recursive_finder, name: str, path: pathlib.Path, compression: int = zipfile.ZIP_DEFLATED):
    from ansible._internal._ansiballz import _builder
    from ansible._internal._datatag._tags import Origin

    data = path.read_bytes()
    fqn = mc._get_ansible_module_fqn(str(path))

    def walk():
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, mode="w", compression=compression) as zf:
            metadata = recursive_finder(name, fqn, Origin(path=str(path)).tag(data), zf, DATE_TIME, _builder.ExtensionManager())
        return buffer.getvalue(), metadata

    return walk


def _cold(walk):
    integration.clear_cache()
    integration.before_uninstall()  # empties the location memo as well
    return walk()


def _walk_rows(quick: bool) -> list[Row]:
    from ansible.plugins.loader import init_plugin_loader

    init_plugin_loader()
    original = mc.recursive_finder
    (patch,) = integration.plan()
    drop_in = patch.value
    modules = WALK_MODULES[:3] if quick else WALK_MODULES
    rows = []
    for name in modules:
        path = ROOT / "modules" / f"{name}.py"
        rows.append(compare("finder", f"recursive_finder warm: {name}", "zip bytes + metadata",
                            _walker(original, name, path), _walker(drop_in, name, path),
                            repeat=3 if quick else 5))
    # Cold: our scan and location caches emptied before every native run, so each file is
    # parsed and located again (ansible-core's own caches, e.g. importlib's, stay warm for both).
    for name in modules[:2] if quick else modules[:4]:
        path = ROOT / "modules" / f"{name}.py"
        native = _walker(drop_in, name, path)
        rows.append(compare("finder", f"recursive_finder cold: {name}", "zip bytes + metadata",
                            _walker(original, name, path), lambda native=native: _cold(native),
                            repeat=3 if quick else 5))
    # ZIP_STORED: the same walk with zlib out of the way, to show the dependency walk itself
    # (compression belongs to the payload path).
    for name in modules[:2] if quick else modules[:4]:
        path = ROOT / "modules" / f"{name}.py"
        rows.append(compare("finder", f"recursive_finder warm stored: {name}", "zip bytes + metadata",
                            _walker(original, name, path, zipfile.ZIP_STORED),
                            _walker(drop_in, name, path, zipfile.ZIP_STORED), repeat=3 if quick else 5))
    return rows


def run(quick: bool) -> list[Row]:
    return _scan_rows(quick) + _walk_rows(quick)
