"""Run as a script (a fresh interpreter, so a stack overflow would only kill it):
``python _deep_and_cyclic.py CASE...`` prints one line per case, ``CASE reference=<outcome> native=<outcome>``,
for ansible-core's function and ours on 100,000-deep or cyclic structures."""

from __future__ import annotations

import resource
import signal
import sys

DEPTH = 100_000


def deep_list():
    value = leaf = ["pw here"]
    for _ in range(DEPTH):
        value = [value, "pw"]
    return value, leaf


def deep_dict():
    value = {"k": "pw"}
    for i in range(DEPTH):
        value = {"k%d" % (i % 3): value, "pw": "v"}
    return value, None


def cyclic():
    value = {"a": ["pw"], "pw": "x"}
    value["a"].append(value)
    return value, None


def outcome(fn, *args):
    try:
        result = fn(*args)
    except BaseException as ex:  # noqa: BLE001 - reported
        return f"{type(ex).__name__}:{str(ex)[:60]}", None
    return "returned", result


def same(a, b) -> bool:
    """Equal values of the same types, compared without recursion."""
    stack = [(a, b)]
    while stack:
        x, y = stack.pop()
        if type(x) is not type(y):
            return False
        if isinstance(x, dict):
            if list(x) != list(y):
                return False
            stack.extend((x[k], y[k]) for k in x)
        elif isinstance(x, list):
            if len(x) != len(y):
                return False
            stack.extend(zip(x, y))
        elif x != y:
            return False
    return True


class Interrupted(Exception):
    pass


def interrupt(*_):
    raise Interrupted("stopped")


def timed(fn, *args, seconds=120.0):
    """The outcome of fn(*args), interrupted after ``seconds`` (ansible-core walks a cycle forever)."""
    signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return outcome(fn, *args)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def main(case: str) -> None:
    # An endless walk grows its queue: a memory cap turns that into MemoryError, not a dead box.
    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
    engine, shape = case.split(":")
    value, _ = {"deep_list": deep_list, "deep_dict": deep_dict, "cyclic": cyclic}[shape]()
    if engine == "mask_object":
        from ansible.module_utils._internal import _secrets, _secrets_object

        from ansible_accel import masking

        _secrets._secret_masker.register_secret_text("pw")
        ours = masking.SecretMasker()
        ours.register_secret_text("pw")
        reference = timed(_secrets_object.mask_object, value)
        native = timed(masking._mask_object_with, ours, value, "$REDACTED$", None)
    else:
        from ansible.module_utils.common import parameters

        from ansible_accel import no_log

        fn = {"remove_values": "remove_values", "sanitize_keys": "sanitize_keys"}[engine]
        seconds = 1.0 if shape == "cyclic" else 120.0
        reference = timed(getattr(parameters, fn), value, ["pw"], seconds=seconds)
        native = timed(getattr(no_log, fn), value, ["pw"], seconds=seconds)
    equal = reference[0] == native[0] == "returned" and same(reference[1], native[1])
    print(f"{case} reference={reference[0]} native={native[0]}" + (" results=equal" if equal else ""), flush=True)


if __name__ == "__main__":
    for case in sys.argv[1:]:
        main(case)
