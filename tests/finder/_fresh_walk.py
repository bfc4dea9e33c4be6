"""The start of the scripts that walk in a fresh interpreter (``python -c``): ansible-core's
plugin loader set up as ansible-playbook sets it up, then the accelerator installed."""

PRELUDE = r"""
import datetime, io, json, os, sys, time, zipfile
from ansible.plugins.loader import init_plugin_loader
init_plugin_loader()
from ansible.executor import module_common as mc
from ansible._internal._ansiballz import _builder
from ansible._internal._datatag._tags import Origin
import ansible_accel
ansible_accel.install()
"""

#: For walks compared with ansible-core's own ``original`` at a fixed date, over files the
#: test has just written: a short "too recent to trust" window, so they are remembered soon.
COMPARED_SOON_AFTER_WRITES = PRELUDE + r"""
from ansible_accel._integrations import _finder_locate
_finder_locate._RACY_NS = 50_000_000
original = mc.recursive_finder.__wrapped_original__
date_time = datetime.datetime(2024, 5, 6, 7, 8, 10, tzinfo=datetime.timezone.utc)
"""


class ModuleUtilsWalks:
    """Runs a walk script in fresh interpreters the way several processes of one run would:
    a private local tmp root (where the finder leaves its records) and a module_utils
    directory, both under ``tmp_path``, the finder's disk records on."""

    def __init__(self, tmp_path, script: str) -> None:
        self.local_tmp = tmp_path / "local_tmp"
        self.local_tmp.mkdir(mode=0o700)
        self.module_utils = tmp_path / "module_utils"
        self.module_utils.mkdir()
        self.script = script

    def __call__(self, accelerated: bool, *args: str) -> dict:
        """The JSON the script printed last, run with ``args``, the accelerator on or off."""
        import json
        import os
        import subprocess
        import sys

        env = dict(os.environ, ANSIBLE_LOCAL_TEMP=str(self.local_tmp), ANSIBLE_MODULE_UTILS=str(self.module_utils),
                   ANSIBLE_ACCEL="1" if accelerated else "0", ANSIBLE_ACCEL_FINDER_DISK="1")
        out = subprocess.run([sys.executable, "-c", self.script, *args], env=env, capture_output=True, text=True,
                             check=True)
        return json.loads(out.stdout.strip().splitlines()[-1])
