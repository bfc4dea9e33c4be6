# Module utils whose code paths show in tracebacks and warnings (the bytecode tests).
from __future__ import annotations

import warnings


def fail(kind="caught"):
    return _inner(lambda: [kind for _ in (1,)])


def _inner(make):
    make()
    raise ValueError("raised in probe_util")


def warn():
    warnings.warn("probe_util warns", UserWarning)
