"""What an integration hands ``install()``: patches, or ``Unavailable`` with the reason.

A ``Patch`` replaces one attribute of a module or a class; ``apply()`` makes the change and
remembers the raw object that was there (from the owner's own ``__dict__``, so a class
attribute inherited or a descriptor comes back as it was), ``revert()`` puts that very
object back, or removes the attribute when the owner had none of its own.
"""

from __future__ import annotations

import dataclasses
import os
import typing as t

MISSING = object()  # the owner had no attribute of that name of its own
OFF_VALUES = ("0", "false", "no", "off")  # what an environment switch is set to, to switch a path off


def switched_off(env: str) -> str | None:
    """``switched off by ENV=VALUE`` when the environment variable ``env`` switches its path
    off (``0``, ``false``, ``no`` or ``off``, in any case, spaces around ignored); else None."""
    value = os.environ.get(env)
    if value is not None and value.strip().lower() in OFF_VALUES:
        return f"switched off by {env}={value}"
    return None


class Unavailable(Exception):
    """A path cannot be switched on here; the message says why."""


@dataclasses.dataclass(frozen=True)
class Patch:
    """Replace ``owner.attr`` (a module or a class) with ``value``."""

    owner: t.Any
    attr: str
    value: t.Any


@dataclasses.dataclass
class Applied:
    owner: t.Any
    attr: str
    original: t.Any  # the raw object from owner.__dict__, or MISSING


def apply(patch: Patch) -> Applied:
    raw = vars(patch.owner).get(patch.attr, MISSING)
    setattr(patch.owner, patch.attr, patch.value)
    return Applied(patch.owner, patch.attr, raw)


def revert(applied: Applied) -> None:
    if applied.original is MISSING:
        delattr(applied.owner, applied.attr)
    else:
        setattr(applied.owner, applied.attr, applied.original)
