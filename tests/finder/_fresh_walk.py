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
