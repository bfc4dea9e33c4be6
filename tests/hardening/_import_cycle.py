"""Run as a script: a module whose module_utils import each other in a cycle (cyc_a -> cyc_b ->
cyc_a, plus a package importing itself), through ansible-core's own ``recursive_finder`` with and
without the accelerator; prints "same payload" when both zips hold the same files and bytes."""

from __future__ import annotations

import datetime
import io
import os
import pathlib
import shutil
import sys
import tempfile
import zipfile

root = pathlib.Path(tempfile.mkdtemp(prefix="accel-cycle-"))
(root / "cyc_a.py").write_text("from ansible.module_utils.cyc_b import B\nA = 1\n")
(root / "cyc_b.py").write_text("from ansible.module_utils import cyc_a\nfrom ansible.module_utils.cyc_pkg import sub\nB = 2\n")
(root / "cyc_pkg").mkdir()
(root / "cyc_pkg" / "__init__.py").write_text("from . import sub\nfrom ansible.module_utils.cyc_pkg.sub import S\n")
(root / "cyc_pkg" / "sub.py").write_text("from .. import cyc_a\nfrom ansible.module_utils.cyc_pkg import sub\nS = 3\n")
os.environ["ANSIBLE_MODULE_UTILS"] = str(root)

MODULE = b"#!/usr/bin/python\nfrom ansible.module_utils.basic import AnsibleModule\nfrom ansible.module_utils.cyc_a import A\n"
WHEN = datetime.datetime(2024, 1, 2, 3, 4, 5)


def payload() -> dict[str, bytes]:
    from ansible._internal._ansiballz import _builder
    from ansible.executor import module_common

    buffer = io.BytesIO()
    archive = zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED)
    module_common.recursive_finder("cyc", "ansible.modules.cyc", MODULE, archive, WHEN, _builder.ExtensionManager.create(task_vars={}))
    archive.close()
    with zipfile.ZipFile(io.BytesIO(buffer.getvalue())) as done:
        return {name: done.read(name) for name in done.namelist()}


def main() -> int:
    from ansible.plugins.loader import init_plugin_loader

    import ansible_accel

    init_plugin_loader()
    expected = payload()
    ansible_accel.install()
    try:
        got = payload()
        native = ansible_accel.status()
    finally:
        ansible_accel.uninstall()
    names = sorted(n for n in expected if "cyc" in n)
    assert len(names) == 4, names
    if got != expected:
        print("differs:", sorted(set(got) ^ set(expected)) or "same names, other bytes")
        return 1
    assert native["finder"]["events"].get("recursive_finder"), native["finder"]  # the native walk ran
    print("same payload", names)
    return 0


if __name__ == "__main__":
    try:
        status = main()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    sys.exit(status)
