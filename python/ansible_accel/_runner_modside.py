"""Module-side paths: native argument validation, ``no_log`` scrubbing and masking inside the
modules a warm runner runs.

A module validates its arguments and scrubs its ``no_log`` values itself, with the
``ansible.module_utils`` its payload carries.  A warm runner (``_runner_server``) has imported
those module_utils once, from its probe payload, before it forks a child per module; the
children run on those very module objects (the runner checks each payload's files against
them by content).  ``install()``, called by the runner once after its probe, replaces
``ArgumentSpecValidator.validate`` (with ``arg_spec.set_fallbacks``), on ansible-core
2.19-2.21 ``remove_values``, ``sanitize_keys`` and ``heuristic_log_sanitize``, and on 2.22 the
shared ``SecretMasker``'s ``mask_string`` and matcher in those preloaded modules with the same
native paths the controller uses (``_integrations.argspec``, ``_integrations.no_log`` and
``_integrations.masking``, through their own ``plan()``), so every child inherits them.
``flush()``, called by a child just before it ends, appends its counts as one JSON line to
``SOCKET.modside`` in the runner's directory; the controller adds them up (``status()``).
``install_target()`` does the same switch-on in a fresh interpreter that opted in
(``_modside_target``), whose counts go to the file the opt-in names or, without one, to the
counts file of the controller it runs under (``target_record`` there, read by ``status()``).

The runner loads this file by path (it cannot import a package of its own), so it uses the
standard library only at import.  It switches the paths on only when:

- ``ANSIBLE_ACCEL_MODULE_SIDE`` is not ``0``/``false``/``no``/``off``;
- the runner's interpreter can import ``ansible_accel`` (found on its own ``sys.path``) and
  that install carries this very file (the same build);
- that interpreter's installed ansible-core is the payload's version (the ``__version__`` of
  the payload's generated ``ansible/__init__.py``), one the accelerator supports, and has,
  byte for byte, the module_utils files the probe preloaded.

What it imports to do so leaves no trace a module could see: ``ansible_accel``'s modules are
imported under a package object of its own (the package's ``__init__`` is not run: it would
import the installed ansible-core rather than the payload's), and every module name, path
importer cache entry and warning filter added meanwhile is taken out again before the first
fork.  The patched functions keep their own modules' globals.
"""

import sys

ENV = "ANSIBLE_ACCEL_MODULE_SIDE"
RECORD_SUFFIX = ".modside"
PATHS = ("argspec", "no_log", "masking")
_OFF = ("0", "false", "no", "off")
_PACKAGE = "ansible_accel"
# Files of ansible_accel the module-side paths run: imported in the runner, so an install
# of the package that lacks one cannot serve.
_USED = ("_counters.py", "_activation.py", "argspec.py", "_argspec_tagged.py", "no_log.py", "masking.py",
         "_integrations/argspec.py", "_integrations/no_log.py", "_integrations/masking.py")


class _State:
    reason = "not installed"  # why the paths are not used in this runner; None once they are
    counters = None  # ansible_accel._counters as loaded in the runner (the patched code's)
    record = ""  # SOCKET.modside; in a fresh interpreter, its counts file
    target_create = None  # in a fresh interpreter: whether its counts file may be created
    dumps = None  # json.dumps, held: a child must not import anything as it ends
    patched = ()  # (path, number of objects replaced)


def switched_off(environ=None):
    """The reason ``ANSIBLE_ACCEL_MODULE_SIDE`` switches the paths off, or None."""
    import os

    value = (os.environ if environ is None else environ).get(ENV)
    if value is not None and value.strip().lower() in _OFF:
        return f"switched off by {ENV}={value}"
    return None


def install(preloaded, preloaded_files, socket_path):
    """In the runner, once its probe has preloaded the payload's module_utils (``preloaded``:
    their module names; ``preloaded_files``: payload member -> (crc32, size) of their files).
    Never raises: a failure leaves the modules as shipped, with the reason."""
    import json

    _State.record, _State.dumps = socket_path + RECORD_SUFFIX, json.dumps
    reason = switched_off()
    if reason is not None:
        _State.reason = reason
        return
    try:
        kept = _Kept()
    except Exception as ex:  # noqa: BLE001 - never stop the runner: the modules run as shipped
        _State.reason = f"could not switch on: {type(ex).__name__}: {ex}"
        return
    try:
        _switch_on(preloaded, preloaded_files)
        if _State.counters is not None:
            _warm()
    finally:
        kept.restore()


