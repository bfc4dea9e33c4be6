"""Writing what the ``finder`` path's walk found into the payload zip, as ansible-core's
``recursive_finder`` writes it: the module_utils files with their messages and source
mapping, then (2.21+) embedded resources with their package inits."""

from __future__ import annotations

import inspect
import os
import pathlib
import stat
import sys
import typing as t
import zipfile

from .. import _counters
from ..payload import _load_kept as load_kept, _retain_kept as retain_kept
from . import _finder_closure as closure_memo
from . import _finder_disk
from ._finder_locate import stamp, trusted
from ._memo import BoundedMemo

# the kept-entry files this process left (or found) already, so each is written once
_saved_blocks: BoundedMemo[str, bool] = BoundedMemo(1024)
# what ZipInfo(name) holds besides its name, compression and date (the kept fields a block
# written by write_found has for every entry)
_PLAIN = zipfile.ZipInfo()
_PLAIN_FIELDS = (_PLAIN.create_system, _PLAIN.reserved, _PLAIN.internal_attr, _PLAIN.extra, _PLAIN.comment)


def block_compression(walk: t.Any, zf: t.Any) -> int | None:
    """The compression of ``zf`` when write_found would write into it natively, in one call,
    from an empty archive: only then can a remembered closure's payload entries kept on disk
    be written instead of its files being read (see _finder_closure.lookup); else None."""
    mc = walk.mc
    try:
        if (getattr(zf, 'writestr_many', None) is None or getattr(zf, 'writestr_kept', None) is None
                or mc._make_zinfo is not walk.make_zinfo or mc.zipfile.ZipInfo is not zipfile.ZipInfo or zf.filelist):
            return None
        compression = zf.compression
    except Exception:  # noqa: BLE001 - an unusual archive: written the ordinary way
        return None
    return compression if type(compression) is int else None


def _note_source_mapping(mc: t.Any, extension_manager: t.Any, source_code: t.Any, file_name: str,
                         origins: dict | None = None) -> None:
    """ansible-core's source mapping of a file written; ``origins``: the origin path of each
    file (by zip name) a remembered closure holds untagged (see _finder_closure)."""
    if not extension_manager.debugger_enabled:
        return
    if source_code is not None and (origin := mc.Origin.get_tag(source_code)) is not None:
        path = origin.path
    else:
        path = origins.get(file_name) if origins else None
    if path:
        extension_manager.source_mapping[path] = file_name


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
    if closure is not None and closure.unread:
        if many is not None and mc.zipfile.ZipInfo is zipfile.ZipInfo and (
                (closure.written is not None and _write_kept(walk, found, zf, date_time, extension_manager, written, closure))
                or _write_block(walk, found, zf, date_time, extension_manager, written, closure)):
            return
        for parts, output_path, source in closure_memo.read_sources(closure):
            found[parts] = (source, output_path)
    kept = None
    if many is not None and closure is not None and closure.written is not None and mc.zipfile.ZipInfo is zipfile.ZipInfo:
        if _write_kept(walk, found, zf, date_time, extension_manager, written, closure):
            return
        kept = closure.written
        empty = not zf.filelist
    save_to = None
    if many is not None and closure is not None and closure.block_key is not None and mc.zipfile.ZipInfo is zipfile.ZipInfo:
        # (left on disk for other processes from an empty archive: see _finder_disk.block_path)
        save_to = _finder_disk.block_path(closure.block_key, zf.compression) if not zf.filelist else None
        if save_to is not None and _saved_blocks.get(save_to):
            save_to = None
    say = mc.display.vvvvv
    origins = closure.origins if closure is not None else None
    if many is None:
        for source_code, file_name in found.values():
            if walk.has_embeds:
                say("Including module_utils file %s" % mc.to_text(file_name, errors='surrogate_or_strict'))
            zf.writestr(mc._make_zinfo(file_name, date_time, zf=zf), source_code)
            if written is not None:
                written.add(file_name)
            _note_source_mapping(mc, extension_manager, source_code, file_name, origins)
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
        _note_source_mapping(mc, extension_manager, source_code, file_name, origins)
        if not walk.has_embeds:
            say("Including module_utils file %s" % mc.to_text(file_name, errors='surrogate_or_strict'))
    many(items)
    if save_to is not None:
        _save_block(zf, save_to)
    if kept is not None and empty:
        entries = zf.keep_entries()
        if entries is not None:
            kept.clear()  # the entries of one compression at a time
            files = tuple(found.values())
            messages = tuple("Including module_utils file %s" % mc.to_text(file_name, errors='surrogate_or_strict')
                             for _, file_name in files)
            kept[compression] = (files, entries, mc.to_text, messages)


