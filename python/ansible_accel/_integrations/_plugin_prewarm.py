"""The plugin lookups a task's worker starts with, made once in the controller before the fork.

Every worker of a task resolves the same plugins again: the module and the action plugin that
handles it (``TaskExecutor._get_action_handler_with_module_context``), the connection plugin
and the shell plugin (``TaskExecutor._get_connection``), each a search of the plugin paths, a
read of ``ansible.builtin``'s routing metadata and, the first time in a process, the import of
the plugin's Python module.  ansible-core caches all of it per process, so the controller makes
the same calls once, before it forks the task's workers, and every worker finds them done.

Only what cannot change what anyone sees is done ahead:

- lookups only (``find_plugin_with_context``); a plugin's Python module is imported (a
  ``class_only`` load, which creates no plugin object) only when it is one of ansible-core's own
  plugins, whose import prints nothing and runs no one else's code;
- nothing when ansible-core would print while looking up (debug logging, ``-vv`` and more, a log
  file of that verbosity): the lookups then stay in the workers.  Anything a lookup would print
  all the same (a deprecated plugin name, a plugin path that cannot be read) stops it before it
  prints: the controller's lookups go through a display that refuses every message, and the
  worker then looks the plugin up itself and prints what ansible-core prints;
- a lookup that fails in any way changes nothing: the worker does it again, as without the
  accelerator.

The connection and shell named by the host's variables are taken only when they are plain
strings (a template is the worker's to render).  Counted as ``workers`` events:
``plugin lookups made before the fork`` once per task and connection, ``plugin lookups left to
the workers: REASON`` otherwise.

Filter and test plugins, once per controller at its first fork: a worker's first filter or test
lookup (``JinjaPluginIntercept.__getitem__``, any name, Jinja's own included) has
``Jinja2Loader._ensure_non_collection_wrappers`` import every file of every filter (or test)
plugin directory through ``PluginLoader.all``, the user's directories first, then
ansible-core's own; a name no file defines then goes on to ``ansible.builtin``'s package through
the collection loader.  Only ansible-core's own part is done ahead: its plugin files imported
under the module names ``all()`` gives them and put in the loader's module cache (keyed by
path, which ``all()`` looks in before importing), and that package imported and listed.  The
user's directories, their files and the wrappers built from them stay the worker's, so a user's
plugin, even one named like a builtin, is imported by the worker, as without the accelerator,
and never by the controller.  Left to the workers with debug logging, from ``-vv`` on and when
Python warning options are set (``-W``, ``PYTHONWARNINGS``, ``-X dev``: an import could then
show a warning each worker would have shown); switched off by ``ANSIBLE_ACCEL_WORKERS_JINJA=0``.
Counted as ``filter and test plugins imported before the fork`` or ``filter and test plugins
left to the workers: REASON``.
"""

from __future__ import annotations

import glob
import importlib
import os
import pkgutil
import sys
import threading
import typing as t

from .. import _counters
from .._patches import switched_off

PATH = "workers"
DONE = "plugin lookups made before the fork"
JINJA_DONE = "filter and test plugins imported before the fork"
JINJA_ENV = "ANSIBLE_ACCEL_WORKERS_JINJA"
_CORE_COLLECTIONS = frozenset({"ansible.builtin", "ansible.legacy"})
_seen: set[tuple] = set()
_jinja_tried = False


class _Printed(Exception):
    """A lookup made ahead was about to print."""


# Messages that print and log nothing when debug logging is off and the verbosity (and the log
# file's) is below 2, as the lookups here require (``_quiet_enough``).
_SILENT_HERE = frozenset({"debug", "vv", "vvv", "vvvv", "vvvvv"})


def _nothing(*_args: t.Any, **_kwargs: t.Any) -> None:
    return None


class _SilentDisplay:
    """Stands for ``ansible.plugins.loader.display`` while the controller looks plugins up: in
    the thread looking up, every message stops the lookup before anything is printed or logged;
    any other thread (the controller's results thread) gets the display itself."""

    def __init__(self, display: t.Any) -> None:
        self._display = display
        self._thread = threading.get_ident()

    def __getattr__(self, name: str) -> t.Any:
        if name in ("verbosity", "log_verbosity") or threading.get_ident() != self._thread:
            return getattr(self._display, name)
        if name in _SILENT_HERE:
            return _nothing

        def refuse(*_args: t.Any, **_kwargs: t.Any) -> t.NoReturn:
            raise _Printed(name)

        return refuse


def _quiet_enough() -> str | None:
    from ansible import constants as C
    from ansible.plugins import loader

    if C.DEFAULT_DEBUG:
        return "debug logging"
    display = loader.display
    if display.verbosity >= 2 or getattr(display, "log_verbosity", 0) >= 2:
        return "verbosity"
    return None


def _name(value: t.Any) -> str | None:
    """``value`` when it is a plain plugin name (not a template, not tagged as one)."""
    if not isinstance(value, str):
        return None
    text = str(value)
    if not text or "{" in text or "%" in text or not text.replace("_", "").replace(".", "").isalnum():
        return None
    return text


def _core_file(path: t.Any, kind: str) -> bool:
    """``path`` is the file of one of ansible-core's own ``kind`` plugins."""
    import ansible.plugins

    if not isinstance(path, str):
        return False
    own = os.path.join(os.path.dirname(os.path.realpath(ansible.plugins.__file__)), kind)
    return os.path.dirname(os.path.realpath(path)) == own


