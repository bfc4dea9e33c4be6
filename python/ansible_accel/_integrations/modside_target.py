"""The controller's part of the module-side paths in fresh interpreters (docs/module-side.md).

A module opts in with ``ANSIBLE_ACCEL_MODULE_SIDE=target`` in its task's environment; its own
process does the rest (``_modside_target``).  With ``target`` alone, a module run on this
machine as this controller's user (with ``become`` too, when it becomes that user) appends its
counts to RECORD, a file in this controller's run directory (the private directory of its
runners, ``run-PID``), which it finds by walking up its parent processes to this one;
``status()["module_side"]`` adds them up with the runners' (``_runner_modside.status``).  The
module's environment is the task's, unchanged: nothing tells it where RECORD is.

The seam is ``ActionBase._compute_environment_string``, in the worker about to start a module:
ansible-core computes the task's environment as ever, and when it (or, without the variable,
the controller's own environment) opts in without a file of its own for a module of the
``local`` connection, RECORD is made (the directory and an empty file)
for the module to find; a module run as another user does not find it (RECORD's directory is
this user's alone).  The prefix and the environment handed back through ``raw_environment_out``
are ansible-core's, unchanged.
"""

from __future__ import annotations

import os

from .. import _modside_target, _runner_modside, _runner_pool
from .._patches import Applied, Patch, Unavailable, apply, revert
from .._private_dir import is_private_dir

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
    # next one that starts runners), made when a module first opts in.  A file left there by
    # a dead controller with this pid would be read as this one's: it goes now.
    base = _runner_pool.private_base()
    rundir = _runner_pool._Pool.rundir or os.path.join(base, f"run-{os.getpid()}")
    record = os.path.join(rundir, f"{os.getpid()}{_runner_modside.TARGET_SUFFIX}")
    if is_private_dir(base) and is_private_dir(rundir):
        try:
            os.unlink(record)
        except OSError:
            pass
    _original, _record = original, record
    _runner_modside.target_record = record
    return [Patch(ActionBase, "_compute_environment_string", _compute_environment_string)]


_applied: list[Applied] = []  # the patch, while applied
reason: str | None = "not installed"  # why modules' counts are not collected; None once they are


def install() -> None:
    """Called by ``_activation.install()`` after the paths; idempotent, never raises (modules
    then opt in without their counts reaching the controller, with the reason here)."""
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
    environment = raw_environment_out if isinstance(raw_environment_out, dict) else {}
    prefix = _original(self, environment)
    # (the task's value, or the controller's own that the module inherits)
    value = environment.get(ENV, os.environ.get(ENV))
    if _record is None or not isinstance(value, str) or value[:6].lower() != "target":
        return prefix
    if _modside_target.opted_in(value) != (True, ""):
        return prefix  # not an opt-in, or one that names its own counts file
    if getattr(self._connection, "transport", None) == "local":
        _make_record(_record)
    return prefix


def _make_record(record: str) -> None:
    """RECORD, empty if new, in its private directory; left out on any failure (the module
    then opts in without its counts reaching the controller)."""
    rundir = os.path.dirname(record)
    try:
        _runner_pool.ensure_private_dir(os.path.dirname(rundir))
        _runner_pool.ensure_private_dir(rundir)
        os.close(os.open(record, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600))
    except OSError:
        pass
