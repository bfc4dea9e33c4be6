#!/usr/bin/python
"""What the module's process is given: argv, environment (in its order), working directory,
umask, standard streams, open descriptors, resource limits, signal mask and dispositions.
With ``end``, it ends another way: ``status`` (a line on standard error, status 3), ``signal``
(killed by SIGTERM), ``interrupt`` (SIGINT), ``large`` (a 3 MB result)."""

import json
import os
import resource
import signal
import stat
import sys


def streams():
    found = {}
    for fd in (0, 1, 2):
        mode = os.fstat(fd).st_mode
        found[fd] = {"fifo": stat.S_ISFIFO(mode), "socket": stat.S_ISSOCK(mode), "tty": os.isatty(fd),
                     "flags": __import__("fcntl").fcntl(fd, __import__("fcntl").F_GETFL) & ~0o100000}
    return found


def main():
    from ansible.module_utils.basic import AnsibleModule

    module = AnsibleModule(argument_spec={"end": {"type": "str", "default": "none"}})
    end = module.params["end"]
    if end == "status":
        sys.stderr.write("ending with status 3\n")
        sys.stderr.flush()
        os._exit(3)
    if end in ("signal", "interrupt"):
        sys.stdout.write("partial output")
        sys.stdout.flush()
        os.kill(os.getpid(), signal.SIGTERM if end == "signal" else signal.SIGINT)
    if end == "large":
        module.exit_json(changed=False, blob="x" * (3 << 20))
    limits = {name: resource.getrlimit(getattr(resource, name)) for name in dir(resource) if name.startswith("RLIMIT_")}
    module.exit_json(
        changed=False,
        executable=sys.executable, orig_argv=getattr(sys, "orig_argv", None),
        # the connection's own ports, and its terminal's name, differ from run to run
        environ=[f"{k}={v}" if k not in ("SSH_CLIENT", "SSH_CONNECTION", "SSH_TTY") else k for k, v in os.environ.items()],
        cwd=os.getcwd(), umask=os.umask(0o22), streams=streams(),
        fds=sorted(os.listdir("/proc/self/fd")), limits=limits,
        blocked=sorted(int(s) for s in signal.pthread_sigmask(signal.SIG_BLOCK, [])),
        ignored=sorted(int(s) for s in signal.valid_signals() if signal.getsignal(s) == signal.SIG_IGN),
        stdin_left=len(sys.stdin.buffer.read()) if not os.isatty(0) else None,
    )


if __name__ == "__main__":
    main()