def _save_block(zf: t.Any, path: str) -> None:
    """Leave the entries just written from a closure on disk (see _finder_disk.block_path),
    unless they are there already."""
    _saved_blocks.put(path, True)
    try:
        if os.path.exists(path) and not _finder_disk.bad_blocks.get(path):
            return
        directory, name = os.path.split(path)
        if zf.save_entries(directory, name, _finder_disk.LARGEST_BLOCK):
            _counters.extra("finder", "kept_block_saved")
            _finder_disk.after_block_saved(path)
    except Exception:  # noqa: BLE001 - keeping them only ever saves time
        pass


def _write_block(walk: t.Any, found: dict, zf: t.Any, date_time: t.Any, extension_manager: t.Any,
                 written: set[str] | None, closure: t.Any) -> bool:
    """For a closure whose files were not read (see _finder_closure.lookup): the payload
    entries kept on disk for it, into the still empty ``zf``, dated anew, with ansible-core's
    messages and source mapping as the loop gives them.  False, with nothing done, when
    they cannot be (the caller then reads the files and writes them)."""
    mc = walk.mc
    kept = closure.kept_file
    if kept is None:
        path = _finder_disk.block_path(closure.block_key, zf.compression)
        kept = load_kept(path) if path is not None else None
    if kept is None:
        return False
    compression = zf.compression
    names = [file_name for _, file_name in found.values()]
    if kept.fields != tuple((name, compression) + _PLAIN_FIELDS for name in names) or zf.filelist:
        return False
    if not zf.writestr_kept(kept, date_time.utctimetuple()[:6]):
        return False
    say = mc.display.vvvvv
    to_text = mc.to_text
    messages = []
    for (source_code, file_name) in found.values():
        message = "Including module_utils file %s" % to_text(file_name, errors='surrogate_or_strict')
        messages.append(message)
        if walk.has_embeds:
            say(message)
        _note_source_mapping(mc, extension_manager, source_code, file_name, closure.origins)
        if not walk.has_embeds:
            say(message)
    if written is not None:
        written.update(names)
    _counters.extra("finder", "kept_block_hit")
    # the next walk of this closure in this process writes them from memory (see _write_kept)
    if closure.written is not None and retain_kept(kept):
        closure.written.clear()  # the entries of one compression at a time
        closure.written[compression] = (tuple(found.values()), kept, to_text, tuple(messages))
    return True


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
    # (a closure whose files were not read: the entries' own data, inflated if asked for)
    datas = None if closure.unread else [source for source, _ in files]
    if not zf.writestr_kept(entries, date_time.utctimetuple()[:6], datas):
        return False
    say = mc.display.vvvvv
    if extension_manager.debugger_enabled:
        for (source_code, file_name), message in zip(files, messages):
            if walk.has_embeds:
                say(message)
            _note_source_mapping(mc, extension_manager, source_code, file_name, closure.origins)
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


class _KeptEmbed(t.NamedTuple):
    """An embedded resource as last written: valid while the same import state would locate
    the same file (``guards``) and the file keeps its stat stamp."""

    guards: tuple  # compared object by object, by identity
    path: str
    stamp: t.Any
    name: str  # its zip name
    inits: tuple[str, ...]  # the names of its parents' package inits, in ansible-core's order
    data: bytes


_kept_embeds: BoundedMemo[tuple, _KeptEmbed] = BoundedMemo(256)


