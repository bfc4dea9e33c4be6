"""Whether a directory is this user's alone: the check every private directory of the package
(runners' sockets, the run statistics' spool, the finder's records) makes before it is used."""

from __future__ import annotations

import os
import stat


def is_private_dir(path: str, *, follow_links: bool = False) -> bool:
    """A directory owned by this user that nobody else may open; a symbolic link to one only
    with ``follow_links``."""
    try:
        info = os.stat(path) if follow_links else os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and not info.st_mode & 0o077
