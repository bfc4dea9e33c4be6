"""The controller's part of the module-side paths in fresh interpreters (docs/module-side.md).

A module opts in with ``ANSIBLE_ACCEL_MODULE_SIDE=target`` in its task's environment; its own
process does the rest (``_modside_target``).  When such a module runs on this machine (the
``local`` connection, without become) and the value is exactly ``target``, the module is given
``target:RECORD`` instead, RECORD a file in this controller's private directory, so that it
appends its counts there and ``status()["module_side"]`` adds them up with the runners'
(``_runner_modside.status``).  Any other value, and every module on another host or run as
another user, gets the environment as written.

The seam is ``ActionBase._compute_environment_string``: ansible-core computes the task's
environment as ever (templating included) and the replacement changes that one value in the
prefix it gives the module's command.  The environment handed back through
``raw_environment_out`` is ansible-core's, unchanged.
"""

from __future__ import annotations

import os

from .. import _runner_modside, _runner_pool
from .._patches import Applied, Patch, Unavailable, apply, revert

ENV = "ANSIBLE_ACCEL_MODULE_SIDE"
_original = None
_record: str | None = None


def plan() -> list[Patch]:
    global _original, _record
    try:
        from ansible.plugins.action import ActionBase
    except ImportError as ex:
        raise Unavailable(f"ansible's action plugins are not importable: {ex}") from None
    original = vars(ActionBase).get("_compute_environment_string")
    if original is None:
        raise Unavailable("ActionBase has no _compute_environment_string")
    # This controller's directory beside its runners' (a dead controller's is removed by the
    # next one that starts runners), made when a module first opts in.
    base = _runner_pool.private_base()
    rundir = _runner_pool._Pool.rundir or os.path.join(base, f"run-{os.getpid()}")
    _original = original
    _record = os.path.join(rundir, f"{os.getpid()}{_runner_modside.TARGET_SUFFIX}")
    _runner_modside.target_record = _record
    return [Patch(ActionBase, "_compute_environment_string", _compute_environment_string)]


_applied: list[Applied] = []  # the patch, while applied
reason: str | None = "not installed"  # why modules are not given target:RECORD; None once they are


def install() -> None:
    """Called by ``_activation.install()`` after the paths; idempotent, never raises (modules
    then get the environment as written, with the reason here)."""
    global reason
    if _applied:
        return
    try:
        patches = plan()
        _applied.extend(apply(patch) for patch in patches)
    except Exception as ex:  # noqa: BLE001 - never break the run: the opt-in works without counts
        reason = str(ex) if isinstance(ex, Unavailable) else f"{type(ex).__name__}: {ex}"
        _runner_modside.target_record = None
        return
    reason = None


def uninstall() -> None:
    global reason
    while _applied:
        revert(_applied.pop())
    _runner_modside.target_record = None
    reason = "not installed"


def _compute_environment_string(self, raw_environment_out=None):
    environment: dict = {}
    prefix = _original(self, environment)
    if isinstance(raw_environment_out, dict):
        raw_environment_out.clear()
        raw_environment_out.update(environment)
    value = environment.get(ENV)
    if not isinstance(value, str) or value.strip().lower() != "target" or _record is None:
        return prefix
    connection = self._connection
    if getattr(connection, "transport", None) != "local" or getattr(connection, "become", None) is not None:
        return prefix
    try:
        rundir = os.path.dirname(_record)
        _runner_pool.ensure_private_dir(os.path.dirname(rundir))
        _runner_pool.ensure_private_dir(rundir)
    except OSError:
        return prefix  # no counts file: the module still opts in, its counts stay unrecorded
    environment[ENV] = f"target:{_record}"
    return connection._shell.env_prefix(**environment)
