"""ansible-accel: native hot paths for ansible-core, with the same results.

``install()`` switches the accelerator on inside the installed ansible-core, ``uninstall()``
puts every original object back, and ``status()`` says what is active and counts the calls
that went native or fell back to ansible-core's own Python.

The public API for action plugins and tooling (docs/api.md): ``argspec.validate``,
``masking.mask``, ``finder.scan_imports``, ``payload.build_zip`` and the rest of what the
stubs (``*.pyi``) of ``argspec``, ``finder``, ``masking``, ``no_log`` and ``payload`` name
(``secrets`` is the deprecated former name of ``masking``).
Modules and names starting with an underscore are the accelerator's own.
"""

from __future__ import annotations

from ._activation import install, status, uninstall
from ._native import __version__

__all__ = ["__version__", "install", "status", "uninstall"]
