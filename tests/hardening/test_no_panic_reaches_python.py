"""Every native entry point called with arguments of every wrong kind: each answers or raises
an ordinary ``Exception``; a Rust panic (pyo3's ``PanicException``, a ``BaseException``) or a
crash never gets out.  Run in a fresh interpreter so that a crash fails the test, not pytest."""

from __future__ import annotations

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent(
    r'''
    import itertools, sys, warnings
    from ansible_accel import _native

    ARGS = [None, 0, -1, 2**70, 1.5, "", "x", "\ud800", b"", b"\xff\x00", bytearray(b"ab"), [], ["a", "\ud800"],
            [("a", b"x")], (), (2024, 1, 1, 0, 0, 0), {}, {"a": {"type": "str"}}, object(), "every_listed_node"]
    calls = escaped = 0
    warnings.simplefilter("ignore")

    def attempt(fn, args):
        global calls, escaped
        calls += 1
        try:
            fn(*args)
        except Exception:
            pass
        except BaseException as ex:
            escaped += 1
            print("ESCAPED", getattr(fn, "__qualname__", fn), [type(a).__name__ for a in args], type(ex).__name__, file=sys.stderr)

    targets = []
    for name in dir(_native):
        obj = getattr(_native, name)
        if name.startswith("_") or not callable(obj) or isinstance(obj, type) and issubclass(obj, BaseException):
            continue
        targets.append(obj)
    instances = {}
    for cls in [t for t in targets if isinstance(t, type)]:
        for n in range(0, 5):
            for args in itertools.islice(itertools.product(ARGS, repeat=n), 1500):
                try:
                    instances.setdefault(cls, cls(*args))
                except Exception:
                    pass
                except BaseException as ex:
                    escaped += 1
                    print("ESCAPED", cls.__name__, [type(a).__name__ for a in args], type(ex).__name__, file=sys.stderr)
    methods = [getattr(i, m) for i in instances.values() for m in dir(i) if not m.startswith("__") and callable(getattr(i, m))]
    methods += [getattr(i, m) for i in instances.values() for m in ("__contains__", "__len__") if hasattr(i, m)]
    for obj in targets + methods:
        for n in range(0, 4):
            for args in itertools.islice(itertools.product(ARGS, repeat=n), 1500):
                attempt(obj, args)
    print(f"calls={calls} escaped={escaped}")
    sys.exit(1 if escaped else 0)
    '''
)


def test_no_panic_escapes_any_entry_point():
    run = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, (run.stdout + run.stderr)[-3000:]
    assert "escaped=0" in run.stdout
