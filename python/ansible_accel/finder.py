"""Native import scanning: what ansible-core's ``ModuleDepFinder`` would find in a file.

``scan_imports(source, module_fqn, is_pkg_init=False)`` returns an ``ImportScan`` with the
``submodules`` and ``optional_imports`` sets ModuleDepFinder would build (frozensets of name
tuples), or raises ``ScanFallback`` when the file must go through ansible-core's own
compile() (a syntax error, syntax newer than this Python, a non-UTF-8 coding declaration,
bytes that are not UTF-8, a compile() warning...), so every error stays ansible-core's.
"""

from __future__ import annotations

import typing as t

from . import _counters, _native

__all__ = ["EVERY_LISTED_NODE", "POSITIONED_NODES", "ImportScan", "ScanFallback", "default_reach", "scan_imports"]

# How far ModuleDepFinder reaches: 2.19/2.20 descend into every AST node held in a list
# (imports inside `match` cases count); 2.21+ only into nodes with a source position (they
# do not).
EVERY_LISTED_NODE = "every_listed_node"
POSITIONED_NODES = "positioned_nodes"

NameParts = tuple[str, ...]
_PATH = "finder"


class ImportScan(t.NamedTuple):
    """What :func:`scan_imports` found in one file."""

    submodules: frozenset[NameParts]
    optional_imports: frozenset[NameParts]
    # A top-level import of ansible-core's `embed` support (2.21+ then analyses assignments).
    embed_import: bool


class ScanFallback(ValueError):
    """The file must be scanned by ansible-core's own code; ``reason`` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"not scanned natively: {reason}")
        self.reason = reason


_reach: str | None = None


def default_reach() -> str:
    """The reach of the installed ansible-core's ModuleDepFinder (looked up once: the
    ansible-core a process imported does not change under it)."""
    global _reach
    if _reach is None:
        from ._activation import core_minor

        _reach = EVERY_LISTED_NODE if core_minor() < (2, 21) else POSITIONED_NODES
    return _reach


def scan_imports(source: bytes | str, module_fqn: str, is_pkg_init: bool = False, *, reach: str | None = None) -> ImportScan:
    """What ansible-core's ``ModuleDepFinder`` finds in one Python file, parsed for the running
    Python without holding the GIL.

    ``source``: the file's bytes (or text); ``module_fqn``: its dotted name (such as
    ``ansible_collections.ns.coll.plugins.modules.thing``), against which relative imports
    resolve; ``is_pkg_init``: whether the file is a package's ``__init__.py``; ``reach``:
    ``EVERY_LISTED_NODE`` (ansible-core 2.19/2.20) or ``POSITIONED_NODES`` (2.21+), None for
    the installed ansible-core's (:func:`default_reach`).

    Returns an :class:`ImportScan`: ``submodules`` and ``optional_imports`` are the sets
    ``ModuleDepFinder(...).submodules`` and ``.optional_imports`` hold (as frozensets of name
    tuples, such as ``("ansible", "module_utils", "basic", "AnsibleModule")``);
    ``embed_import`` whether the file imports ansible-core's ``embed`` support at top level.

    Raises ``TypeError`` for a ``source`` that is not bytes or str or a ``module_fqn`` that is
    not a str, ``ValueError`` for an unknown ``reach``, and :class:`ScanFallback` (a
    ``ValueError``; ``reason`` says why) for a file ansible-core's own ``compile()`` must
    see: a syntax error, syntax newer than this Python, a non-UTF-8 coding declaration,
    bytes that are not UTF-8, a warning.  The caller then runs ansible-core's
    ``ModuleDepFinder`` itself, which raises or warns as it does.
    """
    if not isinstance(module_fqn, str):
        raise TypeError(f"module_fqn must be str, not {type(module_fqn).__name__}")
    result = _native.scan_imports(source, module_fqn, bool(is_pkg_init), reach or _reach or default_reach())
    if type(result) is str:
        _counters.fallback(_PATH, f"scan_imports: {result}")
        raise ScanFallback(result)
    _counters.native(_PATH)
    return _make_scan(result)


_make_scan = ImportScan._make
