"""Run as a script: several threads make a fresh process's first argspec calls at the same
moment, the interpreter switching threads as often as it can.  A native once-only initialiser
that runs Python code (and so may give the GIL away) would leave the others waiting on it while
they hold the GIL: a deadlock, which the parent test's timeout turns into a failure.

Prints ``ok <native calls>`` when every answer was right."""

from __future__ import annotations

import sys
import threading

sys.setswitchinterval(1e-6)

import ansible_accel  # noqa: E402
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator  # noqa: E402

THREADS = 4
ROUNDS = 30


def work(n: int, barrier: threading.Barrier, wrong: list) -> None:
    barrier.wait()
    for i in range(ROUNDS):
        validator = ArgumentSpecValidator({"name": {"type": "str", "required": True}, "count": {"type": "int", "default": n}})
        for _ in range(2):  # the second call reuses the compiled spec
            result = validator.validate({"name": "x", "count": str(i)})
            if result.error_messages or result.validated_parameters != {"name": "x", "count": i}:
                wrong.append((n, i, result.error_messages))


def main() -> int:
    ansible_accel.install()
    barrier = threading.Barrier(THREADS)
    wrong: list = []
    threads = [threading.Thread(target=work, args=(n, barrier, wrong)) for n in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if wrong:
        print(f"wrong answers: {wrong[:3]}")
        return 1
    print(f"ok {ansible_accel.status()['argspec']['native']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
