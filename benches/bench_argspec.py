"""ArgumentSpecValidator.validate: ansible-core's pure Python vs the native path, on a small
spec and on specs shaped like ansible.builtin.file / copy with typical parameters."""

from __future__ import annotations

from ._harness import Row, compare

FIVE = {
    "name": {"type": "str", "required": True},
    "state": {"type": "str", "choices": ["present", "absent"], "default": "present"},
    "count": {"type": "int", "default": 1},
    "force": {"type": "bool", "default": False},
    "tags": {"type": "list", "elements": "str"},
}
FIVE_PARAMS = {"name": "web", "state": "absent", "count": "3", "force": "yes", "tags": "a,b"}

# The options of FILE_COMMON_ARGUMENTS that every file-handling module gets.
FILE_COMMON = {
    "mode": {"type": "raw"},
    "owner": {"type": "str"},
    "group": {"type": "str"},
    "seuser": {"type": "str"},
    "serole": {"type": "str"},
    "selevel": {"type": "str"},
    "setype": {"type": "str"},
    "attributes": {"type": "str", "aliases": ["attr"]},
    "unsafe_writes": {"type": "bool", "default": False},
}
FILE_SPEC = {
    "state": {"type": "str", "choices": ["absent", "directory", "file", "hard", "link", "touch"]},
    "path": {"type": "path", "required": True, "aliases": ["dest", "name"]},
    "_original_basename": {"type": "str"},
    "recurse": {"type": "bool", "default": False},
    "force": {"type": "bool", "default": False},
    "follow": {"type": "bool", "default": True},
    "modification_time": {"type": "str"},
    "modification_time_format": {"type": "str", "default": "%Y%m%d%H%M.%S"},
    "access_time": {"type": "str"},
    "access_time_format": {"type": "str", "default": "%Y%m%d%H%M.%S"},
    "src": {"type": "path"},
    "_diff_peek": {"type": "bool"},
    **FILE_COMMON,
}
FILE_PARAMS = {"path": "/etc/app/conf.d", "state": "directory", "mode": "0755", "owner": "root", "group": "root", "recurse": "no"}

COPY_SPEC = {
    "src": {"type": "path"},
    "_original_basename": {"type": "str"},
    "content": {"type": "str", "no_log": True},
    "dest": {"type": "path", "required": True},
    "backup": {"type": "bool", "default": False},
    "force": {"type": "bool", "default": True, "aliases": ["thirsty"]},
    "validate": {"type": "str"},
    "directory_mode": {"type": "raw"},
    "remote_src": {"type": "bool"},
    "local_follow": {"type": "bool"},
    "checksum": {"type": "str"},
    "follow": {"type": "bool", "default": False},
    **FILE_COMMON,
}
COPY_PARAMS = {"src": "/tmp/ansible-tmp/source", "dest": "/etc/motd", "mode": "0644", "owner": "root", "backup": True, "content": None, "_original_basename": "motd"}
COPY_CHECKS = {"mutually_exclusive": [["content", "src"]], "required_one_of": [["content", "src", "_original_basename"]]}


# A nested spec in the style of cloud collection modules (lists of dicts with sub-options).
NESTED_SPEC = {
    "name": {"type": "str", "required": True},
    "state": {"type": "str", "choices": ["present", "absent", "running", "stopped"], "default": "present"},
    "instance_type": {"type": "str", "default": "t3.micro"},
    "tags": {"type": "dict", "aliases": ["resource_tags"]},
    "purge_tags": {"type": "bool", "default": True},
    "wait": {"type": "bool", "default": True},
    "wait_timeout": {"type": "int", "default": 600},
    "network": {
        "type": "dict",
        "options": {
            "assign_public_ip": {"type": "bool"},
            "private_ip_address": {"type": "str"},
            "subnet_id": {"type": "str"},
            "security_groups": {"type": "list", "elements": "str"},
            "delete_on_termination": {"type": "bool", "default": True},
        },
    },
    "volumes": {
        "type": "list",
        "elements": "dict",
        "options": {
            "device_name": {"type": "str", "required": True},
            "ebs": {
                "type": "dict",
                "options": {
                    "volume_size": {"type": "int"},
                    "volume_type": {"type": "str", "choices": ["gp2", "gp3", "io1", "st1"], "default": "gp3"},
                    "delete_on_termination": {"type": "bool", "default": True},
                    "encrypted": {"type": "bool"},
                    "iops": {"type": "int"},
                },
            },
        },
    },
    "user_data": {"type": "str"},
    "metadata_options": {
        "type": "dict",
        "apply_defaults": True,
        "options": {
            "http_endpoint": {"choices": ["enabled", "disabled"], "default": "enabled"},
            "http_tokens": {"choices": ["optional", "required"], "default": "optional"},
            "http_put_response_hop_limit": {"type": "int", "default": 1},
        },
    },
}
NESTED_PARAMS = {
    "name": "web-1",
    "state": "running",
    "tags": {"env": "prod", "team": "web"},
    "network": {"assign_public_ip": "yes", "subnet_id": "subnet-1", "security_groups": "sg-1,sg-2"},
    "volumes": [
        {"device_name": "/dev/sda1", "ebs": {"volume_size": "20", "volume_type": "gp3"}},
        {"device_name": "/dev/sdb", "ebs": {"volume_size": 100, "encrypted": True}},
    ],
}


def _observe(result) -> tuple:
    return (
        result.validated_parameters,
        [(type(e).__name__, str(e)) for e in result.errors],
        sorted(result.unsupported_parameters),
        sorted(result._no_log_values),
        result._warnings,
        result._deprecations,
    )


def run(quick: bool) -> list[Row]:
    import ansible_accel
    from ansible.module_utils.common import arg_spec

    ansible_accel.install()
    if not ansible_accel.status()["argspec"]["active"]:
        print("argspec: not active here:", ansible_accel.status()["argspec"]["reason"])
        return []
    native_validate = arg_spec.ArgumentSpecValidator.validate
    pure_validate = native_validate.__ansible_accel_original__
    number = 200 if quick else 2000
    rows = []
    cases = [
        ("5-option spec", FIVE, FIVE_PARAMS, {}),
        ("file-like spec", FILE_SPEC, FILE_PARAMS, {}),
        ("copy-like spec", COPY_SPEC, COPY_PARAMS, COPY_CHECKS),
        ("nested spec", NESTED_SPEC, NESTED_PARAMS, {}),
    ]
    for name, spec, params, checks in cases:
        validator = arg_spec.ArgumentSpecValidator(spec, **checks)
        rows.append(compare(
            "argspec", f"validate {name}", f"{len(spec)} options, {len(params)} params",
            lambda v=validator, p=params: _observe(pure_validate(v, p)),
            lambda v=validator, p=params: _observe(native_validate(v, p)),
            repeat=3 if quick else 7, number=number,
        ))
        # A fresh validator per call: what a forked worker pays (compile included).
        rows.append(compare(
            "argspec", f"new validator + validate {name}", "compile every call",
            lambda s=spec, c=checks, p=params: _observe(pure_validate(arg_spec.ArgumentSpecValidator(s, **c), p)),
            lambda s=spec, c=checks, p=params: _observe(native_validate(arg_spec.ArgumentSpecValidator(s, **c), p)),
            repeat=3 if quick else 7, number=number,
        ))
    status = ansible_accel.status()["argspec"]
    print(f"argspec counters: native={status['native']} fallback={status['fallback']}")
    return rows