def _warm():
    """Validate once here, in the runner: the first native validation in a process sets up
    what every later one reuses (about a millisecond), and the children inherit it done.  The
    call's counts are not a module's: zeroed (a child starts from zero anyway)."""
    try:
        arg_spec = sys.modules["ansible.module_utils.common.arg_spec"]
        arg_spec.ArgumentSpecValidator({"accel_warm": {"type": "int"}}).validate({"accel_warm": 1})
    except Exception:  # noqa: BLE001 - the children then set it up themselves
        pass
    _State.counters.reset()


def install_target(preloaded, preloaded_files, archive, record, unused=None, create=True):
    """In a fresh interpreter that opted in (``ANSIBLE_ACCEL_MODULE_SIDE=target[:RECORD]``, see
    ``_modside_target``), once the payload's ``basic`` has been imported: the same switch-on
    as a runner's, on the modules imported from the payload so far (``archive``, the payload
    zip, is left out of the search for the installed packages).  With ``record``, the
    process appends its counts (or why the paths were not used: ``unused``, or the reason
    found here) to that file as it exits, creating it only with ``create`` (``_append_own``).
    Never raises."""
    try:
        kept = _Kept()
    except Exception:  # noqa: BLE001 - the module runs as shipped
        return
    try:
        import json

        _State.dumps = json.dumps
        if record:
            import atexit
            import os

            # (the module may change its working directory before it ends)
            _State.record, _State.target_create = os.path.abspath(record), bool(create)
            atexit.register(flush)
        if unused is not None:
            _State.reason = unused
        else:
            # The installed packages, not the payload's: the archive leaves the search path.
            search_path = [p for p in sys.path if p != archive]
            _switch_on(preloaded, preloaded_files, search_path)
    except Exception:  # noqa: BLE001 - the module runs as shipped
        pass
    finally:
        kept.restore()


def _switch_on(preloaded, preloaded_files, search_path=None):
    """Switch the paths on, or leave the modules as shipped with the reason (never raises)."""
    applied = []  # what to put back on a failure: (the _activation module, what it applied)
    # or (None, a hook undoing what an integration's after_install did)
    try:
        _State.reason = _install(frozenset(preloaded), dict(preloaded_files), applied,
                                 sys.path if search_path is None else search_path)
    except Exception as ex:  # noqa: BLE001 - never fail the module: it runs as shipped
        _State.reason = f"could not switch on: {type(ex).__name__}: {ex}"
        _State.counters = None
        for activation, item in reversed(applied):
            if activation is None:
                item()
            else:
                activation._revert(item)


def flush():
    """In a child, as it ends: its counts, one line appended to ``SOCKET.modside``.  Never
    raises, imports nothing."""
    if not _State.record or _State.dumps is None:
        return
    if _State.counters is not None:
        snapshot = _State.counters.snapshot()
        entry = {"paths": {path: snapshot[path] for path in PATHS}}
    elif _State.reason is not None and not _State.reason.startswith("switched off"):
        entry = {"unused": _State.reason}
    else:
        return
    try:
        line = _State.dumps(entry, sort_keys=True).encode() + b"\n"
        if _State.target_create is None:
            _append(_State.record, line)
        else:
            _append_own(_State.record, line, _State.target_create)
    except Exception:  # noqa: BLE001 - counters are advisory; never fail a module over them
        pass


def _append(path, line):
    import os

    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def _append_own(path, line, create):
    """A fresh interpreter's counts: appended only to a regular file of this process's user,
    never through a link as its last part, in a directory of that user's or in a sticky one of
    root's such as /tmp (where nobody else can take the file's place); created only with
    ``create``."""
    import os

    uid = os.getuid()
    directory, name = os.path.split(path)
    dir_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        info = os.fstat(dir_fd)
        if info.st_uid != uid and not (info.st_uid == 0 and info.st_mode & 0o1000):
            return
        flags = os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK
        fd = os.open(name, flags | (os.O_CREAT if create else 0), 0o600, dir_fd=dir_fd)
        try:
            info = os.fstat(fd)
            if info.st_mode & 0o170000 == 0o100000 and info.st_uid == uid:
                os.write(fd, line)
        finally:
            os.close(fd)
    finally:
        os.close(dir_fd)


