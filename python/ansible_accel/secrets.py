"""Deprecated: the former name of :mod:`ansible_accel.masking`.

Every public name of ``ansible_accel.masking`` is here as the very same object
(``ansible_accel.secrets.mask is ansible_accel.masking.mask``).  Importing this module emits a
``DeprecationWarning`` naming ``ansible_accel.masking``; the module goes in a later release
(docs/api.md, "Deprecation policy").
"""

from __future__ import annotations

import warnings as _warnings

from .masking import (
    AnsibleSecretMaskError,
    NewSecretTracker,
    SecretMasker,
    SecretMatcher,
    mask,
    mask_object,
    mask_secrets,
    register_secret,
    register_secrets,
)
from .masking import __all__  # the same names, listed once

_warnings.warn(
    "ansible_accel.secrets is deprecated: use ansible_accel.masking, which has the same names",
    DeprecationWarning,
    stacklevel=2,  # the importing code (the import system's frames are skipped)
)
