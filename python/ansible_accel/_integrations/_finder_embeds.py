"""A module's embeds (2.21+ ``EmbedManager.embed()`` resources), remembered with its walk, for
the ``finder`` path.

For a module importing `embed` support, ansible-core's own ``ModuleDepFinder`` must compile
and walk it to collect its ``embeds``: the costliest part of such a module's walk, in every
fresh process.  The set is a pure function of the module's content, name and origin (with
ansible-core's own code, which the closure memo guards), so it is remembered with the walk
as plain data: each resource's package and name and the position of its ``embed()`` call.

It is rebuilt exactly as ansible-core builds it: the same ``EmbeddedResource`` objects, each
string tagged with the module's origin at the call's line and column, added to a set in the
order the finder added them (the order of the calls in the module, which the positions give;
a repeated resource keeps its first call, as the set does), then copied as
``recursive_finder`` copies it, so the set iterates in ansible-core's order.
"""

from __future__ import annotations

import typing as t

# (the module's origin as (path, description, line_num, col_num) or None,
#  ((package, resource, line_num, col_num), ...) in the finder's order)
Recorded = tuple


def _origin_fields(origin: t.Any) -> tuple | None:
    if origin is None:
        return None
    fields = (origin.path, origin.description, origin.line_num, origin.col_num)
    if not all(f is None or type(f) in (str, int) for f in fields):
        raise TypeError("unusual origin")
    return fields


def _plain(value: t.Any) -> str:
    if not isinstance(value, str):
        raise TypeError("not a str")
    return str.__str__(value)  # the text without its tags


def record(mc: t.Any, module_data: t.Any, embeds: t.Any) -> Recorded | None:
    """The module's ``embeds`` (its finder's set) as data, or None when they are not plain:
    each an ``EmbeddedResource`` whose two strings carry only the module's origin at one
    call's position."""
    try:
        from ansible.module_utils._internal._datatag import AnsibleTagHelper

        origin = mc.Origin.get_tag(module_data)
        base = origin or mc.Origin.UNKNOWN
        entries = []
        for embed in embeds:
            if type(embed) is not mc.EmbeddedResource:
                return None
            package, resource = embed.package, embed.resource
            at = mc.Origin.get_tag(package)
            if at is None or mc.Origin.get_tag(resource) != at or len(AnsibleTagHelper.tags(package)) != 1 \
                    or len(AnsibleTagHelper.tags(resource)) != 1:
                return None
            if type(at.line_num) is not int or type(at.col_num) is not int or at.replace(line_num=base.line_num,
                                                                                          col_num=base.col_num) != base:
                return None
            entries.append((_plain(package), _plain(resource), at.line_num, at.col_num))
        positions = [(line, col) for _, _, line, col in entries]
        if len(set(positions)) != len(positions):
            return None
        entries.sort(key=lambda e: (e[2], e[3]))
        return _origin_fields(origin), tuple(entries)
    except Exception:  # noqa: BLE001 - not describable: not remembered with the walk
        return None


def rebuild(mc: t.Any, module_data: t.Any, recorded: t.Any) -> set | None:
    """The set ``recursive_finder`` works on (its copy of the finder's), or None when the
    module's origin is not the recorded one."""
    try:
        origin_fields, entries = recorded
        origin = mc.Origin.get_tag(module_data)
        if _origin_fields(origin) != (None if origin_fields is None else tuple(origin_fields)):
            return None
        base = origin or mc.Origin.UNKNOWN
        found = set()
        for package, resource, line, col in entries:
            if not (type(package) is str and type(resource) is str and type(line) is int and type(col) is int):
                return None
            at = base.replace(line_num=line, col_num=col)
            found.add(mc.EmbeddedResource(at.tag(package), at.tag(resource)))
        return found.copy()
    except Exception:  # noqa: BLE001 - the finder answers instead
        return None
