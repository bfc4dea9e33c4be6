"""Payload zips: ``build_zip`` and ``PayloadZipFile`` against zipfile, on the entries of
real module payloads (what ansible-core's ``recursive_finder`` + ``_add_module_to_zip``
write), stored and deflated.  Bytes compared in every row."""

from __future__ import annotations

import datetime
import io
import zipfile

from ._harness import Row, compare

MODULES = ("command", "copy", "user")
QUICK_MODULES = ("command",)
DATE_TIME = datetime.datetime(2025, 3, 4, 5, 6, 7, tzinfo=datetime.timezone.utc)
_plugin_loader_ready = False


def _module_entries(module: str) -> list[tuple[str, bytes]]:
    """The (name, data) entries of ``module``'s payload, in the order ansible-core writes them."""
    from ansible._internal._ansiballz import _builder
    from ansible._internal._datatag._tags import Origin
    from ansible.executor import module_common
    from ansible.plugins.loader import init_plugin_loader, module_loader

    global _plugin_loader_ready
    if not _plugin_loader_ready:  # once: it warns when redone
        init_plugin_loader()
        _plugin_loader_ready = True
    path = module_loader.find_plugin(module)
    with open(path, "rb") as f:
        source = f.read()
    fqn = module_common._get_ansible_module_fqn(path)
    extensions = _builder.ExtensionManager.create(task_vars={})
    buffer = io.BytesIO()
    archive = zipfile.ZipFile(buffer, mode="w", compression=zipfile.ZIP_STORED)
    module_common.recursive_finder(module, fqn, Origin(path=path).tag(source), archive, DATE_TIME, extensions)
    module_common._add_module_to_zip(archive, DATE_TIME, fqn, source, path, extensions)
    archive.close()
    written = zipfile.ZipFile(io.BytesIO(buffer.getvalue()))
    return [(info.filename, written.read(info)) for info in written.infolist()]


def _with_zipfile(entries, date_time, compression) -> bytes:
    # ansible-core's way: _make_zinfo + writestr per entry, then close().
    buffer = io.BytesIO()
    archive = zipfile.ZipFile(buffer, mode="w", compression=compression)
    for name, data in entries:
        info = zipfile.ZipInfo(filename=name, date_time=date_time)
        info.compress_type = archive.compression
        archive.writestr(info, data)
    archive.close()
    return buffer.getvalue()


def _with_payload_zipfile(entries, date_time, compression) -> bytes:
    from ansible_accel.payload import PayloadZipFile

    buffer = io.BytesIO()
    archive = PayloadZipFile(buffer, compression)
    for name, data in entries:
        info = zipfile.ZipInfo(filename=name, date_time=date_time)
        info.compress_type = archive.compression
        archive.writestr(info, data)
    archive.close()
    return buffer.getvalue()


def _fresh_module_each_call(build, entries, module):
    """``build`` on ``entries`` whose module file differs at every call (same sequence for
    each caller, so the first results compare equal)."""
    own = f"ansible/modules/{module}.py"
    calls = iter(range(1 << 62))

    def call():
        stamp = b"# build %d\n" % next(calls)
        return build([(n, d + stamp if n == own else d) for n, d in entries])

    return call


def run(quick: bool) -> list[Row]:
    from ansible_accel.payload import build_zip, clear_cache

    date_time = DATE_TIME.utctimetuple()[:6]
    rows: list[Row] = []
    for module in QUICK_MODULES if quick else MODULES:
        entries = _module_entries(module)
        size = sum(len(data) for _, data in entries)
        inputs = f"{module}: {len(entries)} files, {size // 1024} KiB"
        for compression, label in ((zipfile.ZIP_STORED, "stored"), (zipfile.ZIP_DEFLATED, "deflated")):
            repeat, number = (3, 3) if quick else (7, 10)

            def python(e=entries, c=compression):
                return _with_zipfile(e, date_time, c)

            def native_cold(e=entries, c=compression):
                clear_cache()  # as the first payload of a process
                return build_zip(e, date_time, c)

            def native(e=entries, c=compression):
                return build_zip(e, date_time, c)

            def writer(e=entries, c=compression):
                return _with_payload_zipfile(e, date_time, c)

            def timed(name, python_fn, native_fn):
                rows.append(compare("payload", name, inputs, python_fn, native_fn, repeat=repeat, number=number))

            if compression == zipfile.ZIP_STORED:
                timed("build_zip stored", python, native)
                timed("PayloadZipFile stored", python, writer)
                continue
            # cold: the first payload of a process; warm: the same files deflated before;
            # utils-warm: module_utils deflated before, the module's own file new (a run's
            # second module); PayloadZipFile as module_common writes into it, warm.
            timed("build_zip deflated cold", python, native_cold)
            timed("build_zip deflated warm", python, native)
            timed("build_zip deflated utils-warm", _fresh_module_each_call(python, entries, module), _fresh_module_each_call(native, entries, module))
            timed("PayloadZipFile deflated warm", python, writer)
    return rows
