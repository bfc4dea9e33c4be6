"""The integrations with ansible-core.  Each path is one module (``finder``, ``payload``,
``argspec``, ``no_log``, ``masking``, ``bytecode``, ``controller``, ``workers``, ``runner``,
and ``ssh_runner`` for the ``remote_runner`` path) with ``plan() -> list[Patch]`` (raising
``Unavailable`` with the reason when the path cannot be switched on here), and may have
``after_install()`` and ``before_uninstall()`` hooks.  The other modules here serve those
paths: the finder's parts (``_finder_*``), the workers' plugin lookups ahead
(``_plugin_prewarm``), the commands done in the worker (``local_commands``), the module-side
opt-in (``modside_target``) and a memo (``_memo``)."""
