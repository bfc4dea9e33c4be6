"""A become plugin for the tests: util-linux's ``runuser`` runs the command as the become
user (only root may use it; it asks no password and prints no prompt), and, unlike ``su``,
lets ansible-core pipeline modules to it, so that a become task's module can arrive on
standard input as well as in a file."""

from __future__ import annotations

import shlex

from ansible.plugins.become import BecomeBase

DOCUMENTATION = """
    name: accel_runuser
    short_description: run commands as another user with runuser (root only)
    description:
        - Runs the command as O(become_user) with C(runuser -u USER --), which only root may use.
        - Supports pipelining.
    options:
        become_user:
            description: the user to run the command as
            default: root
            vars:
              - name: ansible_become_user
            keyword:
              - name: become_user
        become_exe:
            description: the runuser program
            default: runuser
            vars:
              - name: ansible_become_exe
            keyword:
              - name: become_exe
"""


class BecomeModule(BecomeBase):
    name = "accel_runuser"
    pipelining = True

    def build_become_command(self, cmd, shell):
        super().build_become_command(cmd, shell)
        if not cmd:
            return cmd
        exe = self.get_option("become_exe") or "runuser"
        user = self.get_option("become_user") or "root"
        return f"{shlex.quote(exe)} -u {shlex.quote(user)} -- {self._build_success_command(cmd, shell)}"
