"""The integrations with ansible-core.  Each path (``finder``, ``payload``, ``argspec``,
``no_log``, ``masking``, ``bytecode``, ``controller``, ``workers``, ``runner``,
``ssh_runner`` for the ``remote_runner`` path) is one module with ``plan() -> list[Patch]`` (raising ``Unavailable`` with the
reason when the path cannot be switched on here), and may have ``after_install()`` and
``before_uninstall()`` hooks.  The other modules here serve those paths: the finder's parts
(``_finder_*``), the workers' plugin lookups ahead (``_plugin_prewarm``), the commands done in
the worker (``local_commands``), the module-side opt-in (``modside_target``) and a memo
(``_memo``)."""
