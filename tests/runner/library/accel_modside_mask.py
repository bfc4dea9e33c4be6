#!/usr/bin/python
"""A module that registers secrets with ansible-core 2.22's shared masker and returns texts it
masked (``ansible.module_utils.secrets``), and logs them (``AnsibleModule.log`` masks what it
logs): for the tests of the module-side masking."""

from __future__ import annotations

from ansible.module_utils import secrets
from ansible.module_utils.basic import AnsibleModule


def main():
    module = AnsibleModule(
        argument_spec=dict(
            texts=dict(type="list", elements="str", required=True),
            words=dict(type="list", elements="str", default=[]),
            placeholder=dict(type="str", default="$REDACTED$"),
            repeat=dict(type="int", default=1),
        ),
        supports_check_mode=True,
    )
    params = module.params
    # Registered by the module itself (not no_log options, which the controller masks later).
    secrets.register_secrets(params["words"])
    texts = [text * params["repeat"] for text in params["texts"]]
    masked = [secrets.mask_secrets(text, mask_placeholder=params["placeholder"]) for text in texts]
    plain = [secrets.mask_secrets(text) for text in texts]
    for text in texts:
        module.log(text)
    module.exit_json(changed=False, masked=masked, plain=plain, sizes=[len(text) for text in masked])


if __name__ == "__main__":
    main()
