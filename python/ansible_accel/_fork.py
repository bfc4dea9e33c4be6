"""The package's one registration with ``os.register_at_fork``.

A module whose state must not cross a fork as it is (a lock another thread may hold at that
moment, counters, a thread that must finish first, handles of helper processes) registers
its callbacks here, with the keywords of ``os.register_at_fork``::

    _fork.register(after_in_child=reset)

Order.  The rule is CPython's own: ``before`` callbacks run in the reverse of the order they
were registered in, ``after_in_parent`` and ``after_in_child`` callbacks in that order.  A
module registers when it is imported (``masking`` registers each masker's lock when the
masker is made), so the order follows the imports, which install() gives as:

====================================  ===========================================================
``_counters``                         after in child: the counters start from zero
``payload``                           after in child: a fresh lock for the kept entries
``_integrations/_memo``               after in child: fresh locks for the finder's memos
``_integrations/_finder_scan``        after in child: a fresh lock for the scan cache
``_integrations/_finder_prewarm``     before: the pre-warm thread finishes first
``_bytecode``                         after in child: the compile servers are the parent's
``masking`` (each masker made)        before: take the masker's lock; after (both): give it back
====================================  ===========================================================

So a masker's lock is taken first before a fork, then the pre-warm is waited for, and the
lock is given back after the other callbacks have run.  No callback depends on another's
having run.

Among the handlers other code registers with ``os`` (the standard library's, ansible-core's),
these run together, at the place of this module's own registration: it registers when first
imported, with ``_counters``, which ``import ansible_accel`` imports.  None of the callbacks
touches what those handlers look after (logging's locks, ansible-core's display and its own
fork-safe lock, ``random``'s seed), so their place among them changes nothing.

A callback that raises is reported the way CPython reports a fork handler that raises: through
``sys.unraisablehook``, with the callback as the object, no message and the callback's own
traceback; the callbacks after it still run and the fork goes on.
"""

from __future__ import annotations

import os
import sys
import typing as t
import weakref

Callback = t.Callable[[], object]

_before: list[Callback] = []
_after_in_parent: list[Callback] = []
_after_in_child: list[Callback] = []


def register(
    *,
    before: Callback | None = None,
    after_in_parent: Callback | None = None,
    after_in_child: Callback | None = None,
) -> None:
    """Run the given callbacks around every ``os.fork()`` of this process (and of the
    processes forked from it), as ``os.register_at_fork`` would (None, unlike there, is the
    same as leaving a keyword out); see the module's docstring for their order."""
    phases = {"before": before, "after_in_parent": after_in_parent, "after_in_child": after_in_child}
    if all(callback is None for callback in phases.values()):
        raise TypeError("At least one argument is required.")
    for name, callback in phases.items():
        if callback is not None and not callable(callback):
            raise TypeError(f"'{name}' must be callable, not {type(callback).__name__}")
    if before is not None:
        _before.append(before)
    if after_in_parent is not None:
        _after_in_parent.append(after_in_parent)
    if after_in_child is not None:
        _after_in_child.append(after_in_child)


def _run(callbacks: t.Iterable[Callback]) -> None:
    for callback in callbacks:
        try:
            callback()
        except BaseException as ex:  # noqa: BLE001 - reported, as CPython reports a fork handler's
            _report_unraisable(callback, ex)


def _run_before() -> None:
    _run(_before[::-1])  # (a copy: a callback that registers another changes the next fork)


def _run_after_in_parent() -> None:
    _run(_after_in_parent[:])


def _run_after_in_child() -> None:
    _run(_after_in_child[:])


_hook_args_type: type | None = None


def _report_unraisable(callback: Callback, ex: BaseException) -> None:
    """What ``PyErr_WriteUnraisable(callback)`` does with ``ex`` in a fork handler."""
    traceback = ex.__traceback__.tb_next if ex.__traceback__ is not None else None  # (from the callback's frame)
    args = _unraisable_args_type()((type(ex), ex, traceback, None, callback))
    hook = sys.unraisablehook
    try:
        hook(args)
    except BaseException as hook_ex:  # noqa: BLE001 - as CPython does when the hook itself fails
        sys.__unraisablehook__(_unraisable_args_type()(
            (type(hook_ex), hook_ex, hook_ex.__traceback__, "Exception ignored in sys.unraisablehook", hook)
        ))


def _unraisable_args_type() -> type:
    """The type ``sys.unraisablehook`` is given (and the default hook insists on), which ``sys``
    does not name: learned once, from an exception CPython itself reports as unraisable (one
    raised in a weakref callback)."""
    global _hook_args_type
    if _hook_args_type is None:
        probe = RuntimeError("ansible_accel._fork: the unraisable hook's argument type")
        learned: list[type] = []
        hook = sys.unraisablehook

        def learn(args: t.Any) -> None:
            if args.exc_value is probe:
                learned.append(type(args))
            else:
                hook(args)  # another thread's report, at this very moment: passed on

        def raise_probe(_ref: object) -> None:
            raise probe

        class _Gone:
            pass

        target = _Gone()
        sys.unraisablehook = learn
        try:
            ref = weakref.ref(target, raise_probe)
            del target  # the callback runs here, and its exception is reported
        finally:
            sys.unraisablehook = hook
        del ref
        _hook_args_type = learned[0]
    return _hook_args_type


os.register_at_fork(before=_run_before, after_in_parent=_run_after_in_parent, after_in_child=_run_after_in_child)
