"""The ``bytecode`` path (opt-in): payloads that also carry compiled bytecode.

zipimport compiles every ``.py`` of an AnsiBallZ payload from source on every module run,
twice per module (its ``find_spec`` asks ``get_filename``, which compiles, then ``get_code``
compiles again); that is most of a module's start-up.  With this path on, each Python entry
of the payload gets a ``.pyc`` beside it (see ``ansible_accel._bytecode``), for one Python
version: the target's when it is known here, else the controller's.  A target of another
version skips them (zipimport ignores a ``.pyc`` with another magic number) and runs the
sources as before.

Opt in with ``ANSIBLE_ACCEL_BYTECODE=1``, or ``bytecode = true`` in the
``[callback_ansible_accel]`` section of ansible.cfg (the callback then switches the path on).

Seams: ``module_common._find_module_utils`` is wrapped to know, while it builds, the task's
variables (which interpreter, which connection); the ``payload`` path's archive calls
:func:`add_bytecode` when its entries are final, just before it is written.  So this path
needs the ``payload`` path active.

Which version: the interpreter is the one ansible-core will use (``ansible_playbook_python``
when the remote is local, else ``ansible_python_interpreter`` or the configured
``interpreter_python`` when it is a plain absolute path or ``{{ ansible_playbook_python }}``,
else the discovered interpreter).
On a local connection that interpreter is asked (once; remembered by its file identity);
elsewhere its version is taken from gathered facts (``ansible_facts.python``, when its
``executable`` is that interpreter) and compiled with a local ``pythonX.Y``.  Otherwise:
the controller's version.  ansible-core caches one payload per module for the whole run,
so on hosts of several Python versions the first build's version serves them all (the others
run sources).

Counters: ``native``: payloads built with bytecode; events: ``cache hits`` and ``compiled``
(sources), ``left as source: <why>``, and which version was chosen; fallbacks: payloads
built without bytecode, and why.
"""

from __future__ import annotations

import contextvars
import functools
import inspect
import os
import re
import shutil
import typing as t
import zipfile

from .. import _activation, _bytecode, _counters
from .._activation import Patch, Unavailable

PATH = "bytecode"
ENV = "ANSIBLE_ACCEL_BYTECODE"
_TRUE = ("1", "true", "yes", "on")
_PLAYBOOK_PYTHON = re.compile(r"\s*\{\{-?\s*ansible_playbook_python\s*-?\}\}\s*")
_LOCAL_CONNECTIONS = ("local", "ansible.builtin.local", "ansible.legacy.local")

_opted_in_by_config = False
_active = False
_build_context: contextvars.ContextVar[tuple[t.Any, bool] | None] = contextvars.ContextVar("ansible_accel_bytecode", default=None)
_cache: _bytecode.PycCache | None = None


def opted_in() -> bool:
    return _opted_in_by_config or os.environ.get(ENV, "").strip().lower() in _TRUE


def opt_in() -> None:
    """Switch the path on from configuration (the callback's ``bytecode`` option); when the
    accelerator is already installed, this path is installed now."""
    global _opted_in_by_config
    _opted_in_by_config = True
    with _activation._lock:
        if _activation.is_installed() and not _activation._paths[PATH].active:
            _activation._install_path(PATH, _activation.PATH_MODULES[PATH])


def plan() -> list[Patch]:
    if not opted_in():
        raise Unavailable(f"opt-in: set {ENV}=1 (or bytecode = true in [callback_ansible_accel] of ansible.cfg)")
    try:
        from ansible.executor import module_common
    except ImportError as ex:
        raise Unavailable(f"ansible.executor.module_common cannot be imported: {ex}") from ex
    if not _activation.path_active("payload"):  # (whose archive calls add_bytecode)
        raise Unavailable("needs the payload path, which is not active")
    original = getattr(module_common, "_find_module_utils", None)
    if not callable(original):
        raise Unavailable("this ansible-core does not build payloads through _find_module_utils")
    return [Patch(module_common, "_find_module_utils", _context_keeper(original))]


def after_install() -> None:
    global _active
    _active = True


def before_uninstall() -> None:
    global _active
    _active = False


def _context_keeper(original: t.Callable[..., t.Any]) -> t.Callable[..., t.Any]:
    """``original``, remembering the task's variables while it builds the payload."""
    signature = inspect.signature(original)

    @functools.wraps(original)
    def _find_module_utils(*args: t.Any, **kwargs: t.Any) -> t.Any:
        try:
            bound = signature.bind(*args, **kwargs)
            context = (bound.arguments.get("task_vars"), bool(bound.arguments.get("remote_is_local", False)))
        except TypeError:  # the original raises its own error for these arguments
            context = None
        token = _build_context.set(context)
        try:
            return original(*args, **kwargs)
        finally:
            _build_context.reset(token)

    return _find_module_utils


