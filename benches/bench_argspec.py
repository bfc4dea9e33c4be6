"""ArgumentSpecValidator.validate: ansible-core's pure Python vs the native path, on a small
spec, on specs shaped like ansible.builtin.file / copy, on the real specs of user, file, copy,
uri and amazon.aws.ec2_instance (captured from the installed modules) with typical parameters,
and on a role's meta/argument_specs.yml validated for 1,000 hosts as the controller does.

What is timed is ``validate()`` itself; the results of both paths are compared (outside the
timed calls) on everything a caller sees."""

from __future__ import annotations

import importlib
import json
import os

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


class _Captured(BaseException):
    pass


def real_spec(module_name: str) -> dict | None:
    """The keyword arguments module ``module_name``'s main() gives AnsibleModule, or None."""
    from ansible.module_utils import basic

    found: list = []

    class StandIn:
        def __init__(self, *args, **kwargs):
            kwargs.update(zip(("argument_spec",), args))
            found.append(kwargs)
            raise _Captured

    real = basic.AnsibleModule
    basic.AnsibleModule = StandIn
    try:
        module = importlib.import_module(module_name)
        importlib.reload(module)  # binds the stand-in if it was imported before
        module.main()
    except _Captured:
        pass
    except Exception:  # noqa: BLE001 - not installed here, or fails before AnsibleModule
        return None
    finally:
        basic.AnsibleModule = real
    if not found:
        return None
    keys = ("mutually_exclusive", "required_together", "required_one_of", "required_if", "required_by")
    spec = found[0]["argument_spec"]
    if found[0].get("add_file_common_args"):
        # As AnsibleModule does before it validates: the file options every such module takes.
        from ansible.module_utils.basic import FILE_COMMON_ARGUMENTS

        for name, option in FILE_COMMON_ARGUMENTS.items():
            spec.setdefault(name, option)
    return {"spec": spec, "checks": {k: found[0][k] for k in keys if found[0].get(k) is not None}}


REAL_PARAMS = {
    "ansible.modules.user": {"name": "deploy", "state": "present", "groups": "wheel,docker", "append": "yes",
                             "shell": "/bin/bash", "create_home": True, "comment": "Deploy user", "uid": "1050"},
    "ansible.modules.file": {"path": "/etc/app/conf.d", "state": "directory", "mode": "0755", "owner": "root",
                             "group": "root", "recurse": "no"},
    "ansible.modules.copy": {"src": "/tmp/ansible-tmp/source", "dest": "/etc/motd", "mode": "0644", "owner": "root",
                             "backup": True, "_original_basename": "motd"},
    "ansible.modules.uri": {"url": "https://example.com/api/v1/items", "method": "POST", "body_format": "json",
                            "body": {"name": "x", "size": 3}, "status_code": [200, 201], "headers": {"X-Token": "t"},
                            "return_content": "yes", "timeout": "10"},
    "ansible_collections.amazon.aws.plugins.modules.ec2_instance": {
        "name": "web-1", "state": "running", "instance_type": "t3.micro", "image_id": "ami-0123456789",
        "tags": {"env": "prod", "team": "web"}, "security_groups": ["sg-1", "sg-2"], "wait": "yes",
        "network_interfaces": [{"assign_public_ip": True, "groups": ["sg-1"], "delete_on_termination": "yes"}],
        "volumes": [{"device_name": "/dev/sda1", "ebs": {"volume_size": "20", "volume_type": "gp3"}}],
        "metadata_options": {"http_tokens": "required"},
    },
}

ROLE_SPEC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                         "tests", "demo", "roles", "demo_app", "meta", "argument_specs.yml")


def role_case():
    """The demo role's entry point spec and per-host parameters, loaded as the controller
    loads them (tagged YAML data), or None before 2.19."""
    try:
        from ansible.module_utils._internal._datatag import AnsibleTagHelper  # noqa: F401
        from ansible.parsing.yaml.loader import AnsibleLoader
        import yaml
    except ImportError:
        return None
    with open(ROLE_SPEC) as handle:
        spec = yaml.load(handle, Loader=AnsibleLoader)["argument_specs"]["main"]["options"]
    hosts = [yaml.load(
        f"app_name: app{i}\napp_root: /srv/app{i}\napp_port: '80{i % 90 + 10}'\napp_secret: s{i}x\n"
        f"app_users: [{{name: u{i}, login_shell: /bin/bash}}]\napp_features: {{metrics: 'yes'}}\n",
        Loader=AnsibleLoader) for i in range(1000)]
    return spec, hosts