class _Kept:
    """What importing may change that a module could see, restored as it was."""

    def __init__(self):
        self.modules = set(sys.modules)
        self.path = list(sys.path)
        self.meta_path = list(sys.meta_path)
        self.path_hooks = list(sys.path_hooks)
        self.importer_cache = set(sys.path_importer_cache)
        warnings = sys.modules.get("warnings")
        self.filters = list(warnings.filters) if warnings is not None else None
        # Attributes a submodule import sets on an already imported package.
        self.attributes = {name: set(module.__dict__) for name, module in sys.modules.items()
                           if isinstance(module, type(sys)) and "__path__" in module.__dict__}

    def restore(self):
        for name in [n for n in sys.modules if n not in self.modules]:
            del sys.modules[name]
        sys.path[:] = self.path
        sys.meta_path[:] = self.meta_path
        sys.path_hooks[:] = self.path_hooks
        for key in [k for k in sys.path_importer_cache if k not in self.importer_cache]:
            del sys.path_importer_cache[key]
        warnings = sys.modules.get("warnings")
        if self.filters is not None and warnings is not None and warnings.filters != self.filters:
            warnings.filters[:] = self.filters
            mutated = getattr(warnings, "_filters_mutated", None)
            if mutated is not None:
                mutated()
        for name, names in self.attributes.items():
            module = sys.modules.get(name)
            if module is None:
                continue
            namespace = module.__dict__
            for key in [k for k in namespace if k not in names and type(namespace[k]) is type(sys)]:
                del namespace[key]


def _install(preloaded, preloaded_files, applied, search_path):
    """Switch the paths on; None, or the reason they stay off."""
    import os

    for needed in ("ansible.module_utils.basic", "ansible.module_utils.common.arg_spec"):
        if needed not in preloaded:
            return f"{needed} not preloaded"
    finder = sys.modules["_frozen_importlib_external"].PathFinder
    spec = finder.find_spec(_PACKAGE, search_path)
    locations = list(getattr(spec, "submodule_search_locations", None) or ())
    if not locations:
        return "ansible-accel not importable by this interpreter"
    package_dir = locations[0]
    if not _same_file(os.path.join(package_dir, "_runner_modside.py"), __file__):
        return "this interpreter's ansible-accel is another build"
    if not all(os.path.isfile(os.path.join(package_dir, name)) for name in _USED):
        return "this interpreter's ansible-accel lacks the module-side files"
    version = _core_version_of(finder, preloaded_files, search_path)
    if version.startswith("!"):
        return version[1:]
    package = _package(package_dir)
    sys.modules[_PACKAGE] = package
    before = {n for n in sys.modules if n.partition(".")[0] == "ansible"}
    activation = __import__(f"{_PACKAGE}._activation", fromlist=["_"])
    # The payload's ansible-core: what the patched code asks _activation for (its own copy,
    # here, of the module), not an import of ``ansible.release`` (which the payload lacks).
    activation.core_version = lambda: version
    unsupported = activation.version_support(version)
    if unsupported is not None:
        return unsupported
    counters = __import__(f"{_PACKAGE}._counters", fromlist=["_"])
    patched = []
    for path in PATHS:
        integration = __import__(f"{_PACKAGE}._integrations.{path}", fromlist=["_"])
        try:
            # masking: on the preloaded modules only (the controller's plan imports the object walk)
            patches = integration.plan(preloaded=True) if path == "masking" else integration.plan()
        except activation.Unavailable:
            continue  # no_log on 2.22, masking before 2.22: off there on the controller too
        for patch in patches:
            applied.append((activation, activation._apply(patch)))
        hook = getattr(integration, "after_install", None)
        if hook is not None:
            undo = getattr(integration, "before_uninstall", None)
            if undo is not None:
                applied.append((None, undo))
            hook()  # masking: the shared masker's matcher becomes the native one
        patched.append((path, len(patches)))
    imported = {n for n in sys.modules if n.partition(".")[0] == "ansible"} - before
    if imported:
        # Nothing may come from anywhere but the payload's preloaded modules.
        raise RuntimeError(f"imported {sorted(imported)} outside the payload")
    _State.counters, _State.patched = counters, tuple(patched)
    return None


def _same_file(path, other):
    try:
        with open(path, "rb") as first, open(other, "rb") as second:
            return first.read() == second.read()
    except OSError:
        return False


# Package files AnsiBallZ writes itself into every payload (``extend_path`` and the version).
_GENERATED = frozenset({"ansible/__init__.py", "ansible/module_utils/__init__.py"})