def _embed_guards(mc: t.Any, embed: t.Any) -> tuple | None:
    """What locating ``embed``'s file depends on in this process: the code that locates it
    (its type's property, ansible-core's ``ir_files``) and the imported packages it is found
    from (the resource's package and the root its zip name is relative to), with their specs."""
    package = embed.package
    parts = package.split('.')
    root = 'ansible' if parts[0] == 'ansible' else '.'.join(parts[:3]) if parts[0] == 'ansible_collections' else None
    if root is None:
        return None
    modules = (sys.modules.get(package), sys.modules.get(root))
    if any(m is None for m in modules):
        return None
    specs = tuple(getattr(m, '__spec__', None) for m in modules)
    return (type(embed), inspect.getattr_static(type(embed), 'path_context_manager', None), mc.ir_files) + modules + specs


def _kept_embed(mc: t.Any, embed: t.Any) -> _KeptEmbed | None:
    try:
        key = (type(embed), embed.package, embed.resource)
        kept = _kept_embeds.get(key)
    except Exception:  # noqa: BLE001 - an unusual embed: ansible-core's way
        return None
    if kept is None:
        return None
    guards = _embed_guards(mc, embed)
    if (guards is not None and len(guards) == len(kept.guards) and all(a is b for a, b in zip(guards, kept.guards))
            and stamp(kept.path) == kept.stamp):
        return kept
    _kept_embeds.drop(key)
    return None


def _keep_embed(mc: t.Any, embed: t.Any, path: t.Any, path_stamp: t.Any, name: str, data: bytes) -> None:
    """Remember a resource just written, when its file was a plain one stamped (long enough
    ago to be trusted) before it was read."""
    if not isinstance(path, pathlib.Path) or not path.is_absolute() or type(data) is not bytes:
        return
    if path_stamp is None or not stat.S_ISREG(path_stamp[5]) or not trusted([(str(path), path_stamp)]):
        return
    try:
        guards = _embed_guards(mc, embed)
        if guards is None:
            return
        key = (type(embed), embed.package, embed.resource)
    except Exception:  # noqa: BLE001 - not remembered
        return
    inits = tuple(str(parent / '__init__.py') for parent in pathlib.PurePath(name).parents if parent.name)
    _kept_embeds.put(key, _KeptEmbed(guards, str(path), path_stamp, name, inits, data))


def write_embeds(mc: t.Any, embeds: set, zf: t.Any, date_time: t.Any, written: set[str]) -> None:
    """Resources requested through EmbedManager.embed() (2.21+), with their package inits.
    A resource written before from a file still the same is written from memory."""
    roots: dict[str, pathlib.Path] = {}
    for embed in embeds:
        try:
            path_context = embed.path_context_manager
        except ModuleNotFoundError as ex:
            raise mc.AnsibleError('Embed package not found while packaging module.', obj=embed.package) from ex
        # (asked for even when the resource is kept: its package import, errors and warnings
        # are ansible-core's; only entering it, which finds the file, is spared)
        kept = _kept_embed(mc, embed)
        if kept is not None:
            _counters.extra("finder", "kept_embed_hit")
            mc.display.vvvvv(f"Including embed file {kept.name}")
            zf.writestr(mc._make_zinfo(kept.name, date_time, zf=zf), kept.data)
            written.add(kept.name)
            for init in kept.inits:
                if init not in written:
                    mc.display.vvvvv(f"Including parent init file {init}")
                    zf.writestr(mc._make_zinfo(init, date_time, zf=zf), b'')
                    written.add(init)
            continue
        with path_context as path:
            if not path.is_file():
                raise mc.AnsibleError(f'Embed resource {embed.resource!r} not found while packaging module.', obj=embed.resource)
            root = _embed_root(mc, embed.package, roots)
            if root is None:
                raise mc.AnsibleError('Embed must be an ansible/ansible_collections resource.', obj=embed.resource)
            relative = path.relative_to(root)
            mc.display.vvvvv(f"Including embed file {relative}")
            path_stamp = stamp(str(path)) if isinstance(path, pathlib.Path) else None
            data = path.read_bytes()
            zf.writestr(mc._make_zinfo(file_name := str(relative), date_time, zf=zf), data)
            written.add(file_name)
            _keep_embed(mc, embed, path, path_stamp, file_name, data)
            for parent in relative.parents:
                if not parent.name:
                    continue
                init = str(parent / '__init__.py')
                if init not in written:
                    mc.display.vvvvv(f"Including parent init file {init}")
                    zf.writestr(mc._make_zinfo(init, date_time, zf=zf), b'')
                    written.add(init)
