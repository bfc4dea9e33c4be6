#!/usr/bin/python
"""Reports what a module can observe of the interpreter it runs in (for the runner's tests, and
the remote runner's on hosts' interpreters, Python 3.8 and later).  What an interpreter lacks is
reported as absent (``sys.orig_argv`` before 3.10, code objects' ``co_linetable`` before 3.10,
``co_exceptiontable``, ``co_qualname`` and ``co_positions()`` before 3.11), so a runner that set
it where a fresh interpreter has none shows."""

from __future__ import annotations

import gc
import locale
import os
import random
import signal
import sys
import threading
import warnings

from ansible.module_utils.basic import AnsibleModule


def _dispositions():
    found = {}
    for sig in signal.valid_signals():
        try:
            handler = signal.getsignal(sig)
        except (OSError, ValueError):
            continue
        found[int(sig)] = getattr(handler, "__name__", None) or str(handler)
    return found


def _limits():
    import resource

    return {n: list(resource.getrlimit(n)) for n in range(16)}


ABSENT = "absent"


def _code_shape(code):
    code_type = type(code)
    lines = code.co_linetable if sys.version_info >= (3, 10) else code.co_lnotab
    positions = list(code.co_positions()) if hasattr(code, "co_positions") else ABSENT
    return (code.co_code, lines, getattr(code, "co_exceptiontable", ABSENT), code.co_names, code.co_varnames,
            code.co_cellvars, code.co_freevars, code.co_filename, code.co_name, getattr(code, "co_qualname", ABSENT),
            code.co_firstlineno, code.co_flags, code.co_argcount, code.co_posonlyargcount,
            code.co_kwonlyargcount, code.co_stacksize, positions,
            tuple(_code_shape(c) if type(c) is code_type else (type(c).__name__, c) for c in code.co_consts))


def _wrapper_code():
    """A digest of the wrapper script's code object, as the interpreter running it holds it."""
    import hashlib

    frame = sys._getframe()
    while frame is not None and not (frame.f_code.co_name == "<module>" and "_ansiballz_main" in frame.f_globals):
        frame = frame.f_back
    if frame is None:
        return None
    code = frame.f_code
    return [code.co_filename, hashlib.sha256(repr(_code_shape(code)).encode()).hexdigest()]


def _zip_importers():
    """The zip importers of the path importer cache, by directory inside their archive: prefix,
    attribute names in order, and whether they share the archive's cached directory."""
    import zipimport

    found = []
    for key, importer in sys.path_importer_cache.items():
        if isinstance(importer, zipimport.zipimporter):
            files = vars(importer).get("_files")
            shared = None if files is None else files is zipimport._zip_directory_cache.get(importer.archive)
            found.append([key[len(importer.archive):], importer.prefix, list(vars(importer)), shared])
    return sorted(found)


def _bytecode_view():
    """How this module's own code and the payload's imports were loaded: paths, code file names,
    zipimport's loading function, and how many ``.pyc`` entries the payload's directory lists."""
    import zipimport

    import ansible.module_utils.basic as basic

    # (the code of preloaded module_utils is not compared: in a runner's child it names the
    # probe's payload, docs/runner.md)
    loader = getattr(basic, "__loader__", None)
    toc = zipimport._zip_directory_cache.get(getattr(loader, "archive", None)) or {}
    get_code = getattr(zipimport, "_get_module_code", None)
    return dict(
        main_file=globals().get("__file__"),
        main_cached=globals().get("__cached__"),
        main_code_file=main.__code__.co_filename,
        get_module_code=[getattr(get_code, "__qualname__", None), getattr(getattr(get_code, "__code__", None), "co_filename", None)],
        pyc_entries=len([name for name in toc if name.endswith(".pyc")]),
    )


def _module_path(name):
    module = sys.modules.get(name)
    return getattr(module, "__file__", None)


def main():
    module = AnsibleModule(argument_spec=dict(
        mutate=dict(type="bool", default=False),
        # A file to which each run of the module appends "LABEL PID", to count its runs.
        record=dict(type="path"),
        label=dict(type="str", default=""),
    ))
    if module.params["record"]:
        fd = os.open(module.params["record"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, f"{module.params['label']} {os.getpid()}\n".encode())
        finally:
            os.close(fd)
    import ansible
    import ansible.module_utils
    import ansible.module_utils.basic as basic

    observed = dict(
        argv=sys.argv,
        orig_argv=getattr(sys, "orig_argv", ABSENT),
        version=list(sys.version_info),
        executable=sys.executable,
        path=sys.path,
        modules=list(sys.modules),
        environ=list(os.environ.items()),
        cwd=os.getcwd(),
        umask=os.umask(0o022),
        dispositions=_dispositions(),
        blocked=sorted(int(s) for s in signal.pthread_sigmask(signal.SIG_BLOCK, [])),
        limits=_limits(),
        fds=sorted(os.listdir("/proc/self/fd")),
        flags=list(sys.flags),
        locale=[locale.getlocale(locale.LC_CTYPE), locale.getpreferredencoding(False), sys.getfilesystemencoding()],
        stdio=[[s.encoding, s.errors, s.line_buffering, s.write_through if hasattr(s, "write_through") else None]
               for s in (sys.stdin, sys.stdout, sys.stderr)],
        pid=os.getpid(),
        pgrp=os.getpgrp(),
        sid=os.getsid(0),
        random=random.random(),
        threads=threading.active_count(),
        warning_filters=[str(f) for f in warnings.filters],
        meta_path=[type(f).__name__ if not isinstance(f, type) else f.__name__ for f in sys.meta_path],
        path_hooks=len(sys.path_hooks),
        ansible_path=list(ansible.__path__),
        module_utils_path=list(ansible.module_utils.__path__),
        basic_file=basic.__file__,
        basic_loader=[type(basic.__loader__).__name__, getattr(basic.__loader__, "archive", None),
                      getattr(basic.__loader__, "prefix", None)],
        basic_spec_origin=basic.__spec__.origin,
        loader_file=_module_path("ansible.module_utils._internal._ansiballz._loader"),
        main_keys=sorted(vars(sys.modules["__main__"])),
        gc_enabled=gc.isenabled(),
        tempdir_cached=__import__("tempfile").tempdir,
        wrapper_code=_wrapper_code(),
        bytecode=_bytecode_view(),
        zip_importers=_zip_importers(),
        # 3.12+: how the reference count of a preloaded object reads (the runner's are immortal)
        basic_refcount=sys.getrefcount(AnsibleModule),
    )
    if module.params["mutate"]:
        # Changes a later module must not see.
        basic._ACCEL_MUTATED = True
        os.environ["ACCEL_LEAK"] = "1"
        os.chdir("/")
        os.umask(0o077)
        signal.signal(signal.SIGUSR1, signal.SIG_IGN)
        random.seed(1)
        threading.Thread(target=lambda: None, daemon=True).start()
        os.open("/dev/null", os.O_RDONLY)
    observed["mutated_seen"] = getattr(basic, "_ACCEL_MUTATED", False)
    module.exit_json(changed=False, observed=observed)


if __name__ == "__main__":
    main()
