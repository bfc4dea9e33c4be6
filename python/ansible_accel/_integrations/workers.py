"""The ``workers`` path: forking ansible-core's task workers from a controller that has already
done what each of them would do again.

ansible-core runs each task of each host in a worker forked from the controller.  A worker
starts with the controller's memory, so what the controller has computed before the fork, no
worker computes again:

- the result field mappings of ``UnifiedTaskResult`` (ansible-core 2.20+): ``functools.cache``d
  per process, built from ``typing.get_type_hints`` of a large dataclass, twice in every worker
  (for the action's result and the module's); computed once in the controller, with the very
  arguments the workers pass;
- the Jinja lexer of the default template settings (ansible-core keeps one per settings, per
  process; building it compiles its regular expressions);
- the JSON serialization profiles that payload arguments and module results go through
  (imported on first use, so once in every worker);
- the layout probes of the native ``argspec`` path (a short Python program run, dicts and lists
  changed every way), which it makes at its first use in a process: in every worker that
  validates an action's arguments (``debug``, ``assert``, ...);
- the slot names pickling needs (``copyreg._slotnames``, kept on the class as
  ``__slotnames__``) of the classes of what every worker pickles into its result (ansible-core's
  task result, its pending changes, template engine and tagged types);
- the controller's heap is kept out of the worker's garbage collector (``gc.freeze()`` before the
  fork, ``gc.unfreeze()`` after it in the controller, as CPython documents for pre-fork
  servers): a worker's full collection then walks only what the worker made, instead of
  writing to (and so copying) every page of the heap it inherited;
- the plugin lookups of each task's worker (its module, action, connection and shell plugins),
  once per task, and the imports of ansible-core's own filter and test plugins that a worker's
  first filter or test lookup makes, once per controller (``_plugin_prewarm``).

The seam is ``WorkerProcess.start`` in the controller.  Counters: ``native`` per worker started
this way; ``events`` name what was computed ahead.
"""

from __future__ import annotations

import gc

from .. import _counters
from .._activation import Patch, Unavailable
from .._patches import switched_off
from . import _finder_prewarm, _plugin_prewarm

PATH = "workers"
ENV = "ANSIBLE_ACCEL_WORKERS"
_prewarmed = False


def plan() -> list[Patch]:
    off = switched_off(ENV)
    if off is not None:
        raise Unavailable(off)
    try:
        from ansible.executor.process.worker import WorkerProcess
    except ImportError as ex:
        raise Unavailable(f"ansible-core's worker is not importable: {ex}") from None
    original = vars(WorkerProcess)["start"]

    def start(self) -> None:
        _prewarm()
        _finder_prewarm.before_worker_start(getattr(self, "_task", None))
        _plugin_prewarm.before_worker_start(getattr(self, "_task", None), getattr(self, "_task_vars", None),
                                            getattr(self, "_play_context", None))
        gc.freeze()
        try:
            original(self)
        finally:
            gc.unfreeze()
        _counters.native(PATH)

    start.__wrapped__ = original
    return [Patch(WorkerProcess, "start", start)]


def _prewarm() -> None:
    """Once per controller: what every worker would otherwise compute for itself.  Each step is
    optional (absent on some ansible-core versions) and its failure changes nothing: the worker
    then does it itself, as without the accelerator."""
    global _prewarmed
    if _prewarmed:
        return
    _prewarmed = True
    for step in (_result_field_mappings, _default_lexer, _serialization_profiles, _argspec_probes, _slot_names):
        try:
            done = step()
        except Exception:  # noqa: BLE001 - see the docstring
            done = None
        if done:
            _counters.extra(PATH, done)


def _result_field_mappings() -> str | None:
    try:
        from ansible._internal._task import UnifiedTaskResult
    except ImportError:
        return None  # ansible-core 2.19: no such mappings
    mapping = getattr(UnifiedTaskResult, "get_result_key_to_resolved_field_mapping", None)
    if mapping is None or not hasattr(mapping, "cache_info"):
        return None
    # The keyword form: functools.cache keys a keyword call apart from a positional one, and
    # ansible-core calls it by keyword.
    for source_is_module in (False, True):
        mapping(source_is_module=source_is_module)
    return "result field mappings computed before the fork"


def _default_lexer() -> str | None:
    # The engine's environment: the one a task's templar uses (Templar.environment is a
    # deprecated accessor on 2.22, which warns).
    from ansible._internal._templating._engine import TemplateEngine

    environment = TemplateEngine().environment
    if not hasattr(type(environment), "_lexer_cache"):
        return None
    environment.lexer  # noqa: B018 - the property builds and caches it
    return "template lexer built before the fork"


def _serialization_profiles() -> str | None:
    import importlib

    from ansible.module_utils._internal import _json

    names = [f"{_json.__name__}._profiles._module_{style}_{direction}" for style in ("legacy", "modern") for direction in ("c2m", "m2c")]
    for name in names:
        importlib.import_module(name)
    return "module serialization profiles imported before the fork"


def _argspec_probes() -> str | None:
    from .. import _activation, _native

    if not _activation.path_active("argspec"):
        return None
    _native.argspec_quick_spec_check()  # asks both probes, whose answers a fork inherits
    return "argspec layout probes made before the fork"


# The classes whose slot names every worker computed as it pickled its result (ansible-core
# 2.19-2.22): looked up in the modules the controller has imported, never imported here.
_PICKLED = {
    "ansible._internal._task": ("PendingChanges", "UnifiedTaskResult"),
    "ansible._internal._templating._engine": ("TemplateEngine",),
}
_TAGGED = "ansible.module_utils._internal._datatag"


def _slot_names() -> str | None:
    import copyreg
    import sys

    classes = [getattr(sys.modules.get(module), name, None) for module, names in _PICKLED.items() for name in names]
    tagged = sys.modules.get(_TAGGED)
    if tagged is not None:
        classes += [value for name, value in sorted(vars(tagged).items()) if name.startswith("_AnsibleTagged")]
    classes = [c for c in classes if isinstance(c, type) and "__slotnames__" not in vars(c)]
    if not classes:
        return None
    for cls in classes:
        copyreg._slotnames(cls)  # what pickling an instance computes first, kept on the class
    return "slot names for pickling computed before the fork"