def _core_version_of(finder, preloaded_files, search_path):
    """The payload's ansible-core version when this interpreter's installed ansible-core is
    that version and has the files the probe preloaded (each member's CRC-32 and size), else
    ``"!" + why``."""
    import os
    import re
    import zlib

    version = getattr(sys.modules.get("ansible"), "__version__", None)
    if not isinstance(version, str):
        return "!the payload names no ansible-core version"
    spec = finder.find_spec("ansible", search_path)
    locations = [p for p in (getattr(spec, "submodule_search_locations", None) or ()) if os.path.isdir(p)]
    if not locations:
        return "!ansible-core not installed for this interpreter"
    try:
        with open(os.path.join(locations[0], "release.py"), encoding="utf-8") as handle:
            found = re.search(r"""^__version__\s*=\s*['"]([^'"]+)['"]""", handle.read(), re.M)
    except OSError:
        found = None
    if found is None or found[1] != version:
        return "!this interpreter's ansible-core is another version than the payload's"
    root = os.path.dirname(locations[0])
    members = [m for m in preloaded_files if m not in _GENERATED]
    if not members:
        return "!no preloaded module_utils files to compare"
    for member in members:
        crc, size = preloaded_files[member]
        try:
            with open(os.path.join(root, member), "rb") as handle:
                data = handle.read()
        except OSError:
            return f"!{member} not in this interpreter's ansible-core"
        if len(data) != size or zlib.crc32(data) != crc:
            return f"!{member} differs from this interpreter's ansible-core"
    return version


def _package(directory):
    """A package object for ``ansible_accel`` whose ``__init__`` is not run."""
    bootstrap = sys.modules["_frozen_importlib"]
    package = type(sys)(_PACKAGE)
    package.__spec__ = bootstrap.ModuleSpec(_PACKAGE, None, is_package=True)
    package.__spec__.submodule_search_locations = [directory]
    package.__path__ = [directory]
    package.__package__ = _PACKAGE
    package.__file__ = None
    return package


# --- in the controller: the counts of the runners' children -----------------------------------


_wired: dict = {}
# The file that modules run by fresh interpreters append their counts to, when the controller
# gave them ``target:RECORD`` (``_integrations.modside_target``); None when it gives none.
target_record = None
TARGET_SUFFIX = ".modside-target"


def loaded_by(runner_script):
    """Whether the runner program ``runner_script`` loads this file (read once)."""
    if runner_script not in _wired:
        try:
            with open(runner_script, "rb") as handle:
                _wired[runner_script] = b"_runner_modside.py" in handle.read()
        except OSError:
            _wired[runner_script] = False
    return _wired[runner_script]


def status(rundir, runner_active, runner_script=None, remote_entries=()):
    """``status()["module_side"]``: whether module runs in warm runners use the paths, and
    their counts so far, read from ``*.modside`` in ``rundir`` (this controller's runners),
    with those of the modules fresh interpreters ran with the opt-in (``target_record``;
    ``target_modules`` of ``modules`` came from there) and those the remote runners' hosts
    reported (``remote_entries``; ``remote_modules`` of ``modules``)."""
    reason = switched_off()
    if reason is None and not runner_active:
        reason = "the runner path is off"
    if reason is None and runner_script is not None and not loaded_by(runner_script):
        reason = "the runner does not load the module-side paths"
    result = {"active": reason is None, "reason": reason, "modules": 0, "target_modules": 0, "remote_modules": 0,
              "fallback": {}}
    for path in PATHS:
        result[path] = {"native": 0, "fallback": {}}
    entries = [*_entries(rundir, target_record), *((entry, "remote") for entry in remote_entries if isinstance(entry, dict))]
    for entry, origin in entries:
        result["modules"] += 1
        result["target_modules"] += origin == 1
        result["remote_modules"] += origin == "remote"
        if "unused" in entry:
            why = str(entry["unused"])
            result["fallback"][why] = result["fallback"].get(why, 0) + 1
            continue
        for path, counts in (entry.get("paths") or {}).items():
            if path not in PATHS or not isinstance(counts, dict):
                continue
            into = result[path]
            into["native"] += int(counts.get("native", 0))
            for key in ("fallback", "events"):
                for name, n in (counts.get(key) or {}).items():
                    bucket = into.setdefault(key, {})
                    bucket[name] = bucket.get(name, 0) + int(n)
    return result


def _entries(rundir, record=None):
    """(entry, 1 if it came from ``record`` else 0) for each line of the records."""
    import os

    names = []
    if rundir:
        try:
            names = sorted(os.listdir(rundir))
        except OSError:
            pass
    for name in names:
        if name.endswith(RECORD_SUFFIX):
            yield from ((entry, 0) for entry in _read_entries(os.path.join(rundir, name)))
    if record:
        yield from ((entry, 1) for entry in _read_entries(record))


def _read_entries(path):
    import json

    try:
        with open(path, "rb") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict):
            yield entry
