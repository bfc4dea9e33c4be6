"""Switching the accelerator on and off inside the installed ansible-core.

Each hot path has an integration module under ``_integrations`` that, given the running
ansible-core version, returns the patches it needs or raises ``Unavailable`` with a reason
(``_patches``).  ``install()`` applies every available path's patches; ``uninstall()`` puts
back the very objects that were there before (compared with ``is``).
"""

from __future__ import annotations

import dataclasses
import importlib
import os
import re
import threading

from . import _counters
from ._patches import MISSING as _MISSING  # noqa: F401 - looked at by tests
from ._patches import Applied as _Applied
from ._patches import Patch, Unavailable  # noqa: F401 - the integrations take them from here
from ._patches import apply as _apply
from ._patches import revert as _revert
from ._patches import switched_off as _switched_off

PATH_MODULES = {
    "finder": "finder",
    "payload": "payload",
    "argspec": "argspec",
    "masking": "masking",
    "no_log": "no_log",
    "bytecode": "bytecode",
    "runner": "runner",
    "remote_runner": "ssh_runner",
    "ssh_client": "ssh_client",
    "workers": "workers",
    "controller": "controller",
}

SUPPORTED_TEXT = "2.19.x, 2.21.x and 2.22.0 pre-releases; 2.20.x accepted, untested"
# Minor versions the accelerator switches on for without a test environment of their own.
UNTESTED_MINORS = (20,)


@dataclasses.dataclass
class _PathState:
    active: bool = False
    reason: str | None = "not installed"
    applied: list[_Applied] = dataclasses.field(default_factory=list)


_lock = threading.RLock()
_installed = False
_paths: dict[str, _PathState] = {p: _PathState() for p in PATH_MODULES}
_core_version: str | None = None
_global_reason: str | None = None


def core_version() -> str | None:
    """The installed ansible-core's version, or None when it cannot be imported.

    ``ansible.module_utils.ansible_release`` answers where only module_utils is importable
    (ansible-test runs module_utils unit tests against such a reduced ``ansible`` package).
    """
    for module_name in ("ansible.release", "ansible.module_utils.ansible_release"):
        try:
            return importlib.import_module(module_name).__version__
        except Exception:  # noqa: BLE001 - any import failure means "try the next / not usable"
            continue
    return None


def version_support(version: str | None) -> str | None:
    """None when ``version`` is supported, else the reason it is not."""
    if version is None:
        return "ansible-core is not importable"
    match = re.fullmatch(r"2\.(\d+)\.(\d+)(.*)", version)
    if match:
        minor, patch, rest = int(match[1]), int(match[2]), match[3]
        if minor in (19, 20, 21) and re.fullmatch(r"((a|b|rc)\d+|\.dev\d+|\.post\d+)?", rest):
            return None
        if minor == 22 and patch == 0 and re.fullmatch(r"(a|b|rc)\d+|\.dev\d+", rest):
            return None
    return f"ansible-core {version} is not supported (supported: {SUPPORTED_TEXT})"


def support_word(version: str | None) -> str:
    """How ``version`` is supported, in a word or two, for people."""
    if version_support(version) is not None:
        return "not supported"
    if re.match(r"2\.(\d+)\.", version) and int(version.split(".")[1]) in UNTESTED_MINORS:
        return "accepted, untested"
    return "supported"


def core_minor() -> tuple[int, int]:
    """(major, minor) of the running ansible-core, for integrations choosing a signature."""
    version = core_version() or "0.0"
    major, minor = version.split(".")[:2]
    return int(major), int(minor)


def disabled_by_env() -> bool:
    return _switched_off("ANSIBLE_ACCEL") is not None


def install() -> dict:
    """Switch on every available hot path; idempotent.  Returns ``status()``."""
    global _installed, _core_version, _global_reason
    with _lock:
        if _installed:
            return status()
        # (imported here, as the integrations are: a process that imports the package without
        # switching it on, such as a module in a warm runner, does without what it imports)
        from . import _stats

        _core_version = core_version()
        _global_reason = (
            f"disabled by ANSIBLE_ACCEL={os.environ['ANSIBLE_ACCEL'].strip()}"
            if disabled_by_env()
            else version_support(_core_version)
        )
        if _global_reason is not None:
            for state in _paths.values():
                state.active, state.reason = False, _global_reason
            _stats.activate(status, hook_workers=False)  # the stats file then says why nothing ran
            return status()
        _stats.activate(status)
        for path, module_name in PATH_MODULES.items():
            _install_path(path, module_name)
        from ._integrations import modside_target

        modside_target.install()  # never raises
        _installed = True
        return status()


