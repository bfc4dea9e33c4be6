"""The code that ``ansible/__init__.pyc`` holds in a payload with bytecode.

zipimport gives code loaded from a ``.pyc`` the file name compiled into it (it never fixes
``co_filename`` as the file-system loaders do), and names the module's ``__file__`` after the
``.pyc``.  The payload's path on the target (a fresh ``mkdtemp`` directory) is unknown when
the controller compiles, so the bytecode carries a placeholder name and this shim, the first
code the target runs from the payload (the ``ansible`` package is imported before anything
else in it), makes every later load from a ``.pyc`` of this archive look exactly like the
load of its ``.py``:

- zipimport's ``_get_module_code`` (what its ``get_code``, ``get_filename`` and the spec's
  origin come from) is wrapped: a result loaded from ``X.pyc`` becomes the one of ``X.py``:
  path ``X.py`` and every code object's ``co_filename`` set to it (``_imp._fix_co_filename``,
  the file-system loaders' own fix), so ``__file__``, ``__cached__``, tracebacks, warnings,
  coverage and debuggers see the source path;
- where the bytecode would not be what zipimport compiles from the source (a target run with
  ``-O`` or without column positions), or zipimport is not one this was checked against
  (CPython 3.8 to 3.13), the archive's ``.pyc`` entries are dropped from zipimport's table
  instead: sources only;
- then the ``ansible`` module itself is set up as zipimport sets up a package from source
  (``__file__``, ``__cached__``, the spec's origin) and the real ``ansible/__init__.py`` is
  compiled and run in it, as zipimport would; the shim leaves no name behind.

The first two steps are the function ``_ansible_accel_bytecode_loads(archive)``: a warm
runner's child (``_runner_server``), where the ``ansible`` package is already imported, finds it
in this ``.pyc`` and calls it for its own payload, so that its imports load as they would here.

A target whose Python has another magic number never runs this (zipimport skips the
``.pyc``), nor one that runs the sources of an exploded payload (``.py`` wins over ``.pyc``
in a directory).  Valid Python 3.8: it is compiled by the target's Python version.
"""

SHIM_SOURCE = '''\
# ansible-accel: the payload carries bytecode; this sets it up, then runs ansible/__init__.py.
def _ansible_accel_bytecode_loads(archive):
    import sys
    import zipimport
    import _imp

    toc = zipimport._zip_directory_cache[archive]
    prefix = archive + zipimport.path_sep
    positions = getattr(compile("0", "", "eval"), "co_positions", None)
    same_code = sys.flags.optimize == 0 and (positions is None or None not in list(positions())[-1])
    original = getattr(zipimport, "_get_module_code", None)
    # zipimport as written in Python 3.8 to 3.13 (checked): another may load differently.
    known = sys.implementation.name == "cpython" and (3, 8) <= sys.version_info[:2] <= (3, 13)
    if known and same_code and callable(original) and hasattr(_imp, "_fix_co_filename"):

        def _get_module_code(importer, fullname):
            code, ispackage, modpath = original(importer, fullname)
            if modpath[-4:] == ".pyc" and importer.archive == archive and modpath[len(prefix):-1] in toc:
                modpath = modpath[:-1]
                _imp._fix_co_filename(code, modpath)
            return code, ispackage, modpath

        zipimport._get_module_code = _get_module_code
    else:
        for name in [name for name in toc if name[-4:] == ".pyc" and name[:-1] in toc]:
            del toc[name]


def _ansible_accel_bytecode(namespace):
    loader = namespace["__loader__"]
    spec = namespace["__spec__"]
    _ansible_accel_bytecode_loads(loader.archive)
    source_path = spec.origin[:-1]
    spec.origin = source_path
    spec.cached = None
    namespace["__file__"] = source_path
    if namespace.get("__cached__") is not None:  # None where zipimport's load_module set it (<3.10)
        namespace["__cached__"] = spec.cached
    source = loader.get_data(source_path).replace(b"\\r\\n", b"\\n").replace(b"\\r", b"\\n")
    exec(compile(source, source_path, "exec", dont_inherit=True), namespace)


_ansible_accel_bytecode(globals())
del _ansible_accel_bytecode, _ansible_accel_bytecode_loads
'''
