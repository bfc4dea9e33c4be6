"""no_log scrubbing (ansible-core 2.19–2.21): ansible-core's functions against the native ones."""

from __future__ import annotations

import random

from ._harness import Row, compare

GROUP = "no_log"


def _secrets(n: int) -> list[str]:
    rng = random.Random(n)
    return [f"s3cr3t-{rng.getrandbits(48):012x}" for _ in range(n)]


def _result(size: int, secrets: list[str]) -> dict:
    """A module result of about ``size`` bytes: stdout with its lines, and a nested payload."""
    rng = random.Random(size)
    lines = []
    total = 0
    while total < size // 2:
        word = rng.choice(secrets) if rng.random() < 0.02 else "value"
        line = f"{total:08d} INFO task ran fine with {word} and some ordinary text é中"
        lines.append(line)
        total += len(line) + 1
    stdout = "\n".join(lines)
    items = [
        {"name": f"item{i}", "state": "present", "id": i, "ratio": i / 7, "ok": True, "tags": ["a", "b", f"t{i}"]}
        for i in range(size // 400)
    ]
    return {
        "changed": True,
        "rc": 0,
        "stdout": stdout,
        "stdout_lines": stdout.splitlines(),
        "results": items,
        "invocation": {"module_args": {"password": secrets[0], "user": "admin", "port": 8443}},
    }


def _log_text(size: int) -> str:
    rng = random.Random(size)
    parts = []
    total = 0
    while total < size:
        if rng.random() < 0.05:
            part = f"fetch https://user{total}:pa55{total}@repo.example.com/path ok\n"
        elif rng.random() < 0.05:
            part = f"mail sent to someone{total}@example.com at 12:00\n"
        else:
            part = f"{total:08d} plain log line with nothing special in it\n"
        parts.append(part)
        total += len(part)
    return "".join(parts)


def _with_native_remove_values(basic, call):
    """heuristic_log_sanitize calls ``basic.remove_values``: native, as after install()."""
    from ansible_accel import no_log

    basic.remove_values = no_log.remove_values
    try:
        return call()
    finally:
        basic.remove_values = no_log._original_remove_values


def run(quick: bool) -> list[Row]:
    from ansible_accel._activation import core_minor

    if core_minor() >= (2, 22):
        print("no_log: not applicable on ansible-core 2.22 (the functions are deprecated and not native there)")
        return []
    from ansible.module_utils import basic
    from ansible.module_utils.common import parameters

    from ansible_accel import no_log

    size = 100_000 if quick else 1_000_000
    repeat = 3 if quick else 5
    # Several calls per timing: a single short native call right after a long Python one is
    # billed for that burst (its scheduler slice is used up and its caches refilled by other
    # work, so whatever runs next is preempted or runs cold; the cyclic GC is off while timing).
    number = 3
    rows = []
    for count in (1, 10, 100):
        secrets = _secrets(count)
        result = _result(size, secrets)
        values = set(secrets)
        rows.append(compare(
            GROUP, "remove_values", f"{size // 1000} KB result, {count} values",
            lambda: parameters.remove_values(result, values),
            lambda: no_log.remove_values(result, values),
            repeat=repeat,
            number=number,
        ))
    secrets = _secrets(10)
    result = _result(size, secrets)
    rows.append(compare(
        GROUP, "sanitize_keys", f"{size // 1000} KB result, 10 values",
        lambda: parameters.sanitize_keys(result, set(secrets)),
        lambda: no_log.sanitize_keys(result, set(secrets)),
        repeat=repeat,
    ))
    text = _log_text(size)
    rows.append(compare(
        GROUP, "heuristic_log_sanitize", f"{size // 1000} KB log text",
        lambda: basic.heuristic_log_sanitize(text),
        lambda: no_log.heuristic_log_sanitize(text),
        repeat=repeat,
    ))
    rows.append(compare(
        GROUP, "heuristic_log_sanitize", f"{size // 1000} KB log text, 10 values",
        lambda: basic.heuristic_log_sanitize(text, set(secrets)),
        lambda: _with_native_remove_values(basic, lambda: no_log.heuristic_log_sanitize(text, set(secrets))),
        repeat=repeat,
    ))
    return rows
