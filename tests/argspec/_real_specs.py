"""The real argument specs of the modules installed with ansible-core and (where installed)
the collections of the ``ansible`` community package, captured by running each module's
``main()`` with a stand-in ``AnsibleModule`` that records its arguments and stops.

Capture runs in worker subprocesses (a module may hang, exit, or crash its interpreter), each
module under an alarm; the result is cached under ``.cache/`` keyed by the ansible-core and
``ansible`` package versions.  Run as a script, this file is the worker:
``python _real_specs.py OUT.pickle MODULE_FILE...``.
"""

from __future__ import annotations

import importlib.util
import io
import os
import pickle
import shutil
import signal
import subprocess
import tempfile
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CACHE = os.path.join(ROOT, ".cache")
KEYS = ("argument_spec", "mutually_exclusive", "required_together", "required_one_of", "required_if", "required_by")
BATCH = 400
PER_MODULE_SECONDS = 5


class _Captured(BaseException):
    """Stops main() once AnsibleModule has been given the spec (BaseException: past
    ``except Exception`` in modules)."""


def _portable(obj, depth=0):
    """Whether ``obj`` can be pickled without importing the module it came from: builtins,
    and callables of ansible-core's module_utils and the builtins module."""
    if depth > 64:
        return False
    if isinstance(obj, dict):
        return all(_portable(k, depth + 1) and _portable(v, depth + 1) for k, v in obj.items())
    if isinstance(obj, (list, tuple, set, frozenset)):
        return all(_portable(v, depth + 1) for v in obj)
    if obj is None or type(obj) in (str, int, float, bool, bytes):
        return True
    if callable(obj):
        module = getattr(obj, "__module__", "") or ""
        return module == "builtins" or module.startswith("ansible.module_utils.")
    return False


_found: list = []


class _StandIn:
    """Put in place of AnsibleModule for the worker's whole life, before any module_utils
    that binds the name (or subclasses it) is imported."""

    def __init__(self, *args, **kwargs):
        spec = dict(zip(("argument_spec",), args))
        spec.update(kwargs)
        _found.append({k: spec.get(k) for k in KEYS})
        raise _Captured


def _capture_one(path: str, name: str):
    found = _found
    found.clear()
    sys.stdin = io.StringIO("{}")
    try:
        loader = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(loader)
        sys.modules[name] = module
        loader.loader.exec_module(module)
        main = getattr(module, "main", None)
        if main is None:
            return "no main()"
        main()
    except _Captured:
        pass
    except BaseException as ex:  # noqa: BLE001 - any failure of a module is counted, not fatal
        if not found:
            return f"failed: {type(ex).__name__}"
    finally:
        sys.modules.pop(name, None)
    if not found:
        return "main() returned without AnsibleModule"
    if not isinstance(found[0]["argument_spec"], dict):
        return "argument_spec not a dict"
    if not _portable(found[0]):
        return "spec holds module-local callables or objects"
    return found[0]


def _worker(out: str, paths: list[str]) -> None:
    """Capture ``paths`` in order, appending one pickled ``(path, result)`` record per module
    to ``out`` as it goes: if this process dies (a module may kill it, or the alarm may fire
    at an unlucky moment), the records written so far survive and the parent goes on after
    the module that was running."""
    def alarm(*_):
        raise TimeoutError

    signal.signal(signal.SIGALRM, alarm)
    from ansible.module_utils import basic

    basic.AnsibleModule = _StandIn
    devnull = open(os.devnull, "w")
    with open(out, "ab") as records:
        for path in paths:
            name = "_captured_" + path.replace("/", "_").replace(".", "_")
            saved = sys.stdout, sys.stderr
            sys.stdout = sys.stderr = devnull
            try:
                signal.alarm(PER_MODULE_SECONDS)
                try:
                    result = _capture_one(path, name)
                finally:
                    signal.alarm(0)
            except BaseException as ex:  # noqa: BLE001 - e.g. the alarm
                result = f"failed: {type(ex).__name__}"
            finally:
                sys.stdout, sys.stderr = saved
            pickle.dump((path, result), records)
            records.flush()


