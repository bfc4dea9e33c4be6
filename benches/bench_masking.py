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

    from ansible_accel import masking

    reference, native = _secrets.SecretMasker(), masking.SecretMasker()
    reference.register_secret_texts(registered)
    native.register_secret_texts(registered)
    return reference, native


def _merge_and_replace(text: str, spans: list[tuple[int, int]], placeholder: str = "$REDACTED$") -> str:
    """The masking semantics over any span finder: merge overlapping/touching, replace."""
    if not spans:
        return text
    spans.sort()
    parts, pos, run_start, run_end = [], 0, *spans[0]
    for start, end in spans[1:]:
        if start > run_end:
            parts += [text[pos:run_start], placeholder]
            pos, run_start, run_end = run_end, start, end
        elif end > run_end:
            run_end = end
    parts += [text[pos:run_start], placeholder, text[run_end:]]
    return "".join(parts)


def _competitors(forms: list[str]) -> dict:
    """The same masking built on other matchers: {name: mask(text)}; those not installed are left out."""
    import re

    found = {}
    try:
        import ahocorasick_rs
    except ImportError:
        pass
    else:
        rs = ahocorasick_rs.AhoCorasick(forms, matchkind=ahocorasick_rs.MatchKind.Standard)
        found["ahocorasick_rs"] = lambda text: _merge_and_replace(
            text, [(s, e) for _, s, e in rs.find_matches_as_indexes(text, overlapping=True)])
    try:
        import ahocorasick
    except ImportError:
        pass
    else:
        automaton = ahocorasick.Automaton()
        for form in forms:
            automaton.add_word(form, len(form))
        automaton.make_automaton()
        found["pyahocorasick"] = lambda text: _merge_and_replace(
            text, [(end + 1 - length, end + 1) for end, length in automaton.iter(text)])
    # At each position the longest form covers the shorter ones, so a lookahead alternation
    # (longest first) gives the same union of spans.
    pattern = re.compile("(?=(" + "|".join(re.escape(f) for f in sorted(forms, key=len, reverse=True)) + "))")
    found["re alternation"] = lambda text: _merge_and_replace(
        text, [(m.start(), m.start() + len(m.group(1))) for m in pattern.finditer(text)])
    return found


# Calls per timing in the mask_string rows.  A single sub-millisecond call timed right after a
# 100+ ms pure-Python call is billed for that burst: the process has used up its scheduler slice
# and its caches were refilled by other work, so whatever runs next is preempted or runs cold.
# Measured: the native search's own CPU samples (perf) are the same right after the Python
# masker as between native calls, it makes no system call and takes no page fault, and the same
# extra time lands on CPython's own `bytes.count` over the text, or on a masking call after a
# plain busy loop.  Timing consecutive calls (as timeit does) gives each side its per-call cost.
CALLS_PER_TIMING = 5


def _mask_string_rows(quick: bool, rnd: random.Random) -> list[Row]:
    rows = []
    size = 100_000 if quick else 1_000_000
    for count in (10, 100, 1000, 10000):
        registered = _secrets_for(count, rnd)
        reference, native = _pair(registered)
        for label, present in (("none present", []), ("some present", registered[:10])):
            text = _log_text(size, rnd, present)
            native.mask_string(text)  # the first search after registering builds the automaton
            inputs = f"{len(text) // 1000} KB, {count} secrets, {label}"
            rows.append(compare(
                "masking", "mask_string", inputs,
                lambda: reference.mask_string(text), lambda: native.mask_string(text),
                repeat=3 if quick else 5, number=CALLS_PER_TIMING,
            ))
            for name, other in _competitors(sorted(reference._forms)).items():
                if name == "re alternation" and count * len(text) > 100_000_000:
                    continue  # tens of seconds per call: not a practical alternative at this size
                rows.append(compare(
                    "masking", f"mask_string vs {name}", inputs,
                    lambda: other(text), lambda: native.mask_string(text), repeat=3,
                    number=CALLS_PER_TIMING,
                ))
    return rows


def _mask_object_rows(quick: bool, rnd: random.Random) -> list[Row]:
    from ansible.module_utils._internal import _secrets_object

    from ansible_accel import masking

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
        python, lambda: masking._mask_object_with(native, result, "$REDACTED$", lines_keys),
        repeat=3 if quick else 5,
    )]


def _registration_rows(quick: bool, rnd: random.Random) -> list[Row]:
    from ansible.module_utils._internal import _secrets

    from ansible_accel import masking

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
                lambda: at_once(_secrets.SecretMasker), lambda: at_once(masking.SecretMasker), repeat=3),
        compare("masking", "register 1 + mask, repeated", f"{count} secrets, {len(message)}-char message",
                lambda: one_by_one(_secrets.SecretMasker), lambda: one_by_one(masking.SecretMasker), repeat=3),
    ]


def run(quick: bool) -> list[Row]:
    from ansible_accel import _activation

    if _activation.core_minor() != (2, 22):
        print("masking: ansible-core before 2.22 has no secret masker to compare with; skipped")
        return []
    rnd = random.Random(2022)
    return _mask_string_rows(quick, rnd) + _mask_object_rows(quick, rnd) + _registration_rows(quick, rnd)
