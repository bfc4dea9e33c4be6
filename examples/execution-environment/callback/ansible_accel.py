"""ansible-accel's callback for an execution environment: the accelerator on in every run.

It is the package's callback (``ansible_accel/ansible_plugins/callback/ansible_accel.py``, the
``ansible.cfg`` route), with one difference: it needs no enabling.  ansible-core creates every
callback on its callback path that needs no enabling, so this one switches the accelerator on
whatever ``callbacks_enabled`` says: AWX and Automation Platform set
``ANSIBLE_CALLBACKS_ENABLED`` for each job, which replaces what an image or a project's
``ansible.cfg`` says.  The image puts it on ansible-core's default callback path,
``/usr/share/ansible/plugins/callback``.  ``ANSIBLE_ACCEL=0`` still switches everything off,
and the package's settings apply as documented (the options below, the environment variables).
"""

from __future__ import annotations

from ansible_accel.ansible_plugins.callback.ansible_accel import CallbackModule as EnabledCallback

# The package callback's options, so that [callback_ansible_accel] in ansible.cfg and the
# environment variables work here too (ansible-core reads them from this file's documentation).
DOCUMENTATION = """
    name: ansible_accel
    type: aggregate
    short_description: switch on ansible-accel's native hot paths in every run
    description:
        - Calls C(ansible_accel.install()) in the controller, before any worker forks; it handles no events.
        - Needs no enabling; C(ANSIBLE_ACCEL=0) switches the accelerator off.
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


class CallbackModule(EnabledCallback):
    CALLBACK_NEEDS_ENABLED = False