def _read_records(out: str) -> dict:
    found: dict = {}
    try:
        with open(out, "rb") as handle:
            while True:
                try:
                    path, result = pickle.load(handle)
                except EOFError:
                    break
                except (pickle.UnpicklingError, ValueError, TypeError):
                    break  # a record cut short when the worker died
                found[path] = result
    except OSError:
        pass
    return found


def _capture(batch: list[str], out: str, scratch: str) -> dict:
    """Every module of ``batch`` captured, a worker started again after any module that
    killed or hung the previous one (that module is recorded as such)."""
    results: dict = {}
    pending = list(batch)
    empty_runs = 0
    while pending:
        if os.path.exists(out):
            os.remove(out)
        try:
            subprocess.run([sys.executable, __file__, out, *pending], timeout=PER_MODULE_SECONDS * len(pending) + 60,
                           stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           cwd=scratch, start_new_session=True)
        except (subprocess.TimeoutExpired, OSError):
            pass
        records = _read_records(out)
        results.update(records)
        empty_runs = 0 if records else empty_runs + 1
        rest = [path for path in pending if path not in results]
        if rest:  # the worker stopped on rest[0]: record it, go on after it
            doomed = rest if empty_runs >= 2 else rest[:1]  # twice nothing at all: it cannot start
            results.update({path: "failed: worker died or hung" for path in doomed})
            rest = rest[len(doomed):]
        pending = rest
    if os.path.exists(out):
        os.remove(out)
    return results


def module_files() -> list[str]:
    import ansible

    core = os.path.join(os.path.dirname(ansible.__file__), "modules")
    files = sorted(os.path.join(core, f) for f in os.listdir(core) if f.endswith(".py") and not f.startswith("_"))
    try:
        import ansible_collections
    except ImportError:
        return files
    for base in ansible_collections.__path__:
        for namespace in sorted(os.listdir(base)):
            for collection in sorted(os.listdir(os.path.join(base, namespace)) if os.path.isdir(os.path.join(base, namespace)) else []):
                modules = os.path.join(base, namespace, collection, "plugins", "modules")
                if os.path.isdir(modules):
                    files += sorted(os.path.join(modules, f) for f in os.listdir(modules)
                                    if f.endswith(".py") and not f.startswith("_"))
    return files


def _versions() -> str:
    from importlib import metadata

    from ansible.release import __version__ as core

    try:
        community = metadata.version("ansible")
    except metadata.PackageNotFoundError:
        community = "none"
    return f"core{core}-ansible{community}-py{sys.version_info[0]}{sys.version_info[1]}"


def load() -> dict:
    """``{"specs": {module file: captured kwargs}, "skipped": {reason: count}}``, cached."""
    os.makedirs(CACHE, exist_ok=True)
    cache = os.path.join(CACHE, f"argspec-real-specs-{_versions()}.pickle")
    if os.path.exists(cache):
        with open(cache, "rb") as handle:
            return pickle.load(handle)
    files = module_files()
    results: dict = {}
    scratch = tempfile.mkdtemp(prefix="argspec-capture-")  # modules may write logs where they run
    for start in range(0, len(files), BATCH):
        results.update(_capture(files[start:start + BATCH], cache + f".part{start}", scratch))
    shutil.rmtree(scratch, ignore_errors=True)
    specs = {path: found for path, found in results.items() if isinstance(found, dict)}
    skipped: dict = {}
    for found in results.values():
        if isinstance(found, str):
            skipped[found] = skipped.get(found, 0) + 1
    data = {"specs": specs, "skipped": skipped, "modules": len(files), "made": time.time()}
    with open(cache + ".tmp", "wb") as handle:
        pickle.dump(data, handle)
    os.replace(cache + ".tmp", cache)
    return data


if __name__ == "__main__":
    _worker(sys.argv[1], sys.argv[2:])
