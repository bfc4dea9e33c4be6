"""Run as a script: ``os.fork()`` while another thread holds an engine's lock or is busy in its
cache, many times; each child must use the engine and exit 0 within a few seconds.

Usage: python _fork_worker.py ENGINE FORKS.  Exit status 0 when every child worked; prints
the failure otherwise.  The parent test runs this under a timeout, so a deadlock fails."""

from __future__ import annotations

import os
import sys
import threading
import time
import zipfile

import ansible_accel
from ansible_accel import _activation, masking, no_log, payload

CHILD_DEADLINE = 20.0
TEXT = "user password hunter2 " * 20000  # big enough for the GIL-free scan


def masking_busy(stop: threading.Event) -> None:
    masker = masking._shared_masker()
    i = 0
    while not stop.is_set():
        with masker._lock:  # held across a short sleep: fork must wait for it, not inherit it held
            time.sleep(0.001)
        masking.register_secret(f"hunter{i % 50}")
        masking.mask_secrets(TEXT)
        i += 1


def masking_child() -> bool:
    masking.register_secrets(["child-secret", "hunter2"])
    return masking.mask_secrets("x child-secret hunter2 y") == "x $REDACTED$ $REDACTED$ y" and "hunter2" not in masking.mask_secrets(TEXT)


def finder_busy(stop: threading.Event) -> None:
    from ansible_accel._integrations import _finder_scan, finder as integration

    while not stop.is_set():
        with _finder_scan._cache_lock:
            time.sleep(0.002)
        integration.clear_cache()


def finder_child() -> bool:
    from ansible_accel._integrations import finder as integration

    walk = integration._active_walk
    scan = integration._scan(walk, "ansible.modules.m", b"import ansible.module_utils.basic\n", False)
    integration.clear_cache()
    return scan is not None and ("ansible", "module_utils", "basic") in scan.submodules


def _validator():
    from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

    return ArgumentSpecValidator({"name": {"type": "str", "required": True}, "count": {"type": "int", "default": 1}})


def argspec_busy(stop: threading.Event) -> None:
    while not stop.is_set():
        _validator().validate({"name": "x", "count": "3"})  # compiles into the cache each time


def argspec_child() -> bool:
    result = _validator().validate({"name": "x", "count": "7"})
    return not result.error_messages and result.validated_parameters["count"] == 7


DATA = [(f"m{i}.py", (b"def f%d(x):\n    return x\n" % i) * 400) for i in range(40)]


def payload_busy(stop: threading.Event) -> None:
    while not stop.is_set():
        payload.clear_cache()  # every build deflates and fills the cache without the GIL
        payload.build_zip(DATA, (2024, 1, 1, 0, 0, 0), zipfile.ZIP_DEFLATED)


def payload_child() -> bool:
    import io

    built = payload.build_zip(DATA, (2024, 1, 1, 0, 0, 0), zipfile.ZIP_DEFLATED)
    with zipfile.ZipFile(io.BytesIO(built)) as archive:
        return archive.read("m3.py") == DATA[3][1]


def no_log_busy(stop: threading.Event) -> None:
    i = 0
    while not stop.is_set():
        no_log.remove_values({"a": ["pw%d" % i, {"k": TEXT}]}, ["pw%d" % (i % 70), "hunter2"])
        i += 1


def no_log_child() -> bool:
    if _activation.core_minor() >= (2, 22):
        return True
    return no_log.remove_values({"a": "x pw y"}, ["pw"]) == {"a": "x ******** y"}


def main(engine: str, forks: int) -> int:
    ansible_accel.install()
    busy, child = globals()[f"{engine}_busy"], globals()[f"{engine}_child"]
    stop = threading.Event()
    threads = [threading.Thread(target=busy, args=(stop,), daemon=True) for _ in range(2)]
    for thread in threads:
        thread.start()
    failures = []
    try:
        for n in range(forks):
            time.sleep(0.003 * (n % 5))
            pid = os.fork()
            if pid == 0:
                try:
                    ok = child()
                except BaseException as ex:  # noqa: BLE001 - reported through the exit status
                    print(f"child raised {ex!r}", file=sys.stderr)
                    ok = False
                os._exit(0 if ok else 3)
            deadline = time.monotonic() + CHILD_DEADLINE
            while True:
                done, status = os.waitpid(pid, os.WNOHANG)
                if done:
                    break
                if time.monotonic() > deadline:
                    os.kill(pid, 9)
                    os.waitpid(pid, 0)
                    failures.append(f"fork {n}: child hung (deadlock?)")
                    break
                time.sleep(0.005)
            if done and os.waitstatus_to_exitcode(status) != 0:
                failures.append(f"fork {n}: child exit {os.waitstatus_to_exitcode(status)}")
    finally:
        stop.set()
        for thread in threads:
            thread.join(10)
    print("\n".join(failures) or f"{forks} forks ok")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], int(sys.argv[2])))
