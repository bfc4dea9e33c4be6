"""Collection routing files parsed once per content, for the ``finder`` path.

A walk that reaches another collection's module_utils imports that collection, and the
collection loader then parses its ``meta/runtime.yml`` with PyYAML (through
``_meta_yml_to_dict``, which ansible-core documents as replaceable, passing a content id
"to allow other implementations to cache the output").  In a forked worker that is most of
a remembered walk's time: ~3 ms per collection, paid again by every worker and every run.

So ansible-core's own parser is wrapped: its answer for a given content is left on disk
beside the finder's closure records (``_finder_disk``), as JSON, under a SHA-256 of the
content itself (plus the parsers: ansible-core's version, PyYAML's and whether it has
libyaml), so a changed file is simply another record and never served stale.  Only answers JSON gives back exactly
are left: nothing but dicts with str keys, lists and strs (what the BaseLoader ansible-core
uses makes), and no container reached twice (a YAML alias shares one object between two
places, which JSON would turn into two).  Anything else, any doubt, any error: ansible-core's
own parser, whose exceptions are its own.  Everything else the collection loader does on an
import (the on-load handlers, their version check and messages) is untouched.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import typing as t

from .. import __version__, _counters
from .._activation import Patch
from . import _finder_disk

PATH = "finder"
FORMAT = 1
_PREFIX = "routing-"


def _parser_identity() -> list | None:
    """What the parse depends on beyond the content: this format, ansible-core's parser (its
    version) and PyYAML's (its version, whether it has libyaml)."""
    yaml = sys.modules.get("yaml")  # (ansible-core's own parser imports it: so does the first miss)
    if yaml is None:
        return None
    from ansible.release import __version__ as core_version

    return [FORMAT, __version__, core_version, str(getattr(yaml, "__version__", "")),
            bool(getattr(yaml, "__with_libyaml__", False))]


def _record_path(data: t.Any) -> str | None:
    if type(data) is bytes:
        kind, raw = "bytes", data
    elif type(data) is str:
        kind, raw = "str", data.encode("utf-8", "surrogatepass")
    else:
        return None
    identity = _parser_identity()
    where = _finder_disk.directory()
    if identity is None or where is None:
        return None
    digest = hashlib.sha256(json.dumps(identity + [kind]).encode() + b"\0" + raw).hexdigest()
    return os.path.join(where, f"{_PREFIX}{digest}.json")


def exactly_json(value: t.Any) -> bool:
    """True when ``json.loads(json.dumps(value))`` gives back the same structure: dicts with
    str keys, lists, strs, each container reached once."""
    seen: set[int] = set()
    pending = [value]
    while pending:
        item = pending.pop()
        kind = type(item)
        if kind is str:
            continue
        if kind is dict:
            if not all(type(k) is str for k in item):
                return False
            children = item.values()
        elif kind is list:
            children = item
        else:
            return False
        if id(item) in seen:
            return False
        seen.add(id(item))
        pending.extend(children)
    return True


def _load(path: str) -> t.Any:
    try:
        with open(path, encoding="utf-8") as f:
            record = json.load(f)
    except Exception:  # noqa: BLE001 - unreadable (or not JSON): a miss
        return None
    if type(record) is not dict or record.get("format") != FORMAT or type(record.get("routing")) is not dict:
        return None
    return record["routing"]


def _store(path: str, routing: t.Any) -> None:
    if not exactly_json(routing):
        return
    temp = f"{path}.{os.getpid()}.part"
    try:
        text = json.dumps({"format": FORMAT, "routing": routing})
        if len(text) > _finder_disk.LARGEST_RECORD:
            return
        with open(temp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(temp, path)
    except (OSError, ValueError, RecursionError):
        try:
            os.unlink(temp)
        except OSError:
            pass


def remembering(original: t.Callable[[t.Any, t.Any], t.Any]) -> t.Callable[[t.Any, t.Any], t.Any]:
    """``original`` (ansible-core's ``_meta_yml_to_dict``), its answers kept on disk."""

    def _meta_yml_to_dict(yaml_string_data, content_id):
        if os.environ.get("ANSIBLE_ACCEL_FINDER_DISK", "1") == "0":
            return original(yaml_string_data, content_id)
        try:
            path = _record_path(yaml_string_data)
        except Exception:  # noqa: BLE001 - not describable: parsed the ordinary way
            path = None
        if path is not None:
            routing = _load(path)
            if routing is not None:
                _counters.extra(PATH, "routing_disk_hit")
                return routing
        routing = original(yaml_string_data, content_id)
        if path is not None and type(routing) is dict:
            _store(path, routing)
        return routing

    _meta_yml_to_dict.__doc__ = original.__doc__
    _meta_yml_to_dict.__wrapped_original__ = original
    return _meta_yml_to_dict


def plan() -> list[Patch]:
    """The wrapper in place of ansible-core's own parser, only where that is what the
    collection loader uses (a tool that put its own there keeps it)."""
    try:
        from ansible.utils.collection_loader import _collection_finder, _collection_meta
    except ImportError:
        return []
    original = getattr(_collection_meta, "_meta_yml_to_dict", None)
    if original is None or getattr(_collection_finder, "_meta_yml_to_dict", None) is not original:
        return []
    return [Patch(_collection_finder, "_meta_yml_to_dict", remembering(original))]
