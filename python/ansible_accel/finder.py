"""Native import scanning: what ansible-core's ``ModuleDepFinder`` would find in a file.

``scan_imports(source, module_fqn, is_pkg_init=False)`` returns an ``ImportScan`` with the
``submodules`` and ``optional_imports`` sets ModuleDepFinder would build (frozensets of name
tuples), or raises ``ScanFallback`` when the file must go through ansible-core's own
compile() (a syntax error, syntax newer than this Python, a non-UTF-8 coding declaration,
bytes that are not UTF-8, a compile() warning...), so every error stays ansible-core's.
"""

from __future__ import annotations

import typing as t

from . import _native

__all__ = ["EVERY_LISTED_NODE", "POSITIONED_NODES", "ImportScan", "ScanFallback", "default_reach", "scan_imports"]

# How far ModuleDepFinder reaches: 2.19/2.20 descend into every AST node held in a list
# (imports inside `match` cases count); 2.21+ only into nodes with a source position (they
# do not).
EVERY_LISTED_NODE = "every_listed_node"
POSITIONED_NODES = "positioned_nodes"

NameParts = tuple[str, ...]


class ImportScan(t.NamedTuple):
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
    """What ``ModuleDepFinder(module_fqn, source, is_pkg_init)`` would find, parsed for the
    running Python, without holding the GIL while parsing."""
    if not isinstance(module_fqn, str):
        raise TypeError(f"module_fqn must be str, not {type(module_fqn).__name__}")
    result = _native.scan_imports(source, module_fqn, bool(is_pkg_init), reach or _reach or default_reach())
    if type(result) is str:
        raise ScanFallback(result)
    return _make_scan(result)


_make_scan = ImportScan._make
