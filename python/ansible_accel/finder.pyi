import typing as t

EVERY_LISTED_NODE: t.Final[str]
POSITIONED_NODES: t.Final[str]

NameParts = tuple[str, ...]

class ImportScan(t.NamedTuple):
    submodules: frozenset[NameParts]
    optional_imports: frozenset[NameParts]
    embed_import: bool

class ScanFallback(ValueError):
    reason: str
    def __init__(self, reason: str) -> None: ...

def default_reach() -> str: ...
def scan_imports(
    source: bytes | str, module_fqn: str, is_pkg_init: bool = False, *, reach: str | None = None
) -> ImportScan: ...