def _same(a, b) -> bool:
    """Results compared on everything a caller sees (outside the timed calls)."""
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return _observe(a) == _observe(b)


def _observe(result) -> tuple:
    return (
        repr(result.validated_parameters),  # repr: True and 1, 1 and 1.0 differ
        result.validated_parameters,
        [(type(e).__name__, str(e)) for e in result.errors],
        sorted(result.unsupported_parameters),
        sorted(result._no_log_values),
        result._warnings,
        result._deprecations,
    )


def _fresh_specs_row(name, spec, checks, params, pure_validate, native_validate, quick) -> Row:
    """Each call with spec objects never seen before (made ahead, outside the timed calls):
    what a forked worker or a module process pays, the native side compiling every time."""
    import copy

    from ansible.module_utils.common import arg_spec

    repeat, number = (3, 50) if quick else (7, 200)
    # Both sides: a warm-up call, then `repeat` batches of `number` calls.
    made = {side: [copy.deepcopy((spec, checks)) for _ in range(1 + repeat * number)] for side in ("py", "native")}

    def call(side, validate):
        fresh_spec, fresh_checks = made[side].pop()
        return validate(arg_spec.ArgumentSpecValidator(fresh_spec, **fresh_checks), params)

    return compare(
        "argspec", name, "compile every call",
        lambda: call("py", pure_validate), lambda: call("native", native_validate),
        repeat=repeat, number=number, same=_same,
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
            lambda v=validator, p=params: pure_validate(v, p),
            lambda v=validator, p=params: native_validate(v, p),
            repeat=3 if quick else 7, number=number, same=_same,
        ))
        rows.append(_fresh_specs_row(f"new spec + validator + validate {name}", spec, checks, params,
                                     pure_validate, native_validate, quick))
    for module_name, params in REAL_PARAMS.items():
        found = real_spec(module_name)
        short = module_name.rsplit(".", 1)[-1]
        if found is None:
            print(f"argspec: {module_name} not installed here")
            continue
        spec, checks = found["spec"], found["checks"]
        validator = arg_spec.ArgumentSpecValidator(spec, **checks)
        rows.append(compare(
            "argspec", f"validate real {short}", f"{len(spec)} options, {len(params)} params",
            lambda v=validator, p=params: pure_validate(v, p),
            lambda v=validator, p=params: native_validate(v, p),
            repeat=3 if quick else 7, number=number, same=_same,
        ))
        # As a module gets them: decoded from JSON, so no key is the spec's own str object
        # (the literal keys above are, which some native lookups take a shorter way for).
        decoded = json.loads(json.dumps(params))
        rows.append(compare(
            "argspec", f"validate real {short}, JSON-decoded parameters", f"{len(spec)} options, {len(params)} params",
            lambda v=validator, p=decoded: pure_validate(v, p),
            lambda v=validator, p=decoded: native_validate(v, p),
            repeat=3 if quick else 7, number=number, same=_same,
        ))
        rows.append(_fresh_specs_row(f"new spec + validator + validate real {short}", spec, checks, params,
                                     pure_validate, native_validate, quick))
    role = role_case()
    if role is not None:
        spec, hosts = role
        hosts = hosts[:100] if quick else hosts

        def per_host(validate):
            # What the validate_argument_spec action does for each host: a new validator.
            return [validate(arg_spec.ArgumentSpecValidator(spec), params) for params in hosts]

        rows.append(compare(
            "argspec", "role spec, one validator per host", f"{len(hosts)} hosts, tagged YAML data",
            lambda: per_host(pure_validate), lambda: per_host(native_validate), repeat=3, number=1, same=_same,
        ))
    status = ansible_accel.status()["argspec"]
    print(f"argspec counters: native={status['native']} fallback={status['fallback']}")
    return rows
