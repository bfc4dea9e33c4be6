import typing as t

PATH: str

def remove_values(value: t.Any, no_log_strings: t.Iterable[t.Any]) -> t.Any: ...
def sanitize_keys(obj: t.Any, no_log_strings: t.Iterable[t.Any], ignore_keys: t.Container[t.Any] = ...) -> t.Any: ...
def heuristic_log_sanitize(data: t.Any, no_log_values: t.Iterable[t.Any] | None = None) -> str: ...

original_remove_values: t.Callable[[t.Any, t.Iterable[t.Any]], t.Any]
original_sanitize_keys: t.Callable[..., t.Any]
original_heuristic_log_sanitize: t.Callable[..., str]
