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
"""

from __future__ import annotations

import os
import threading
import typing as t

from .. import _counters

PATH = "workers"
DONE = "plugin lookups made before the fork"
_CORE_COLLECTIONS = frozenset({"ansible.builtin", "ansible.legacy"})
_seen: set[tuple] = set()


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
    once per task and connection."""
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
        reason = _look_up(action, collections, connection, shell)
    _counters.extra(PATH, DONE if reason is None else f"plugin lookups left to the workers: {reason}")


def _look_up(action: str | None, collections: tuple | None, connection: str | None, shell: str | None) -> str | None:
    from ansible.plugins import loader

    display = loader.display
    loader.display = _SilentDisplay(display)
    try:
        if action is not None and (collections is None or set(collections) <= _CORE_COLLECTIONS):
            _action_and_module(loader, action, list(collections) if collections is not None else None)
        if connection is not None:
            _connection_and_shell(loader, connection, shell)
    except _Printed:
        return "a lookup prints"
    except Exception as ex:  # noqa: BLE001 - the worker looks it up again, as without the accelerator
        return f"a lookup failed ({type(ex).__name__})"
    finally:
        loader.display = display
    return None


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
