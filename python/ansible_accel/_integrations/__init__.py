"""One module per hot path.  Each has ``plan() -> list[Patch]`` (raising ``Unavailable`` with
the reason when the path cannot be switched on here), and may have ``after_install()`` and
``before_uninstall()`` hooks."""
