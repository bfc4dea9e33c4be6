"""ansible-accel: native hot paths for ansible-core, with the same results.

``install()`` switches the accelerator on inside the installed ansible-core, ``uninstall()``
puts every original object back, and ``status()`` says what is active and counts the calls
that went native or fell back to ansible-core's own Python.
"""

from __future__ import annotations

from ._activation import install, status, uninstall
from ._native import __version__

__all__ = ["__version__", "install", "status", "uninstall"]
