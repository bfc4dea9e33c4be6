"""Payloads with bytecode: one module's run on the target (its AnsiBallZ file run directly by
this Python, as the target does) built without and with the ``bytecode`` path, and the
payload's growth (deflated zip, as sent).  Two rows per module: the whole run (start-up and the
module's own work), and the start-up alone: the same module given only an option it does not
support, so that it stops at argument validation, after the wrapper, every import and
``AnsibleModule``'s set-up and before any of its own work.  Each row's module results are compared (with the
times of day the module reports taken out); the "python" column is the payload without
bytecode, the "native" column the payload with it."""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import sys
import tempfile

from ._harness import Row, compare

# (module, arguments): a builtin command, a module with more module_utils, a file fact module.
MODULES = (("command", {"_raw_params": "true"}), ("copy", {"content": "x", "dest": "/nonexistent-dir/x"}), ("stat", {"path": "/"}))
QUICK_MODULES = MODULES[:1]
# Not an option of any module above: validation fails with the same message in both payloads.
STARTUP_ARGS = {"accel_startup_probe": True}
_VOLATILE_KEYS = ("start", "end", "delta")
_plugin_loader_ready = False


def _build(module: str, args: dict, workdir: str, label: str) -> bytes:
    """modify_module's AnsiBallZ file for ``module``, with a fresh ansiballz cache."""
    from ansible import constants as C
    from ansible.executor import module_common
    from ansible.parsing.dataloader import DataLoader
    from ansible.plugins.loader import init_plugin_loader, module_loader
    from ansible.template import Templar

    global _plugin_loader_ready
    if not _plugin_loader_ready:  # once: it warns when redone
        init_plugin_loader()
        _plugin_loader_ready = True
    local_tmp = tempfile.mkdtemp(prefix=f"{label}-", dir=workdir)
    saved, C.DEFAULT_LOCAL_TMP = C.DEFAULT_LOCAL_TMP, local_tmp
    try:
        task_vars = {"ansible_python_interpreter": sys.executable, "ansible_connection": "local"}
        built = module_common.modify_module(
            module_name=module,
            module_path=module_loader.find_plugin(module),
            module_args=args,
            templar=Templar(loader=DataLoader(), variables=task_vars),
            task_vars=task_vars,
            module_compression="ZIP_DEFLATED",
        )
    finally:
        C.DEFAULT_LOCAL_TMP = saved
    return built.b_module_data


def _zip_size(ansiballz: bytes) -> int:
    match = re.search(rb"zip_data='([A-Za-z0-9+/=]*)'", ansiballz)
    return len(base64.b64decode(match.group(1))) if match else 0


def _runner(path: str):
    def run_module() -> object:
        done = subprocess.run([sys.executable, path], capture_output=True, timeout=120)
        try:
            result = json.loads(done.stdout)
        except ValueError:
            return ("not JSON", done.returncode, done.stdout, done.stderr)
        for key in _VOLATILE_KEYS:
            result.pop(key, None)
        return done.returncode, result

    return run_module


def run(quick: bool) -> list[Row]:
    import ansible_accel
    from ansible_accel._integrations import bytecode as bytecode_path

    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="bench-bytecode-") as workdir:
        saved_env = os.environ.get("ANSIBLE_ACCEL_BYTECODE_CACHE")
        os.environ["ANSIBLE_ACCEL_BYTECODE_CACHE"] = os.path.join(workdir, "cache")
        files = {}
        try:
            ansible_accel.install()
            for module, args in QUICK_MODULES if quick else MODULES:
                files[(module, "run")] = [_build(module, args, workdir, "plain")]
                files[(module, "start-up")] = [_build(module, STARTUP_ARGS, workdir, "plain")]
            bytecode_path.opt_in()
            if not ansible_accel.status()["bytecode"]["active"]:
                print(f"bytecode: not active: {ansible_accel.status()['bytecode']['reason']}")
                return rows
            for module, args in QUICK_MODULES if quick else MODULES:
                files[(module, "run")].append(_build(module, args, workdir, "bytecode"))
                files[(module, "start-up")].append(_build(module, STARTUP_ARGS, workdir, "bytecode"))
        finally:
            bytecode_path._opted_in_by_config = False
            ansible_accel.uninstall()
            if saved_env is None:
                os.environ.pop("ANSIBLE_ACCEL_BYTECODE_CACHE", None)
            else:
                os.environ["ANSIBLE_ACCEL_BYTECODE_CACHE"] = saved_env
        for (module, what), (plain, with_bytecode) in files.items():
            paths = []
            for label, data in (("plain", plain), ("bytecode", with_bytecode)):
                paths.append(os.path.join(workdir, f"AnsiballZ_{module}_{what}_{label}.py"))
                with open(paths[-1], "wb") as f:
                    f.write(data)
            size_plain, size_bytecode = _zip_size(plain), _zip_size(with_bytecode)
            inputs = f"{module}: payload {size_plain // 1024} KiB"
            repeat = 3 if quick else 9
            name = "module run on the target" if what == "run" else "module start-up on the target"
            rows.append(compare("bytecode", name, inputs, _runner(paths[0]), _runner(paths[1]), repeat=repeat))
            row = rows[-1]
            print(f"{'bytecode':<10} {name:<34} {module:<34} {(1 - row.native_s / row.python_s) * 100:.0f}% less time", flush=True)
            if what != "run":
                continue
            print(
                f"{'bytecode':<10} {'payload size (deflated zip)':<34} {module:<34} "
                f"without {size_plain / 1024:.1f} KiB  with {size_bytecode / 1024:.1f} KiB  "
                f"(+{(size_bytecode - size_plain) * 100 / size_plain:.0f}%)",
                flush=True,
            )
    return rows
