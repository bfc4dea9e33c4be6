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


def _module_entries(module: str) -> list[tuple[str, bytes]]:
    """The (name, data) entries of ``module``'s payload, in the order ansible-core writes them."""
    from ansible._internal._ansiballz import _builder
    from ansible._internal._datatag._tags import Origin
    from ansible.executor import module_common
    from ansible.plugins.loader import init_plugin_loader, module_loader

    init_plugin_loader()
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
                return build_zip(e, date_time, c)  # after other payloads with these files

            def writer(e=entries, c=compression):
                return _with_payload_zipfile(e, date_time, c)

            rows.append(compare("payload", f"build_zip {label} cold", inputs, python, native_cold, repeat=repeat, number=number))
            rows.append(compare("payload", f"build_zip {label} warm", inputs, python, native, repeat=repeat, number=number))
            rows.append(compare("payload", f"PayloadZipFile {label} warm", inputs, python, writer, repeat=repeat, number=number))
    return rows
