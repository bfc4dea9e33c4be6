"""install()/uninstall() cycles and repeated use do not leak: the process's resident memory
and Python's traced allocations level off."""

from __future__ import annotations

import ctypes
import gc
import os
import tracemalloc
import zipfile

import ansible_accel
from ansible_accel import _activation, _native, finder, masking, no_log, payload

_libc = ctypes.CDLL(None)

#: a leak of one cycle's registry (5,000 secrets) would add megabytes per cycle
CYCLES = 60 if os.environ.get("ANSIBLE_ACCEL_FUZZ_EXAMPLES") else 12


def _rss_kb() -> int:
    """Resident memory in use: both allocators first hand back what they hold freed (they
    otherwise keep it a while and release it in bursts, which moved this by ±25 MB)."""
    gc.collect()
    _native.release_free_memory()
    _libc.malloc_trim(0)
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024


def _one_cycle(i: int) -> None:
    ansible_accel.install()
    try:
        masker = masking.SecretMasker()  # a registry per cycle, dropped at its end
        masker.register_secret_texts([f"cycle-secret-{i}-{j}" for j in range(5000)])
        masker.mask_string("x cycle-secret-1-1 y " * 500)
        finder.scan_imports(b"import ansible.module_utils.basic\n" * 50 + b"x = %d\n" % i, "ansible.modules.m")
        payload.build_zip([("m.py", b"print(%d)\n" % i * 300)], (2024, 1, 1, 0, 0, 0), zipfile.ZIP_DEFLATED)
        if _activation.core_minor() < (2, 22):
            no_log.remove_values({"k": [f"pw{i}"] * 20}, [f"pw{i}"])
        from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

        ArgumentSpecValidator({"n": {"type": "int"}, "s": {"no_log": True}}).validate({"n": "1", "s": f"v{i}"})
    finally:
        ansible_accel.uninstall()
    payload.clear_cache()


def test_install_uninstall_cycles_do_not_leak(monkeypatch):
    if _activation.core_minor() >= (2, 22):
        # validate() registers no_log values in ansible-core's process-wide masker for good (by
        # design): give it a masker that is dropped, so only our own memory is measured.
        from ansible.module_utils import secrets as core_secrets
        from ansible.module_utils._internal import _secrets

        monkeypatch.setattr(_secrets, "_secret_masker", _secrets.SecretMasker())
        monkeypatch.setattr(core_secrets, "_secret_masker", _secrets._secret_masker)
    for i in range(4):  # warm up: imports, caches at their steady size
        _one_cycle(i)
    gc.collect()
    tracemalloc.start()
    rss_before = _rss_kb()
    # Traced allocations are measured per batch of cycles: a leak grows every batch, while a
    # one-off (the interned-string table or another dict of the interpreter resizing when it
    # reaches its next size, which depends on everything the process ran before: seen once,
    # +3.8 MB) shows in one batch at most; the median batch is checked.
    batch = CYCLES // 3
    traced_growths = []
    try:
        for b in range(3):
            gc.collect()
            traced_before = tracemalloc.get_traced_memory()[0]
            for i in range(b * batch, (b + 1) * batch):
                _one_cycle(i)
            gc.collect()
            traced_growths.append(tracemalloc.get_traced_memory()[0] - traced_before)
    finally:
        tracemalloc.stop()
    rss_growth = _rss_kb() - rss_before
    print(f"\n{CYCLES} install/uninstall cycles: RSS {rss_growth:+d} KiB, traced Python allocations per "
          f"batch of {batch}: {', '.join(f'{g // 1024:+d}' for g in traced_growths)} KiB")
    # (the whole run once allowed 512 KiB traced: a third of it per batch)
    assert sorted(traced_growths)[1] < 512 * 1024 // 3, traced_growths
    assert rss_growth < 6 * 1024, rss_growth
