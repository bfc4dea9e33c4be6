#!/usr/bin/python
# Reports where its code and its module utils' code come from, as the module sees it.
from __future__ import annotations

DOCUMENTATION = r"""
module: reporter
short_description: report code paths (ansible-accel bytecode tests)
description: Reports module and module_utils paths, a caught traceback and a warning.
options: {}
author: ansible-accel tests
"""

import sys
import traceback
import warnings
import zipimport

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.accel_test.bytecode.plugins.module_utils import probe_util


def main():
    module = AnsibleModule(argument_spec={}, supports_check_mode=True)
    try:
        probe_util.fail()
    except ValueError:
        caught = traceback.format_exc()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        probe_util.warn()
    names = ("ansible", "ansible.module_utils", "ansible.module_utils.basic", probe_util.__name__, "__main__")
    modules = {
        name: [getattr(sys.modules[name], "__file__", None), getattr(sys.modules[name], "__cached__", None)]
        for name in names
    }
    module.warn("a module warning")
    module.exit_json(
        changed=False,
        caught_traceback=caught,
        python_warnings=[[w.filename, w.lineno, str(w.message)] for w in seen],
        modules=modules,
        code_file=main.__code__.co_filename,
        bytecode_shim=zipimport._get_module_code.__module__ != "zipimport",
    )


if __name__ == "__main__":
    main()
