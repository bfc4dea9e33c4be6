"""Registered-secret masking: ansible-core 2.22's pure-Python masker against the native one.

Each row builds the same registry in both maskers (fresh instances, so the shared registry of
the process is untouched) and checks both gave the same result.  Only on 2.22: earlier
ansible-core versions have no masker to compare with.
"""

from __future__ import annotations

import json
import random
import string

from ._harness import Row, compare


def _secrets_for(count: int, rnd: random.Random) -> list[str]:
    alphabet = string.ascii_letters + string.digits + "-_!@#"
    return ["".join(rnd.choices(alphabet, k=rnd.randint(8, 32))) for _ in range(count)]


def _log_text(size: int, rnd: random.Random, present: list[str]) -> str:
    """Log- and JSON-like text of about ``size`` characters, with ``present`` sprinkled in."""
    lines = []
    total = 0
    n = 0
    while total < size:
        n += 1
        if n % 3 == 0:
            line = json.dumps({"changed": False, "rc": 0, "stdout": f"line {n} of output", "item": {"name": f"pkg{n}", "state": "present"}})
        else:
            line = f"2026-01-01 12:00:{n % 60:02d} host{n % 17} ok: [web{n % 9}] => task {n} finished in {rnd.random():.3f}s"
        if present and n % 50 == 0:
            line += " token=" + rnd.choice(present)
        lines.append(line)
        total += len(line) + 1
    return "\n".join(lines)[:size]


def _pair(registered: list[str]):
    from ansible.module_utils._internal import _secrets

    from ansible_accel import secrets

    reference, native = _secrets.SecretMasker(), secrets.SecretMasker()
    reference.register_secret_texts(registered)
    native.register_secret_texts(registered)
    return reference, native


def _mask_string_rows(quick: bool, rnd: random.Random) -> list[Row]:
    rows = []
    size = 100_000 if quick else 1_000_000
    for count in (10, 100, 1000, 10000):
        registered = _secrets_for(count, rnd)
        reference, native = _pair(registered)
        for label, present in (("none present", []), ("some present", registered[:10])):
            text = _log_text(size, rnd, present)
            native.mask_string(text)  # the first search after registering builds the automaton
            rows.append(compare(
                "masking", "mask_string", f"{len(text) // 1000} KB, {count} secrets, {label}",
                lambda: reference.mask_string(text), lambda: native.mask_string(text),
                repeat=3 if quick else 5,
            ))
    return rows


def _mask_object_rows(quick: bool, rnd: random.Random) -> list[Row]:
    from ansible.module_utils._internal import _secrets_object

    from ansible_accel import secrets

    registered = _secrets_for(100, rnd)
    reference, native = _pair(registered)
    stdout = _log_text(10_000 if quick else 100_000, rnd, registered[:5])
    loop = [
        {"item": f"item{i}", "changed": i % 2 == 0, "rc": 0, "cmd": ["/bin/run", f"--n={i}"], "stdout": stdout,
         "stdout_lines": stdout.splitlines(), "stderr": "", "stderr_lines": [], "invocation": {"module_args": {"password": registered[i % 100], "x": i}}}
        for i in range(10 if quick else 50)
    ]
    result = {"changed": True, "msg": "All items completed", "results": loop}
    lines_keys = {"stdout": "stdout_lines", "stderr": "stderr_lines"}

    def python():
        with reference._lock:
            return _secrets_object._Walker(reference, "$REDACTED$", lines_keys).mask(result)

    return [compare(
        "masking", "mask_object", f"loop of {len(loop)}, {len(stdout) // 1000} KB stdout each",
        python, lambda: secrets.mask_object_with(native, result, "$REDACTED$", lines_keys),
        repeat=3 if quick else 5,
    )]


def _registration_rows(quick: bool, rnd: random.Random) -> list[Row]:
    from ansible.module_utils._internal import _secrets

    from ansible_accel import secrets

    count = 1000 if quick else 10000
    registered = _secrets_for(count, rnd)
    message = 'TASK [deploy : copy config] ok: [web1] => {"changed": false, "dest": "/etc/app.conf", "mode": "0644"}'

    def at_once(factory):
        masker = factory()
        masker.register_secret_texts(registered)
        return masker.mask_string(message + registered[-1])

    def one_by_one(factory):
        masker = factory()
        out = []
        for secret in registered:
            masker.register_secret_text(secret)
            out.append(masker.mask_string(message))
        out.append(masker.mask_string(message + registered[0] + registered[-1]))
        return out

    return [
        compare("masking", "register at once + 1 mask", f"{count} secrets",
                lambda: at_once(_secrets.SecretMasker), lambda: at_once(secrets.SecretMasker), repeat=3),
        compare("masking", "register 1 + mask, repeated", f"{count} secrets, {len(message)}-char message",
                lambda: one_by_one(_secrets.SecretMasker), lambda: one_by_one(secrets.SecretMasker), repeat=3),
    ]


def run(quick: bool) -> list[Row]:
    from ansible_accel import _activation

    if _activation.core_minor() != (2, 22):
        print("masking: ansible-core before 2.22 has no secret masker to compare with; skipped")
        return []
    rnd = random.Random(2022)
    return _mask_string_rows(quick, rnd) + _mask_object_rows(quick, rnd) + _registration_rows(quick, rnd)