def before_worker_start(task: t.Any, task_vars: t.Any, play_context: t.Any) -> None:
    """In the controller, before it forks the worker of ``task``: the worker's plugin lookups,
    once per task and connection; at the first fork, also what its first filter or test lookup
    imports of ansible-core's own."""
    _jinja_plugins_once()
    try:
        action = _name(getattr(task, "action", None))
        collections = getattr(task, "collections", None)
        collections = tuple(collections) if isinstance(collections, (list, tuple)) else None
        variables = task_vars if isinstance(task_vars, dict) else {}
        connection = _name(variables.get("ansible_connection", getattr(play_context, "connection", None)))
        shell = variables.get("ansible_shell_type")
        shell = _name(shell) if shell is not None else None
        key = (action, collections, connection, shell)
    except Exception:  # noqa: BLE001 - nothing done; the worker looks everything up itself
        return
    if key in _seen:
        return
    _seen.add(key)
    reason = _quiet_enough()
    if reason is None:
        reason = _silently(_look_up, action, collections, connection, shell)
    _counters.extra(PATH, DONE if reason is None else f"plugin lookups left to the workers: {reason}")


def _jinja_plugins_once() -> None:
    global _jinja_tried
    if _jinja_tried:
        return
    _jinja_tried = True
    if switched_off(JINJA_ENV) is not None:
        return
    reason = _quiet_enough() or ("Python warning options" if sys.warnoptions or sys.flags.dev_mode else None)
    if reason is None:
        reason = _silently(_jinja_plugins)
    _counters.extra(PATH, JINJA_DONE if reason is None else f"filter and test plugins left to the workers: {reason}")


def _silently(step: t.Callable[..., None], *args: t.Any) -> str | None:
    """``step(loader, *args)`` with ``loader.display`` refusing to print; why it stopped, if it did."""
    from ansible.plugins import loader

    display = loader.display
    loader.display = _SilentDisplay(display)
    try:
        step(loader, *args)
    except _Printed:
        return "a lookup prints"
    except Exception as ex:  # noqa: BLE001 - the worker looks it up again, as without the accelerator
        return f"a lookup failed ({type(ex).__name__})"
    finally:
        loader.display = display
    return None


def _look_up(loader: t.Any, action: str | None, collections: tuple | None, connection: str | None, shell: str | None) -> None:
    if action is not None and (collections is None or set(collections) <= _CORE_COLLECTIONS):
        _action_and_module(loader, action, list(collections) if collections is not None else None)
    if connection is not None:
        _connection_and_shell(loader, connection, shell)


def _action_and_module(loader: t.Any, action: str, collections: list[str] | None) -> None:
    """What the worker's ``_get_action_handler_with_module_context`` and ``_configure_module``
    look up for ``action`` (the network-platform action plugins excepted)."""
    module = loader.module_loader.find_plugin_with_context(action, collection_list=collections)
    if module.resolved and module.action_plugin:
        handler, handler_collections = module.action_plugin, collections
    elif loader.action_loader.has_plugin(action, collection_list=collections):
        handler, handler_collections = action, collections
    else:
        handler, handler_collections = "ansible.legacy.normal", None
    found = loader.action_loader.find_plugin_with_context(handler, collection_list=handler_collections)
    if found.resolved and _core_file(found.plugin_resolved_path, "action"):
        loader.action_loader.get(handler, class_only=True, collection_list=handler_collections)
    short = action.rpartition(".")[2]
    for name in dict.fromkeys((action, f"ansible.legacy.{short}")):
        loader.module_loader.find_plugin_with_context(name, ".py", collection_list=collections)


def _connection_and_shell(loader: t.Any, connection: str, shell: str | None) -> None:
    found = loader.connection_loader.find_plugin_with_context(connection)
    if not (found.resolved and _core_file(found.plugin_resolved_path, "connection")):
        return
    plugin = loader.connection_loader.get(connection, class_only=True)
    shell = shell or getattr(plugin, "_shell_type", None) or "sh"
    found = loader.shell_loader.find_plugin_with_context(shell)
    if found.resolved and _core_file(found.plugin_resolved_path, "shell"):
        loader.shell_loader.get(shell, class_only=True)


def _jinja_plugins(loader: t.Any) -> None:
    for plugins in (loader.filter_loader, loader.test_loader):
        _core_jinja_files(loader, plugins)
        _core_jinja_package(loader, plugins)


def _core_jinja_files(loader: t.Any, plugins: t.Any) -> None:
    """What the worker's ``PluginLoader.all()`` imports from ansible-core's own directories (the
    ones it walks last, from ``_get_package_paths``): each file in the same order, under the same
    module name, into the same cache entry."""
    for directory in plugins._get_package_paths():
        for path in sorted(glob.glob(os.path.join(directory, "*.py")), key=os.path.basename):
            name = os.path.splitext(os.path.basename(path))[0]
            if name == "__init__" or path in plugins._module_cache:
                continue
            context = loader.PluginLoadContext(plugins.type, plugins.package)
            context.resolve_legacy(name, {name: loader.PluginPathContext(path, True)})
            plugins._module_cache[path] = plugins._load_module_source(python_module_name=context._python_module_name, path=path)


def _core_jinja_package(loader: t.Any, plugins: t.Any) -> None:
    """What ``Jinja2Loader.get_with_context`` imports and lists for a name no plugin file defines:
    ``ansible.builtin``'s package of the loader's type (ansible-core's own directory, through the
    collection loader, which searches no collection path for ``ansible.builtin``)."""
    reference = loader.AnsibleCollectionRef.from_fqcr(f"ansible.builtin.{plugins.type}", plugins.type)
    package = importlib.import_module(reference.n_python_package_name)
    list(pkgutil.iter_modules(package.__path__, prefix="ansible.builtin."))
