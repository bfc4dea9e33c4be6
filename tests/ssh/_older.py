"""Hosts on Python 3.8, 3.9 and 3.10, older than the test environments' interpreters: the ones
the ansible-core under test supports as targets (3.8 on 2.19; 3.9 on 2.21 and 2.22); and hosts on
Python 3.14 and 3.15, newer than them, where they are installed (``/opt/accel-python``)."""

from __future__ import annotations

import os
import re
import sys

PYENV = "/root/.pyenv/versions"
OLDER = {(3, 8): "3.8.18", (3, 9): "3.9.18", (3, 10): "3.10.13"}
# Older than the runner supports: the installer refuses it.
TOO_OLD = f"{PYENV}/3.7.16/bin/python3.7"


def target_minimum() -> tuple[int, int]:
    """The oldest target Python of the ansible-core under test (``basic._PY_MIN``), read from
    its file rather than imported."""
    import ansible

    with open(os.path.join(os.path.dirname(ansible.__file__), "module_utils", "basic.py"), encoding="utf-8") as handle:
        found = re.search(r"^_PY_MIN = \((\d+), (\d+)\)", handle.read(), re.M)
    assert found, "no _PY_MIN in ansible.module_utils.basic"
    return int(found[1]), int(found[2])


# Where tests that run in every test environment take each older interpreter from, unless
# ANSIBLE_ACCEL_TESTS_ALL_INTERPRETERS=1 (then: every environment whose ansible-core supports it):
# 3.8 from 2.19's (Python 3.11), the only one that supports it; 3.9 and 3.10 from 3.12's, as the
# runs over sshd are.
HOME = {(3, 8): (3, 11), (3, 9): (3, 12), (3, 10): (3, 12)}
ALL_ENVIRONMENTS = os.environ.get("ANSIBLE_ACCEL_TESTS_ALL_INTERPRETERS") == "1"


def older_interpreters(home_only: bool = False) -> list[str]:
    """Paths of the interpreters older than 3.11 that this ansible-core supports on targets,
    oldest first (missing ones are kept: a test on one fails, as the test bed should have them);
    with ``home_only``, only those this environment is the home of (see HOME)."""
    low = target_minimum()
    return [f"{PYENV}/{full}/bin/python{v[0]}.{v[1]}" for v, full in sorted(OLDER.items())
            if v >= low and (not home_only or ALL_ENVIRONMENTS or HOME[v] == sys.version_info[:2])]


# Newer than the test environments' interpreters: not in pyenv's versions here, but installed
# (when at all) under NEWER_ROOT, as NEWER_ROOT/3.14/bin/python3.14.
NEWER_ROOT = "/opt/accel-python"
NEWER = ((3, 14), (3, 15))


def target_versions() -> set[tuple[int, int]]:
    """The target Pythons of the ansible-core under test, from its ansible-test's constants
    (``REMOTE_ONLY_PYTHON_VERSIONS`` and ``CONTROLLER_PYTHON_VERSIONS``), read from the file."""
    import ast

    import ansible

    path = os.path.join(os.path.dirname(os.path.dirname(ansible.__file__)), "ansible_test", "_util", "target", "common",
                        "constants.py")
    with open(path, encoding="utf-8") as handle:
        tree = ast.parse(handle.read(), path)
    found: set[tuple[int, int]] = set()
    for node in tree.body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and node.targets[0].id in ("REMOTE_ONLY_PYTHON_VERSIONS", "CONTROLLER_PYTHON_VERSIONS")):
            found.update(tuple(int(part) for part in version.split(".")) for version in ast.literal_eval(node.value))
    assert found, f"no target Python versions in {path}"
    return found


def newer_interpreters() -> list[str]:
    """Paths of the interpreters newer than the test environments' (3.14, 3.15) that this
    ansible-core supports on targets, oldest first, whether installed or not: a test on one that
    is missing skips (``missing_newer``), as the test bed does not install them."""
    supported = target_versions()
    return [f"{NEWER_ROOT}/{v[0]}.{v[1]}/bin/python{v[0]}.{v[1]}" for v in NEWER if v in supported]


def missing_newer(path: str) -> str | None:
    """Why a test on ``path`` (one of ``newer_interpreters``) cannot run, or None."""
    if path.startswith(NEWER_ROOT + "/") and not os.access(path, os.X_OK):
        return f"{path} is not installed (Python 3.14 and 3.15 hosts are not part of the test bed)"
    return None
