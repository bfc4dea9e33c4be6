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

With ``target`` alone, the counts go to the controller this module runs under, when it is one
with the accelerator on, on this machine, as this user: ``controller_record`` walks up the
module's parent processes to the nearest one that has a counts file in its run directory (the
private directory of the controller's runners), so the module's environment holds the value
as the task set it.

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
    # A counts file the task named may be created; the controller's is only appended to.
    explicit = bool(record)
    if not explicit:
        record = controller_record()
    runner_modside = _load("_runner_modside")
    runner_modside.install_target(preloaded, files or {}, archive, record, unused, create=explicit)


# The suffix of a controller's counts file (``_runner_modside.TARGET_SUFFIX``).
_TARGET_SUFFIX = ".modside-target"
_MAX_ANCESTORS = 64


def controller_record(environ=None):
    """The counts file of the nearest parent process that is a controller with the accelerator
    on (``BASE/run-PID/PID.modside-target``, BASE its private directory), or "".

    BASE is where ``_runner_pool.private_base()`` puts it (``$XDG_RUNTIME_DIR/ansible-accel``,
    or ``ansible-accel-UID`` in the temporary directory), looked for under each place the
    controller's environment may have named: the module's own variables (the controller's, but
    for what the task set or ``become`` dropped) and the usual directories.  Only a directory
    of this user's that nobody else may open, not a link, and a regular file of this user's in
    it qualify.  A few system calls per parent process; imports nothing."""
    environ = os.environ if environ is None else environ
    uid = os.getuid()
    places = [environ.get("XDG_RUNTIME_DIR"), f"/run/user/{uid}"]
    bases = [f"{p}/ansible-accel" for p in places if p]
    places = [environ.get(name) for name in ("TMPDIR", "TEMP", "TMP")] + ["/tmp", "/var/tmp", "/usr/tmp"]
    bases += [f"{p}/ansible-accel-{uid}" for p in places if p]
    bases = [b for b in dict.fromkeys(bases) if _private_dir(b, uid)]
    if not bases:
        return ""
    pid = os.getppid()
    for _ in range(_MAX_ANCESTORS):
        if pid <= 1:
            break
        for base in bases:
            rundir = f"{base}/run-{pid}"
            record = f"{rundir}/{pid}{_TARGET_SUFFIX}"
            if _private_dir(rundir, uid) and _own_file(record, uid):
                return record
        pid = _parent_pid(pid)
    return ""


def _private_dir(path, uid):
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return info.st_mode & 0o170000 == 0o040000 and not info.st_mode & 0o077 and info.st_uid == uid


def _own_file(path, uid):
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return info.st_mode & 0o170000 == 0o100000 and info.st_uid == uid


def _parent_pid(pid):
    """The parent of process ``pid`` (``/proc/PID/stat``), or 0."""
    try:
        fd = os.open(f"/proc/{pid}/stat", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return 0
    try:
        text = os.read(fd, 4096)
    except OSError:
        return 0
    finally:
        os.close(fd)
    # "PID (COMMAND) STATE PPID ...": COMMAND may hold spaces and parentheses, not its last ")".
    fields = text.rpartition(b")")[2].split()
    try:
        return int(fields[1])
    except (IndexError, ValueError):
        return 0


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
