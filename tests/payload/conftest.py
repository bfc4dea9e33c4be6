"""Fixtures for the payload tests: zipfile itself as the reference, and ansible-core's own
payload building for a real module."""

from __future__ import annotations

import datetime
import io
import typing as t
import zipfile

import pytest

# A fixed clock: ansible-core stamps every entry with the same UTC time.
PINNED = datetime.datetime(2025, 3, 4, 5, 6, 7, 890000, tzinfo=datetime.timezone.utc)


def zipfile_reference(entries: t.Iterable[tuple[str, bytes]], date_time: tuple[int, ...], compression: int) -> bytes:
    """What ansible-core's way of calling zipfile writes for ``entries``."""
    buffer = io.BytesIO()
    archive = zipfile.ZipFile(buffer, mode="w", compression=compression)
    for name, data in entries:
        info = zipfile.ZipInfo(filename=name, date_time=date_time)
        info.compress_type = archive.compression
        archive.writestr(info, data)
    archive.close()
    return buffer.getvalue()


_plugin_loader_ready = False


def _init_plugin_loader_once() -> None:
    """The collection loader, as every ansible CLI sets it up (once: it warns when redone)."""
    global _plugin_loader_ready
    if not _plugin_loader_ready:
        from ansible.plugins.loader import init_plugin_loader

        init_plugin_loader()
        _plugin_loader_ready = True


@pytest.fixture(scope="session")
def plugin_loader() -> None:
    _init_plugin_loader_once()


@pytest.fixture(scope="session")
def reference() -> t.Callable[..., bytes]:
    return zipfile_reference


def build_module_payload(module_name: str, compression: int, open_zip: t.Callable[[io.BytesIO, int], t.Any]) -> bytes:
    """The payload zip of ansible-core's module ``module_name``, built by ansible-core's own
    ``recursive_finder`` and ``_add_module_to_zip`` into ``open_zip(buffer, compression)``."""
    from ansible._internal._ansiballz import _builder
    from ansible._internal._datatag._tags import Origin
    from ansible.executor import module_common
    from ansible.plugins.loader import module_loader

    _init_plugin_loader_once()
    path = module_loader.find_plugin(module_name)
    assert path, module_name
    with open(path, "rb") as f:
        source = f.read()
    fqn = module_common._get_ansible_module_fqn(path)
    extensions = _builder.ExtensionManager.create(task_vars={})
    buffer = io.BytesIO()
    archive = open_zip(buffer, compression)
    module_common.recursive_finder(module_name, fqn, Origin(path=path).tag(source), archive, PINNED, extensions)
    module_common._add_module_to_zip(archive, PINNED, fqn, source, path, extensions)
    archive.close()
    return buffer.getvalue()


@pytest.fixture(scope="session")
def module_payload() -> t.Callable[..., bytes]:
    return build_module_payload


@pytest.fixture(scope="session")
def pinned() -> datetime.datetime:
    return PINNED
