"""The same checks over the collections of the ``ansible`` community package, where it is
installed (the 3.12 environment: ansible 14.x, which goes with ansible-core 2.21).

- every .py file under plugins/modules and plugins/module_utils: scan_imports equals
  ModuleDepFinder, or falls back where compile() fails or warns (or a decoding question);
- recursive_finder on vs off, per module: every module with ANSIBLE_ACCEL_FULL=1, else an
  evenly spread sample of ANSIBLE_ACCEL_SAMPLE (default 240) of them (the full run takes
  over an hour on a busy two-core machine).
"""

from __future__ import annotations

import os
import pathlib
import warnings

import pytest

from ansible.executor import module_common as mc

from ansible_accel.finder import ScanFallback, scan_imports

from ._reference import model_dep_finder

try:
    import ansible_collections
except ImportError:  # the community package is installed in the 3.12 environment only
    COLLECTIONS_ROOT = None
else:
    COLLECTIONS_ROOT = pathlib.Path(next(iter(ansible_collections.__path__)))

pytestmark = pytest.mark.skipif(COLLECTIONS_ROOT is None or not (COLLECTIONS_ROOT / "community").is_dir(),
                                reason="the `ansible` community package is not installed in this environment")

SAMPLE = int(os.environ.get("ANSIBLE_ACCEL_SAMPLE", "240"))


def _python_files(kind: str) -> list[tuple[str, pathlib.Path, bool]]:
    files = []
    for path in sorted(COLLECTIONS_ROOT.glob(f"*/*/plugins/{kind}/**/*.py")):
        parts = ("ansible_collections",) + path.relative_to(COLLECTIONS_ROOT).with_suffix("").parts
        is_pkg_init = parts[-1] == "__init__"
        files.append((".".join(parts[:-1] if is_pkg_init else parts), path, is_pkg_init))
    return files


def test_every_collection_file_scans_like_module_dep_finder():
    files = _python_files("module_utils") + _python_files("modules")
    assert len(files) > 5000
    differences, unjustified, fallbacks = [], [], {}
    for fqn, path, is_pkg_init in files:
        source = path.read_bytes()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                reference = model_dep_finder(fqn, source, is_pkg_init)
            except Exception as ex:  # noqa: BLE001 - the reference's error is the expectation
                reference = ex
        try:
            scan = scan_imports(source, fqn, is_pkg_init)
        except ScanFallback as fallback:
            fallbacks[fallback.reason] = fallbacks.get(fallback.reason, 0) + 1
            if not (isinstance(reference, Exception) or caught or fallback.reason in ("coding_declaration", "invalid_utf8")):
                unjustified.append((fqn, fallback.reason))
            continue
        if isinstance(reference, Exception) or caught or (set(scan.submodules), set(scan.optional_imports)) != reference[:2]:
            differences.append(fqn)
    print(f"{len(files)} files; fallbacks: {fallbacks}")
    assert not differences
    assert not unjustified


def _modules() -> list[pathlib.Path]:
    modules = [path for _, path, is_pkg_init in _python_files("modules") if not is_pkg_init]
    if os.environ.get("ANSIBLE_ACCEL_FULL"):
        return modules
    step = max(1, len(modules) // SAMPLE)
    return modules[::step]


@pytest.mark.parametrize("path", _modules() if COLLECTIONS_ROOT else [],
                         ids=lambda p: ".".join(p.relative_to(COLLECTIONS_ROOT).with_suffix("").parts[:2] + (p.stem,)))
def test_collection_module_zip_and_metadata_identical(accel, path):
    from .test_recursive_finder import _both_ways

    data = path.read_bytes()
    fqn = mc._get_ansible_module_fqn(str(path))
    expected, got = _both_ways(accel, path.stem, fqn, data, str(path))
    assert got == expected
