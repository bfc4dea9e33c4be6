#!/usr/bin/python
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A small module: the action plugin scans its imports (it is not run by the example)."""

from __future__ import annotations

DOCUMENTATION = r"""
module: hello
short_description: Says hello
description: Returns a greeting for O(name).
options:
  name:
    description: Whom to greet.
    type: str
    required: true
author: ansible-accel
"""

from ansible.module_utils.basic import AnsibleModule

from ..module_utils.greeting import greet

try:
    from ansible.module_utils.common.text.converters import to_text
except ImportError:  # an optional import: ModuleDepFinder records it as such
    to_text = str


def main() -> None:
    module = AnsibleModule(argument_spec={"name": {"type": "str", "required": True}}, supports_check_mode=True)
    module.exit_json(changed=False, greeting=to_text(greet(module.params["name"])))


if __name__ == "__main__":
    main()
