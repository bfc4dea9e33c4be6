"""Writing what the ``finder`` path's walk found into the payload zip, as ansible-core's
``recursive_finder`` writes it: the module_utils files with their messages and source
mapping, then (2.21+) embedded resources with their package inits."""

from __future__ import annotations

import pathlib
import typing as t
import zipfile

from .. import _counters


def _note_source_mapping(mc: t.Any, extension_manager: t.Any, source_code: t.Any, file_name: str) -> None:
    if extension_manager.debugger_enabled and (origin := mc.Origin.get_tag(source_code)) and origin.path:
        extension_manager.source_mapping[origin.path] = file_name


def write_found(walk: t.Any, found: dict, zf: t.Any, date_time: t.Any, extension_manager: t.Any,
                written: set[str] | None, closure: t.Any = None) -> None:
    """Every found file into ``zf``, with ansible-core's messages and source mapping in its
    order (2.19/2.20 write, map, then say; 2.21+ say, write, map).  Into the payload path's
    writer (with ansible-core's own ``_make_zinfo``) the ZipInfo objects are made as
    ``_make_zinfo`` makes them, then written in one native call; for a remembered walk
    (``closure``) into an empty archive, the entries written last time from the same files
    are written again with this date (see ``_write_kept``)."""
    mc = walk.mc
    many = getattr(zf, 'writestr_many', None) if mc._make_zinfo is walk.make_zinfo else None
    kept = None
    if many is not None and closure is not None and closure.written is not None and mc.zipfile.ZipInfo is zipfile.ZipInfo:
        if _write_kept(walk, found, zf, date_time, extension_manager, written, closure):
            return
        kept = closure.written
        empty = not zf.filelist
    say = mc.display.vvvvv
    if many is None:
        for source_code, file_name in found.values():
            if walk.has_embeds:
                say("Including module_utils file %s" % mc.to_text(file_name, errors='surrogate_or_strict'))
            zf.writestr(mc._make_zinfo(file_name, date_time, zf=zf), source_code)
            if written is not None:
                written.add(file_name)
            _note_source_mapping(mc, extension_manager, source_code, file_name)
            if not walk.has_embeds:
                say("Including module_utils file %s" % mc.to_text(file_name, errors='surrogate_or_strict'))
        return
    zip_info, fields, compression = mc.zipfile.ZipInfo, date_time.utctimetuple()[:6], zf.compression
    items = []
    for source_code, file_name in found.values():
        if walk.has_embeds:
            say("Including module_utils file %s" % mc.to_text(file_name, errors='surrogate_or_strict'))
        zinfo = zip_info(filename=file_name, date_time=fields)
        zinfo.compress_type = compression
        items.append((zinfo, source_code))
        if written is not None:
            written.add(file_name)
        _note_source_mapping(mc, extension_manager, source_code, file_name)
        if not walk.has_embeds:
            say("Including module_utils file %s" % mc.to_text(file_name, errors='surrogate_or_strict'))
    many(items)
    if kept is not None and empty:
        entries = zf.keep_entries()
        if entries is not None:
            kept.clear()  # the entries of one compression at a time
            files = tuple(found.values())
            messages = tuple("Including module_utils file %s" % mc.to_text(file_name, errors='surrogate_or_strict')
                             for _, file_name in files)
            kept[compression] = (files, entries, mc.to_text, messages)


def _write_kept(walk: t.Any, found: dict, zf: t.Any, date_time: t.Any, extension_manager: t.Any,
                written: set[str] | None, closure: t.Any) -> bool:
    """The payload entries written last time from this closure, when the files found are the
    very same (name and data) and ``zf`` is still empty: the native block of their headers
    and data, dated anew, with ansible-core's messages and source mapping as the loop gives
    them.  False, with nothing done, otherwise."""
    mc = walk.mc
    record = closure.written.get(zf.compression)
    if record is None:
        return False
    files, entries, to_text, messages = record
    if to_text is not mc.to_text or files != tuple(found.values()):
        return False
    if not zf.writestr_kept(entries, date_time.utctimetuple()[:6], [source for source, _ in files]):
        return False
    say = mc.display.vvvvv
    if extension_manager.debugger_enabled:
        for (source_code, file_name), message in zip(files, messages):
            if walk.has_embeds:
                say(message)
            _note_source_mapping(mc, extension_manager, source_code, file_name)
            if not walk.has_embeds:
                say(message)
    else:
        # (the messages made when the entries were kept: to_text of the same names)
        for message in messages:
            say(message)
    if written is not None:
        written.update(file_name for _, file_name in files)
    _counters.extra("finder", "kept_entries_hit")
    return True


def _embed_root(mc: t.Any, package: str, roots: dict[str, pathlib.Path]) -> pathlib.Path:
    parts = package.split('.')
    if parts[0] == 'ansible':
        key, up = 'ansible', 0
    elif parts[0] == 'ansible_collections':
        key, up = '.'.join(parts[:3]), 2
    else:
        return None
    if key not in roots:
        files = mc.ir_files(key)
        roots[key] = files.parent if up == 0 else files.parents[up]
    return roots[key]


def write_embeds(mc: t.Any, embeds: set, zf: t.Any, date_time: t.Any, written: set[str]) -> None:
    """Resources requested through EmbedManager.embed() (2.21+), with their package inits."""
    roots: dict[str, pathlib.Path] = {}
    for embed in embeds:
        try:
            path_context = embed.path_context_manager
        except ModuleNotFoundError as ex:
            raise mc.AnsibleError('Embed package not found while packaging module.', obj=embed.package) from ex
        with path_context as path:
            if not path.is_file():
                raise mc.AnsibleError(f'Embed resource {embed.resource!r} not found while packaging module.', obj=embed.resource)
            root = _embed_root(mc, embed.package, roots)
            if root is None:
                raise mc.AnsibleError('Embed must be an ansible/ansible_collections resource.', obj=embed.resource)
            relative = path.relative_to(root)
            mc.display.vvvvv(f"Including embed file {relative}")
            zf.writestr(mc._make_zinfo(file_name := str(relative), date_time, zf=zf), path.read_bytes())
            written.add(file_name)
            for parent in relative.parents:
                if not parent.name:
                    continue
                init = str(parent / '__init__.py')
                if init not in written:
                    mc.display.vvvvv(f"Including parent init file {init}")
                    zf.writestr(mc._make_zinfo(init, date_time, zf=zf), b'')
                    written.add(init)
