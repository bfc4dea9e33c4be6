"""Run under a target Python with a payload-like zip: import from it as AnsiBallZ does and
print, as JSON, everything a module can observe of where its code came from."""

import builtins
import json
import linecache
import runpy
import sys
import traceback
import warnings
import zipimport

archive = sys.argv[1]
sys.path.insert(0, archive)
report = {}

# Which entries get compiled from source here (reported apart: it is what bytecode changes).
compiled_from_source = []
_compile = builtins.compile


def _counting_compile(source, filename, *args, **kwargs):
    if isinstance(filename, str) and filename.startswith(archive):
        compiled_from_source.append(filename[len(archive) + 1 :])
    return _compile(source, filename, *args, **kwargs)


builtins.compile = _counting_compile


def describe(module):
    spec = module.__spec__
    return {
        "__file__": getattr(module, "__file__", None),
        "__cached__": getattr(module, "__cached__", None),
        "origin": spec.origin,
        "cached": spec.cached,
        "has_location": spec.has_location,
        "search": list(spec.submodule_search_locations or []) or None,
        "names": sorted(k for k in vars(module) if k != "__builtins__"),
        "loader": type(module.__loader__).__name__,
    }


import ansible  # noqa: E402
import ansible.module_utils  # noqa: E402
from ansible.module_utils import helper  # noqa: E402

for name in ("ansible", "ansible.module_utils", "ansible.module_utils.helper"):
    report[name] = describe(sys.modules[name])
report["version"] = getattr(ansible, "__version__", None)
report["helper_codes"] = sorted({c.co_filename for c in helper.code_objects()})
try:
    helper.fail()
except Exception:
    report["traceback"] = traceback.format_exc()
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    helper.warn()
report["warnings"] = [(w.filename, w.lineno, str(w.message)) for w in caught]
report["source_line"] = linecache.getline(helper.fail.__code__.co_filename, helper.fail.__code__.co_firstlineno)
try:
    runpy.run_module("ansible.modules.main_mod", run_name="__main__", alter_sys=True)
except SystemExit as ex:
    report["main"] = ex.code
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    import ansible.module_utils.escapes  # noqa: F401
report["compile_warnings"] = [(w.filename, w.lineno, w.category.__name__) for w in caught]
try:
    import ansible.module_utils.broken  # noqa: F401
except SyntaxError as ex:
    report["syntax_error"] = (ex.filename, ex.lineno, ex.msg)
report["__compiled_from_source__"] = sorted(set(compiled_from_source))
report["__bytecode_shim_active__"] = zipimport._get_module_code.__module__ != "zipimport"
print(json.dumps(report, indent=1, sort_keys=True))