def _install_path(path: str, module_name: str) -> None:
    """Switch one path on, or leave it off with the reason.  A failing integration never
    breaks the ansible run it is loaded into: whatever it patched is put back and status()
    says what went wrong."""
    state = _paths[path]
    applied: list[_Applied] = []
    try:
        integration = importlib.import_module(f"{__package__}._integrations.{module_name}")
        patches = integration.plan()
        for patch in patches:
            applied.append(_apply(patch))
        hook = getattr(integration, "after_install", None)
        if hook is not None:
            hook()
    except Exception as ex:  # noqa: BLE001 - see the docstring
        for item in reversed(applied):
            _revert(item)
        state.active, state.applied, state.reason = False, [], _unavailable_reason(ex)
        return
    state.active, state.reason, state.applied = True, None, applied


def _unavailable_reason(ex: Exception) -> str:
    if isinstance(ex, Unavailable):
        return str(ex)
    if isinstance(ex, ModuleNotFoundError) and (ex.name or "").split(".")[0] == "ansible":
        # a module_utils-only ``ansible`` package, as ansible-test gives module_utils tests
        return f"{ex.name} is not importable here"
    return f"failed to switch on: {type(ex).__name__}: {ex}"


def uninstall() -> dict:
    """Put back every original object; idempotent.  Returns ``status()``."""
    global _installed
    with _lock:
        from ._integrations import modside_target

        modside_target.uninstall()
        # Last installed, first reverted: two paths patching one attribute unwind correctly.
        for path, state in reversed(_paths.items()):
            try:
                if state.active:
                    integration = importlib.import_module(f"{__package__}._integrations.{PATH_MODULES[path]}")
                    hook = getattr(integration, "before_uninstall", None)
                    if hook is not None:
                        hook()
            finally:  # the originals go back even if a hook fails
                for item in reversed(state.applied):
                    _revert(item)
                state.active, state.reason, state.applied = False, "not installed", []
        from . import _stats

        _stats.deactivate()
        _installed = False
        return status()


def switch_off_path(path: str, reason: str) -> None:
    """Put back one path's originals (a setting read after install, before any fork)."""
    with _lock:
        state = _paths[path]
        for item in reversed(state.applied):
            _revert(item)
        state.active, state.reason, state.applied = False, reason, []


def is_installed() -> bool:
    return _installed


def path_active(path: str) -> bool:
    """Whether ``path`` is switched on now."""
    return _paths[path].active


def status() -> dict:
    """What is switched on, why not where not, and the counters of this process."""
    counts = _counters.snapshot()
    version = _core_version if _installed else core_version()
    result: dict = {
        "ansible_core": version,
        "supported": version_support(version) is None,
        "installed": _installed,
        "reason": (_global_reason or "not installed") if not _installed else None,
    }
    for path, state in _paths.items():
        result[path] = {"active": state.active, "reason": state.reason, **counts[path]}
    result["module_side"] = _module_side()
    return result


def _module_side() -> dict:
    """Argument validation, no_log scrubbing and (2.22) masking inside the modules warm runners run: whether
    they are used, and the counts the modules of this controller's runners (local, and remote on
    hosts that have the package) reported."""
    import sys

    from . import _runner_modside

    remote = sys.modules.get(f"{__package__}._integrations.ssh_runner")
    remote_entries = remote.module_side_entries() if remote is not None else ()
    pool = sys.modules.get(f"{__package__}._runner_pool")
    if pool is None:
        return _runner_modside.status(None, False, remote_entries=remote_entries)
    return _runner_modside.status(pool._Pool.rundir, _paths["runner"].active, pool.RUNNER_SCRIPT, remote_entries)
