"""The host-side Python client (``_runner_remote_client.py``, run as ``PYTHON -I -S CLIENT``)
against the native client's protocol suite (``tests/runner/test_client_protocol.py``): the same
fake runner, the same checks, with the client program replaced by the Python one."""

from __future__ import annotations

import glob
import os
import sys

import pytest
from _older import missing_newer, newer_interpreters

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "runner"))
import ansible_accel

# The native client's whole suite, collected here again with the `client` fixture below.
from test_client_protocol import *

CLIENT = os.path.join(os.path.dirname(ansible_accel.__file__), "_runner_remote_client.py")
# The oldest Python a managed node may have (ansible-core 2.19's targets start at 3.8), where
# this machine has it, besides this environment's; and 3.14 and 3.15 where this ansible-core
# supports them (skipped where they are not installed).
OLDEST = sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.8*/bin/python3.8")))[-1:]


@pytest.fixture(scope="module", params=[sys.executable, *OLDEST, *newer_interpreters()], ids=lambda p: os.path.basename(p))
def client(request, tmp_path_factory) -> str:
    """The Python client as a program of its own: its text after a ``#!PYTHON -IS`` line (no
    shell in between, which would change the environment it passes on)."""
    missing = missing_newer(request.param)
    if missing:
        pytest.skip(missing)
    where = tmp_path_factory.mktemp("client")
    os.chmod(where, 0o700)
    path = where / "ansible-accel-run"
    with open(CLIENT, "rb") as handle:
        path.write_bytes(f"#!{request.param} -IS\n".encode() + handle.read())
    os.chmod(path, 0o700)
    return str(path)
