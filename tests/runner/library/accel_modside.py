#!/usr/bin/python
"""A module with a spec of every kind of option (aliases, deprecated aliases, choices, no_log,
fallbacks, sub-options, removed options) that returns what it validated and text holding its
no_log values (for the tests of the module-side paths)."""

from __future__ import annotations

from ansible.module_utils.basic import AnsibleModule, env_fallback, sanitize_keys

SPEC = dict(
    name=dict(type="str", required=True),
    password=dict(type="str", no_log=True, aliases=["pass"]),
    token=dict(type="str", no_log=True, fallback=(env_fallback, ["ACCEL_MODSIDE_TOKEN"])),
    count=dict(type="int", default=3),
    ratio=dict(type="float"),
    flag=dict(type="bool", default=False),
    mode=dict(type="str", choices=["fast", "slow"], default="fast"),
    items=dict(type="list", elements="str", default=[]),
    old_name=dict(type="str", aliases=["legacy_name"],
                  deprecated_aliases=[dict(name="legacy_name", version="9.0.0", collection_name="ansible.builtin")]),
    nested=dict(type="dict", options=dict(
        user=dict(type="str", required=True),
        secret=dict(type="str", no_log=True),
        port=dict(type="int", default=22),
    )),
    servers=dict(type="list", elements="dict", options=dict(
        host=dict(type="str", required=True),
        key=dict(type="str", no_log=True),
    )),
    size=dict(type="bytes"),
    removed=dict(type="str", removed_in_version="9.0.0", removed_from_collection="ansible.builtin"),
    repeat=dict(type="int", default=50),
)


def main():
    module = AnsibleModule(
        argument_spec=SPEC,
        mutually_exclusive=[["ratio", "size"]],
        required_if=[["mode", "slow", ["ratio"]]],
        supports_check_mode=True,
    )
    params = module.params
    secrets = [s for s in (params["password"], params["token"], (params["nested"] or {}).get("secret")) if s]
    text = " ".join(f"value {s} and again {s}-{s}" for s in secrets)
    blob = {f"key-{i}": {"text": text, "list": [text, i, None, True], s: i} for i, s in enumerate(secrets * params["repeat"])}
    module.exit_json(
        changed=False,
        validated=params,
        text=text,
        blob=blob,
        keys=sanitize_keys({s: s for s in secrets}, module.no_log_values),
        no_log_values=sorted(module.no_log_values),
    )


if __name__ == "__main__":
    main()
