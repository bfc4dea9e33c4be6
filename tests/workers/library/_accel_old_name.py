#!/usr/bin/python
"""A module found only through its deprecated alias (ansible-core resolves ``accel_old_name``
to ``_accel_old_name`` and says so), for the plugin lookups made ahead of the workers."""

from __future__ import annotations

from ansible.module_utils.basic import AnsibleModule


def main() -> None:
    module = AnsibleModule(argument_spec={}, supports_check_mode=True)
    module.exit_json(changed=False, found="by its old name")


if __name__ == "__main__":
    main()
