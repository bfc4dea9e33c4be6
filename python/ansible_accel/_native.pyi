from typing import Any, Callable

__version__: str

def release_free_memory() -> None:
    """Hand the extension allocator's freed memory back to the system now (memory tests)."""

def runner_client_binary() -> bytes:
    """The ``ansible-accel-run`` executable's bytes (empty off Linux on x86_64 or aarch64)."""

class SecretMatcher:
    """2.22's matcher interface on the native engine (forms are added as given)."""
    def __init__(self) -> None: ...
    def add(self, word: str, /) -> None: ...
    def spans(self, value: str, /) -> list[tuple[int, int]]: ...
    def mask(self, value: str, placeholder: str, /) -> str: ...
    def __contains__(self, word: str) -> bool: ...
    def __len__(self) -> int: ...

class SecretRegistry:
    """Registered secrets (stripped, de-duplicated) with their JSON forms and a matcher."""
    def __init__(self) -> None: ...
    def register(self, secrets: list[str], /) -> list[str]: ...
    def mask(self, value: str, placeholder: str, /) -> str: ...
    def spans(self, value: str, /) -> list[tuple[int, int]]: ...
    def secrets_in_json(self, value: str, /) -> list[str]: ...
    def is_empty(self) -> bool: ...
    def __len__(self) -> int: ...

class MaskTooDeep(Exception):
    """The structure is deeper than ``mask_object_walk`` was allowed to go."""

def mask_object_walk(
    engine: SecretRegistry | SecretMatcher,
    placeholder: str,
    lines_items: tuple[tuple[Any, Any], ...],
    tracked_keys: frozenset[Any],
    delegate: Callable[[Any, int], Any],
    tag_copy: Callable[[Any, Any], Any],
    max_depth: int,
    value: Any,
    depth: int,
    /,
) -> Any:
    """2.22's mask_object walk of ``value`` at ``depth``: builtin types natively, others by ``delegate``."""

# --- no_log (ansible_accel.no_log) ---------------------------------------------------------

class NoLogMatcher:
    """The no_log values of one call, compiled for ansible-core's replace chain."""
    def replace_all(self, text: str, /) -> str: ...

# Each no_log entry point answers its value (never a ``str``) or the reason (a ``str``).
def no_log_matcher(values: list[str], /) -> NoLogMatcher | str: ...

class NoLogContext:
    """ansible-core's per-value helpers and ABCs, handed to the native walks."""
    def __init__(
        self,
        remove_values_conditions: object,
        sanitize_keys_conditions: object,
        mapping: type,
        mutable_sequence: type,
        mutable_set: type,
        unpack_pair: object,
    ) -> None: ...

def heuristic_scan_text(data: str, /) -> tuple[str | None] | str: ...
def remove_values_walk(*args: object) -> object: ...
def sanitize_keys_walk(*args: object) -> object: ...

# --- finder (ansible_accel.finder) ---------------------------------------------------------

def scan_imports(
    source: bytes | str, module_fqn: str, is_pkg_init: bool, reach: str
) -> tuple[frozenset[tuple[str, ...]], frozenset[tuple[str, ...]], bool] | str: ...

# (st_dev, st_ino, st_size, st_mtime_ns, st_ctime_ns, st_mode), or None: not there
_Stamp = tuple[int, int, int, int, int, int] | None

class FinderStamps:
    def __init__(self, stamps: list[tuple[str | bytes, _Stamp]]) -> None: ...
    def unchanged(self) -> bool: ...
    @staticmethod
    def stamp_of(path: str | bytes) -> _Stamp: ...
    def __len__(self) -> int: ...

# --- payload (ansible_accel.payload) -------------------------------------------------------

# The calls that can leave the archive to zipfile answer their value or the reason (a ``str``).
def payload_build_zip(
    entries: object, date_time: tuple[int, ...], compression: int, cache_dir: str | None = None
) -> bytes | str: ...
def payload_deflate(data: bytes, /) -> bytes: ...

class PayloadInternalError(RuntimeError):
    """An internal failure of the zip writer where nothing can be left to zipfile."""

def payload_cache_stats() -> tuple[int, int, int, int]: ...
def payload_cache_clear() -> None: ...
def payload_warm_cache(datas: list[bytes], cache_dir: str | None = None) -> int: ...

class PayloadZipWriter:
    def __init__(
        self, zip64_limit: int, file_count_limit: int, splitting_extra: bool, cache_dir: str | None = None
    ) -> None: ...
    def add(self, *args: object, **kwargs: object) -> tuple[int, ...] | str: ...
    def add_many(self, entries: list[tuple[object, ...]], /) -> tuple[list[tuple[int, ...]], BaseException | None] | str: ...
    def block(self) -> PayloadBlock | None: ...
    def add_block(self, block: PayloadBlock, date_time: tuple[int, ...], /) -> list[tuple[int, ...]] | str | None: ...
    def finish(self, comment: bytes) -> bytes | str: ...

class PayloadBlock:
    """Entries kept from a PayloadZipWriter (``block()``), to be written again by ``add_block``."""
    @property
    def nbytes(self) -> int: ...
    def __len__(self) -> int: ...

# --- argspec (ansible_accel.argspec) -------------------------------------------------------

def argspec_compile(
    argument_spec: dict[str, object],
    mutually_exclusive: object,
    required_together: object,
    required_one_of: object,
    required_if: object,
    required_by: object,
    booleans_text: object,
    type_validators: object,
    no_log_default_strings: bool,
) -> CompiledArgSpec | str: ...

def argspec_tagged_types(types: list[type], /) -> bool: ...
def argspec_take_native_count() -> int: ...
def argspec_quick_spec_check() -> bool: ...
def argspec_kept_count() -> int: ...

class ArgspecFastPath:
    """ArgumentSpecValidator.validate for the common call, result and side effects included."""
    def __init__(
        self,
        result_class: type,
        multiple: type,
        errors_module: object,
        parameters_module: object,
        validators_then: dict[str, object],
        secrets: object | None,
        booleans_text: str,
        no_log_default_strings: bool,
        direct: bool,
        fallback_no_log_strings: bool,
    ) -> None: ...
    def trust_set_fallbacks(self, function: object, /) -> None: ...
    def compiled(self, validator: object, /) -> CompiledArgSpec | str: ...
    def validate(
        self,
        parameters: object,
        argument_spec: object,
        mutually_exclusive: object,
        required_together: object,
        required_one_of: object,
        required_if: object,
        required_by: object,
        validators: object,
        set_fallbacks: object,
        /,
    ) -> object: ...

class CompiledArgSpec:
    """A compiled argument spec: validates many parameter dicts."""
    def tagged(self) -> bool: ...
    def has_callables(self) -> bool: ...
    def validate(self, parameters: dict[str, object], /) -> object: ...
    def aliases(self) -> list[tuple[str, str]]: ...
    def has_fallbacks(self) -> bool: ...
    def option_names(self) -> list[str]: ...
