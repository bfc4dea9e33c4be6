"""Callback plugin that switches ansible-accel on: the ansible.cfg route.

The controller creates the enabled callbacks when its task queue manager starts, before any
worker is forked, so that is early enough for every task of the run.  The switch is in the
constructor, not at import: ansible-core imports every callback plugin on its path when it
lists them, and only an enabled one should switch the accelerator on.
``ansible-accel config`` prints the lines that enable it.
"""

from __future__ import annotations

import ansible_accel
from ansible.plugins.callback import CallbackBase

DOCUMENTATION = """
    name: ansible_accel
    type: aggregate
    short_description: switch on ansible-accel's native hot paths
    description:
        - Enabling this callback calls C(ansible_accel.install()) in the controller; it handles no events.
    requirements:
        - enable in configuration
    options:
        bytecode:
            description:
                - Payloads also carry compiled bytecode, so modules start faster on the target (opt-in).
            type: bool
            default: false
            env:
                - name: ANSIBLE_ACCEL_BYTECODE
            ini:
                - section: callback_ansible_accel
                  key: bytecode
        runner:
            description:
                - Python modules run on the controller's machine start in a fork of a warm interpreter
                  (the C(runner) path); false runs each in a fresh interpreter, as ansible-core does.
            type: bool
            default: true
            env:
                - name: ANSIBLE_ACCEL_RUNNER
            ini:
                - section: callback_ansible_accel
                  key: runner
        remote_runner:
            description:
                - Python modules run on hosts reached with the C(ssh) connection start in a fork of a warm
                  interpreter on the host (the C(remote_runner) path), shipped through the task's own
                  connection; false runs each in a fresh interpreter there, as ansible-core does.
            type: bool
            default: true
            env:
                - name: ANSIBLE_ACCEL_REMOTE_RUNNER
            ini:
                - section: callback_ansible_accel
                  key: remote_runner
"""


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "ansible_accel"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        ansible_accel.install()

    def set_options(self, *args, **kwargs):
        super().set_options(*args, **kwargs)
        # ansible-core sets a callback's options just after creating it, still before any fork.
        if self.get_option("bytecode"):
            from ansible_accel._integrations import bytecode

            bytecode.opt_in()
        if not self.get_option("runner"):
            from ansible_accel._integrations import runner

            runner.switch_off("switched off by the callback's runner option")
        if not self.get_option("remote_runner"):
            from ansible_accel._integrations import ssh_runner

            ssh_runner.switch_off("switched off by the callback's remote_runner option")
