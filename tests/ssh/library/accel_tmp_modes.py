#!/usr/bin/python
"""Reports what a module sees of ansible-core's temporary directory on the host while it runs:
the directory's and each file's mode, owner and type, whether its standard streams are a
terminal, and the directories its arguments name (``_ansible_tmpdir``, ``_ansible_remote_tmp``)."""

from __future__ import annotations

import os
import stat

from ansible.module_utils.basic import AnsibleModule


def _stat(path):
    found = os.lstat(path)
    kind = "dir" if stat.S_ISDIR(found.st_mode) else "file" if stat.S_ISREG(found.st_mode) else "other"
    return {"mode": oct(stat.S_IMODE(found.st_mode)), "uid": found.st_uid, "gid": found.st_gid, "type": kind}


def main():
    module = AnsibleModule(argument_spec={})
    tmpdir = module._tmpdir  # the task's directory (the ``tmpdir`` property would make one inside it)
    module.exit_json(dir=_stat(tmpdir), files={name: _stat(os.path.join(tmpdir, name)) for name in sorted(os.listdir(tmpdir))},
                     tty=[os.isatty(0), os.isatty(1), os.isatty(2)], tmpdir=tmpdir, remote_tmp=module._remote_tmp)


if __name__ == "__main__":
    main()
