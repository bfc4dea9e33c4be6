"""``sitecustomize`` for the ansible commands of an integration target (run_integration.py).

run_integration.py copies this file to ``lib/sitecustomize.py`` of the ansible-core tree that
ansible-test tests.  ansible-test gives every command a target runs ``PYTHONPATH=<tree>/lib``
and drops the rest of the caller's environment, so this is the one hook that reaches each
``ansible-playbook`` or ``ansible`` a target starts, however deeply nested.

In a process started as an ansible command it reads ``accel_integration.json`` beside it and

- records the process (command, arguments, directory) in the run's record directory, and at
  exit whether it ran plays (ansible-core's task queue manager was imported) and whether the
  accelerator was installed then;
- in the run with the accelerator on, points ``ANSIBLE_ACCEL_STATS`` at a file of its own in that
  directory and, with the ``install`` route, calls ``ansible_accel.install()`` before the command
  imports anything, as the ``ansible-accel ANSIBLE-COMMAND`` wrapper does; with the ``callback``
  route it sets the environment variables that enable the callback plugin instead (the
  ansible.cfg route: ansible-test's own ``ANSIBLE_CALLBACKS_ENABLED`` hides an ansible.cfg's list).

Any other process (modules, ansible-test's own helpers) returns after one basename lookup.
"""

import os
import sys

ANSIBLE_COMMANDS = frozenset(
    (
        "ansible",
        "ansible-config",
        "ansible-console",
        "ansible-doc",
        "ansible-galaxy",
        "ansible-inventory",
        "ansible-playbook",
        "ansible-pull",
        "ansible-vault",
    )
)
CONFIG_NAME = "accel_integration.json"
INJECTOR = "python.py"


def _command():
    """The ansible command this process runs, or None.  ansible-test starts each through its
    injector (a link named after the command to its ``python.py``), which ``exec``s the
    interpreter on the real one: that first stage is not the command."""
    argv = getattr(sys, "argv", None) or [""]
    name = os.path.basename(argv[0] or "")
    if name not in ANSIBLE_COMMANDS or os.path.basename(os.path.realpath(argv[0])) == INJECTOR:
        return None
    return name


def _write(path, data):
    import json

    with open(path + ".tmp", "w") as handle:
        json.dump(data, handle)
    os.replace(path + ".tmp", path)


def _at_exit(path, record):
    accel = sys.modules.get("ansible_accel._activation")
    record["ran_plays"] = "ansible.executor.task_queue_manager" in sys.modules
    record["installed_at_exit"] = bool(accel is not None and accel.status().get("installed"))
    _write(path, record)


def _add_to_list(name, value, separator):
    """``value`` added to the list in environment variable ``name`` (made if unset)."""
    current = os.environ.get(name, "")
    items = [item.strip() for item in current.split(separator) if item.strip()]
    if value not in items:
        os.environ[name] = separator.join([*items, value])


def _enable_callback(plugin_dir):
    """The environment variables ``ansible-accel config`` prints, added to any lists the
    target set (ansible-test itself sets ``ANSIBLE_CALLBACKS_ENABLED=junit``)."""
    _add_to_list("ANSIBLE_CALLBACK_PLUGINS", plugin_dir, os.pathsep)
    _add_to_list("ANSIBLE_CALLBACKS_ENABLED", "ansible_accel", ",")
    os.environ.setdefault("ANSIBLE_LOAD_CALLBACK_PLUGINS", "True")


def _main():
    command = _command()
    if command is None:
        return
    import atexit
    import json

    try:
        with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), CONFIG_NAME)) as handle:
            config = json.load(handle)
    except (OSError, ValueError):
        return
    name = f"{os.getpid()}-{os.urandom(4).hex()}"
    record = {
        "command": command,
        "argv": sys.argv[1:],
        "cwd": os.getcwd(),
        "mode": config["mode"],
        "route": config["route"],
        "stats": None,
        "installed_at_start": False,
        "install_expected": False,
    }
    if config["mode"] == "on":
        record["stats"] = os.path.join(config["records"], f"stats-{name}.json")
        os.environ["ANSIBLE_ACCEL_STATS"] = record["stats"]
        if config["route"] == "install" and command in config["install_commands"]:
            import ansible_accel

            record["install_expected"] = True
            status = ansible_accel.install()
            record["installed_at_start"] = bool(status.get("installed"))
            record["reason"] = status.get("reason")
        elif config["route"] == "callback":
            _enable_callback(config["callback_plugins"])
    path = os.path.join(config["records"], f"process-{name}.json")
    _write(path, record)
    atexit.register(_at_exit, path, record)


_main()
