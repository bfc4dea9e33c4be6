"""``ansible-accel COMMAND ...`` with the controller's part of the module-side opt-in switched on
(``_integrations.modside_target.install()``, idempotent), which ``_activation.install()`` does
not call yet."""

from __future__ import annotations

import sys

import ansible_accel
from ansible_accel._cli import main
from ansible_accel._integrations import modside_target

if __name__ == "__main__":
    ansible_accel.install()
    modside_target.install()
    assert modside_target.reason is None, modside_target.reason
    sys.exit(main(sys.argv[1:]))
