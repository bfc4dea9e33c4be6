# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""An action plugin using ansible-accel's public API, with ansible-core's own functions as the
fallback where ansible-accel is not installed.

It validates its arguments against an argument spec, masks its secret in a text and in the
validated parameters, scans the imports of a module and builds a zip of given files: four
jobs whose results are the same with and without ansible-accel.  Only ``accelerated`` differs:
whether the API was importable, and how many of the calls it answered natively.
"""

from __future__ import annotations

DOCUMENTATION = r"""
action: audit
short_description: Validates its arguments, masks a secret, scans a module's imports, zips files
description:
  - An example of an action plugin calling ansible-accel's public API, with a fallback to
    ansible-core's own functions when ansible-accel cannot be imported.
options:
  name:
    description: A name, echoed in the validated parameters.
    type: str
    required: true
  count:
    description: A number (a string of digits is converted, as for any module option).
    type: int
    default: 1
  mode:
    description: One of the choices.
    type: str
    choices: [fast, safe]
    default: safe
  token:
    description: A secret, masked in RV(message) and RV(params).
    type: str
    no_log: true
  message:
    description: A text in which O(token) is masked.
    type: str
    default: ""
  module:
    description: The module whose imports are scanned, by name.
    type: str
    default: ansible.builtin.ping
  files:
    description: Archive member names and their contents, zipped in name order.
    type: dict
    default: {}
author: ansible-accel
"""

import ast
import hashlib
import inspect
import io
import zipfile

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.plugins.action import ActionBase
from ansible.plugins.loader import module_loader

try:
    import ansible_accel
    from ansible_accel import argspec as accel_argspec
    from ansible_accel import finder as accel_finder
    from ansible_accel import masking as accel_masking
    from ansible_accel import payload as accel_payload
except ImportError:
    ansible_accel = None

ARGUMENT_SPEC = {
    "name": {"type": "str", "required": True},
    "count": {"type": "int", "default": 1},
    "mode": {"type": "str", "choices": ["fast", "safe"], "default": "safe"},
    "token": {"type": "str", "no_log": True},
    "message": {"type": "str", "default": ""},
    "module": {"type": "str", "default": "ansible.builtin.ping"},
    "files": {"type": "dict", "default": {}},
}
DATE_TIME = (1980, 1, 1, 0, 0, 0)
PATHS = ("argspec", "masking", "no_log", "finder", "payload")


# --- each job: ansible-accel's function, or ansible-core's own way of doing it ----------------


def validate(parameters):
    if ansible_accel is not None:
        return accel_argspec.validate(ARGUMENT_SPEC, parameters)
    return ArgumentSpecValidator(ARGUMENT_SPEC).validate(parameters)


def mask(text, secrets):
    if ansible_accel is not None:
        return accel_masking.mask(text, secrets)
    try:  # ansible-core 2.22: registered-secret masking
        from ansible.module_utils._internal._secrets import SecretMasker
    except ImportError:  # 2.19-2.21: the no_log scrubbing
        from ansible.module_utils.common.parameters import remove_values

        return remove_values(text, secrets)
    masker = SecretMasker()
    masker.register_secret_texts(secrets)
    return masker.mask_string(text)


def module_imports(source, module_fqn, path):
    if ansible_accel is not None:
        try:
            found = accel_finder.scan_imports(source, module_fqn)
            return found.submodules, found.optional_imports
        except accel_finder.ScanFallback:
            pass  # a file ansible-core's own compile() must see: its ModuleDepFinder below
    from ansible.executor.module_common import ModuleDepFinder

    if "tree" in inspect.signature(ModuleDepFinder).parameters:  # 2.19, 2.20: a parsed tree
        finder = ModuleDepFinder(module_fqn, compile(source, path, "exec", ast.PyCF_ONLY_AST))
    else:  # 2.21+: the source itself
        finder = ModuleDepFinder(module_fqn, source)
    return finder.submodules, finder.optional_imports


def build_zip(entries):
    if ansible_accel is not None:
        return accel_payload.build_zip(entries, DATE_TIME, zipfile.ZIP_DEFLATED)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, mode="w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in entries:
            info = zipfile.ZipInfo(name, DATE_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, data)
    return buffer.getvalue()


def native_calls():
    """How many calls each path answered natively so far in this process (None without ansible-accel)."""
    if ansible_accel is None:
        return None
    status = ansible_accel.status()
    return {path: status[path]["native"] for path in PATHS if path in status}


# --- the action ---------------------------------------------------------------------------------


def module_fqn(resolved_name):
    """The dotted name ansible-core gives a module's file when it builds its payload."""
    namespace, collection, name = resolved_name.split(".", 2)
    if (namespace, collection) == ("ansible", "builtin"):
        return f"ansible.modules.{name}"
    return f"ansible_collections.{namespace}.{collection}.plugins.modules.{name}"


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        before = native_calls()

        checked = validate(self._task.args)
        if checked.error_messages:
            result.update(failed=True, msg="; ".join(checked.error_messages))
            result["accelerated"] = self._accelerated(before)
            return result
        params = checked.validated_parameters
        secrets = sorted(checked._no_log_values)  # what AnsibleModule takes its no_log values from

        found = module_loader.find_plugin_with_context(params["module"])
        if not found.resolved:
            result.update(failed=True, msg=f"module {params['module']} not found")
            return result
        with open(found.plugin_resolved_path, "rb") as handle:
            source = handle.read()
        submodules, optional = module_imports(source, module_fqn(found.resolved_fqcn), found.plugin_resolved_path)

        archive = build_zip([(name, str(params["files"][name])) for name in sorted(params["files"])])

        result.update(
            changed=False,
            params={key: mask(value, secrets) if isinstance(value, str) else value for key, value in params.items()},
            message=mask(params["message"], secrets),
            imports=sorted(".".join(parts) for parts in submodules),
            optional_imports=sorted(".".join(parts) for parts in optional),
            archive_sha256=hashlib.sha256(archive).hexdigest(),
            archive_size=len(archive),
            archive_names=zipfile.ZipFile(io.BytesIO(archive)).namelist(),
        )
        result["accelerated"] = self._accelerated(before)
        return result

    @staticmethod
    def _accelerated(before):
        after = native_calls()
        if after is None:
            return False
        return {path: after[path] - before.get(path, 0) for path in after}
