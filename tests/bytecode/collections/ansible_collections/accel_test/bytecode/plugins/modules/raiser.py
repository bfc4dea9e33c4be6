#!/usr/bin/python
# Raises from a module util: the failure carries a traceback.
from __future__ import annotations

DOCUMENTATION = r"""
module: raiser
short_description: raise an exception (ansible-accel bytecode tests)
description: Raises ValueError from a module util.
options: {}
author: ansible-accel tests
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.accel_test.bytecode.plugins.module_utils import probe_util


def main():
    AnsibleModule(argument_spec={})
    probe_util.fail("uncaught")


if __name__ == "__main__":
    main()