def add_bytecode(archive: t.Any) -> None:
    """Called by the ``payload`` path's archive when its entries are final: add a ``.pyc``
    beside each Python entry (nothing when this path is off)."""
    if not _active:
        return
    infos, datas = getattr(archive, "filelist", None), getattr(archive, "_data", None)
    if not isinstance(infos, list) or not isinstance(datas, list) or len(infos) != len(datas):
        _counters.fallback(PATH, "the payload's entries cannot be read")
        return
    names = {info.filename for info in infos}
    sources = [
        (info, bytes(data)) for info, data in zip(infos, datas)
        if info.filename.endswith(".py") and info.filename + "c" not in names
    ]  # fmt: skip
    try:
        compiler, choice = _target_compiler(_build_context.get())
        cache = _pyc_cache()
        hits, compiled = cache.hits, cache.compiled
        result = _bytecode.payload_bytecode([(info.filename, data) for info, data in sources], compiler, cache)
    except _bytecode.CompileError as ex:
        _counters.fallback(PATH, f"no bytecode: {ex}")
        return
    except Exception as ex:  # noqa: BLE001 - a payload is always built, with bytecode or without
        _counters.fallback(PATH, f"no bytecode: {type(ex).__name__}: {ex}")
        return
    if cache.hits > hits:
        _counters.extra(PATH, "cache hits", cache.hits - hits)
    if cache.compiled > compiled:
        _counters.extra(PATH, "compiled", cache.compiled - compiled)
    if result is None:
        _counters.fallback(PATH, "the payload has no ansible/__init__.py to set its bytecode up")
        return
    date_times = {info.filename + "c": info.date_time for info, _ in sources}
    for name, pyc in result.entries:
        info = zipfile.ZipInfo(filename=name, date_time=date_times[name])
        info.compress_type = archive.compression
        archive.writestr(info, pyc)
    for reason, n in result.left_as_source.items():
        _counters.extra(PATH, f"left as source: {reason}", n)
    _counters.extra(PATH, choice)
    _counters.native(PATH)


def _pyc_cache() -> _bytecode.PycCache:
    global _cache
    directory = _bytecode.default_cache_dir()
    if _cache is None or _cache.requested != directory:
        _cache = _bytecode.PycCache(directory)
        _cache.requested = directory  # type: ignore[attr-defined]
        if not _cache.disk:
            _counters.extra(PATH, "cache directory not private to this user: memory only")
    return _cache


# --- which Python --------------------------------------------------------------------------


def _target_compiler(context: tuple[t.Any, bool] | None) -> tuple[_bytecode.Compiler, str]:
    """The compiler for the task's interpreter when its version is known here, and the event
    that says which was chosen."""
    controller = _bytecode.controller_compiler()
    if context is None:
        return controller, f"for the controller's Python {controller.version} (no task context)"
    task_vars, remote_is_local = context
    interpreter = _interpreter(task_vars, remote_is_local)
    if interpreter is None:
        return controller, f"for the controller's Python {controller.version} (target interpreter not known)"
    if remote_is_local or _plain(_get(task_vars, "ansible_connection")) in _LOCAL_CONNECTIONS:
        compiler = _bytecode.interpreter_compiler(interpreter, _pyc_cache())
        if compiler is not None:
            return compiler, f"for the target's Python {compiler.version} (local interpreter)"
        return controller, f"for the controller's Python {controller.version} (local interpreter does not run)"
    version = _version_from_facts(task_vars, interpreter)
    if version is None:
        return controller, f"for the controller's Python {controller.version} (target's version not seen)"
    if version == controller.version:
        return controller, f"for the target's Python {version} (from facts)"
    for candidate in (shutil.which(f"python{version}"),):
        compiler = _bytecode.interpreter_compiler(candidate, _pyc_cache()) if candidate else None
        if compiler is not None and compiler.version == version:
            return compiler, f"for the target's Python {version} (from facts)"
    return controller, f"for the controller's Python {controller.version} (no local Python {version})"


def _get(mapping: t.Any, key: str) -> t.Any:
    try:
        return mapping.get(key) if mapping is not None else None
    except Exception:  # noqa: BLE001 - a variable that fails to resolve is simply not known
        return None


def _plain(value: t.Any) -> str | None:
    """``value`` as text when it is a plain string (no template to resolve)."""
    if not isinstance(value, str):
        return None
    text = str(value).strip()
    return None if not text or "{{" in text or "{%" in text or "{#" in text else text


def _interpreter(task_vars: t.Any, remote_is_local: bool) -> str | None:
    """The Python ansible-core will run the module with, when it can be read without
    templating or discovery."""
    if remote_is_local:
        return _absolute(_plain(_get(task_vars, "ansible_playbook_python")))
    configured = _get(task_vars, "ansible_python_interpreter")
    if isinstance(configured, str) and _PLAYBOOK_PYTHON.fullmatch(configured):
        # the common way to say "the controller's own Python" (ansible-core's default for an
        # implicit localhost): the template names one variable, whose value is read instead
        return _absolute(_plain(_get(task_vars, "ansible_playbook_python")))
    if configured is None:
        try:
            from ansible import constants as C

            configured = C.config.get_config_value("INTERPRETER_PYTHON")
        except Exception:  # noqa: BLE001 - not configured: not known
            configured = None
    text = _plain(configured)
    if text is None:
        return None
    if text in ("auto", "auto_silent", "auto_legacy", "auto_legacy_silent"):
        return _absolute(_plain(_get(_get(task_vars, "ansible_facts"), "discovered_interpreter_python")))
    return _absolute(text)


def _absolute(path: str | None) -> str | None:
    return path if path is not None and os.path.isabs(path) and " " not in path else None


def _version_from_facts(task_vars: t.Any, interpreter: str) -> str | None:
    python = _get(_get(task_vars, "ansible_facts"), "python")
    if _plain(_get(python, "executable")) != interpreter:
        return None
    version = _get(python, "version")
    major, minor = _get(version, "major"), _get(version, "minor")
    if isinstance(major, int) and isinstance(minor, int):
        return f"{major}.{minor}"
    return None
