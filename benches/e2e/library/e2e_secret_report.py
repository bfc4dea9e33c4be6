#!/usr/bin/python
"""A module for the e2e secrets benchmark: options marked no_log, a large report that
contains them, and (ansible-core 2.22+) a secret it makes up and registers itself."""

from __future__ import annotations

DOCUMENTATION = r"""
module: e2e_secret_report
short_description: print a large report containing secrets (ansible-accel e2e benchmark)
options:
  password: {type: str, required: true, no_log: true, description: a secret}
  tokens: {type: list, elements: str, default: [], no_log: true, description: more secrets}
  label: {type: str, default: report, description: not a secret}
  lines: {type: int, default: 200, description: report length}
"""

import hashlib

from ansible.module_utils.basic import AnsibleModule


def main():
    module = AnsibleModule(argument_spec=dict(
        password=dict(type="str", required=True, no_log=True),
        tokens=dict(type="list", elements="str", default=[], no_log=True),
        label=dict(type="str", default="report"),
        lines=dict(type="int", default=200),
    ))
    params = module.params
    derived = "drv-" + hashlib.sha256(params["password"].encode()).hexdigest()[:24]
    try:  # 2.22+: a value the module made up becomes a secret on the controller too
        from ansible.module_utils.secrets import register_secret
    except ImportError:
        pass
    else:
        register_secret(derived)
    secrets = [params["password"], derived, *params["tokens"]]
    report = []
    for n in range(params["lines"]):
        line = f"{params['label']} line {n:04d}: status ok, checksum {n * 7919 % 100003:06d}"
        if n % 10 == 0:
            line += f" credential={secrets[n // 10 % len(secrets)]}"
        report.append(line)
    module.exit_json(changed=False, report="\n".join(report), derived=derived, count=len(report))


if __name__ == "__main__":
    main()
