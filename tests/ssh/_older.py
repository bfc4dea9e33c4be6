"""Hosts on Python 3.8, 3.9 and 3.10, older than the test environments' interpreters: the ones
the ansible-core under test supports as targets (3.8 on 2.19; 3.9 on 2.21 and 2.22)."""

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
