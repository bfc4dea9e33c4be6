"""Module-side paths in a fresh interpreter, by opt-in: ``ANSIBLE_ACCEL_MODULE_SIDE=target``
(or ``target:RECORD``) in a module's environment.

``ansible_accel_module_side.pth`` (in site-packages) looks the variable up at every start of
the interpreter and, only when it is set, loads this file by path (the package's ``__init__``
is not run: it would import the installed ansible-core before the payload's) and calls
``start()``.  That puts a finder first in ``sys.meta_path`` which finds nothing: it only
looks, at each import, whether the payload's ``ansible.module_utils.basic`` has finished
importing.  The AnsiBallZ wrapper's loader imports ``basic`` before it has ``runpy`` find the
module, so the first import after that comes before the module's own code runs.  There the
finder takes itself out of ``sys.meta_path`` and hands the modules imported from the payload
so far, with each file's CRC-32 and size, to ``_runner_modside.install_target``: the runner's
checks (the same ansible-accel build; this interpreter's ansible-core is the payload's version
and has those files byte for byte) and the same ``plan()`` calls, and everything the switch-on
imported taken out again.  Any failure leaves the module as shipped.

A finder placed last would be asked only about names no other finder found, and so would
never see ``basic``: this one is first, and costs one dictionary lookup per import until it
goes.  In a process that is not an AnsiBallZ module (``__main__`` is not the wrapper) it goes
at that point without doing anything.

Standard library only, and only modules the interpreter has imported by the time site-packages
are processed.
"""

import os
import sys

ENV = "ANSIBLE_ACCEL_MODULE_SIDE"
_BASIC = "ansible.module_utils.basic"


def opted_in(value):
    """(whether ``value`` of the variable opts in, the counts file it names or "")."""
    if value is None:
        return False, ""
    word, _, record = value.partition(":")
    if word.strip().lower() != "target":
        return False, ""
    return True, record


def start():
    """Called by the ``.pth`` line when the variable is set: watch for the payload's ``basic``."""
    wanted, record = opted_in(os.environ.get(ENV))
    if wanted and not any(type(f).__name__ == "_WatchForBasic" for f in sys.meta_path):
        sys.meta_path.insert(0, _WatchForBasic(record))


class _WatchForBasic:
    """A meta path finder that finds nothing; see the module's docstring."""

    def __init__(self, record):
        self.record = record

    def find_spec(self, name, path=None, target=None):
        basic = sys.modules.get(_BASIC)
        if basic is None or getattr(getattr(basic, "__spec__", None), "_initializing", True):
            return None
        finders = sys.meta_path
        try:
            index = finders.index(self)
        except ValueError:
            return None
        # The import system is iterating over this very list: once this finder is out of it,
        # the iteration goes on after the finder that followed it, so that one is asked here.
        following = finders[index + 1] if index + 1 < len(finders) else None
        del finders[index]
        try:
            _switch_on(basic, self.record)
        except Exception:  # noqa: BLE001 - the module runs as shipped
            pass
        find_spec = getattr(following, "find_spec", None)
        return None if find_spec is None else find_spec(name, path, target)

    def invalidate_caches(self):
        pass


def _switch_on(basic, record):
    if getattr(sys.modules.get("__main__"), "_ANSIBALLZ_WRAPPER", None) is not True:
        return  # not a module run (a controller, a runner, a script importing ansible-core)
    unused = None
    preloaded, files = (), {}
    loader = basic.__spec__.loader
    archive = getattr(loader, "archive", None)
    if type(loader).__name__ != "zipimporter" or not isinstance(archive, str):
        unused = "the payload is not imported from its zip archive"
    else:
        preloaded = tuple(sys.modules)
        files = _payload_files(archive, preloaded)
        if files is None:
            unused = "payload not readable"
    runner_modside = _load("_runner_modside")
    runner_modside.install_target(preloaded, files or {}, archive, record, unused)


def _payload_files(archive, names):
    """payload member -> (crc32, size) of the file of each module imported from ``archive``."""
    zipfile = sys.modules.get("zipfile")  # the wrapper imported it to write the payload
    if zipfile is None:
        return None
    prefix = archive + "/"
    try:
        with zipfile.ZipFile(archive) as payload:
            members = {info.filename: (info.CRC, info.file_size) for info in payload.infolist()}
    except (OSError, zipfile.BadZipFile):
        return None
    files = {}
    for name in names:
        if name != "ansible" and not name.startswith("ansible."):
            continue
        origin = getattr(getattr(sys.modules.get(name), "__spec__", None), "origin", None) or ""
        if origin.startswith(prefix):
            member = origin[len(prefix):]
            if member not in members:
                return None
            files[member] = members[member]
    return files


def _load(name):
    """A file of this package beside this one, as a module object of its own (not in
    ``sys.modules``; compiled code cached as for any import)."""
    path = os.path.join(os.path.dirname(__file__), name + ".py")
    module = type(sys)(f"_ansible_accel{name}")
    module.__file__ = path
    sys.modules["_frozen_importlib_external"].SourceFileLoader(module.__name__, path).exec_module(module)
    return module
