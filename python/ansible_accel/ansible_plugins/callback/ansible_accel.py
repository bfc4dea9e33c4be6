"""Callback plugin that switches ansible-accel on: the ansible.cfg route.

Callbacks are loaded by the controller before any worker is forked, so importing this plugin
is early enough for every task of the run.  ``ansible-accel config`` prints the lines.
"""

from __future__ import annotations

from ansible.plugins.callback import CallbackBase

import ansible_accel

DOCUMENTATION = """
    name: ansible_accel
    type: aggregate
    short_description: switch on ansible-accel's native hot paths
    description:
        - Loading this callback calls C(ansible_accel.install()); it handles no events.
    requirements:
        - enable in configuration
"""

ansible_accel.install()


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "ansible_accel"
    CALLBACK_NEEDS_ENABLED = True
