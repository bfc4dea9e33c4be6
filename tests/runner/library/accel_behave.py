#!/usr/bin/python
"""Ends in the way its options say (for the runner's tests): exit code, signal, uncaught
exception, large output, text on stderr, a pause."""

from __future__ import annotations

import os
import sys
import time

from ansible.module_utils.basic import AnsibleModule


def main():
    module = AnsibleModule(argument_spec=dict(
        name=dict(type="str", required=True),
        exit_code=dict(type="int", default=0),
        kill_with=dict(type="int", default=0),
        raise_error=dict(type="bool", default=False),
        stdout_bytes=dict(type="int", default=0),
        stderr_text=dict(type="str", default=""),
        sleep=dict(type="float", default=0),
    ))
    params = module.params
    if params["stderr_text"]:
        sys.stderr.write(params["stderr_text"])
        sys.stderr.flush()
    if params["sleep"]:
        time.sleep(params["sleep"])
    if params["kill_with"]:
        os.kill(os.getpid(), params["kill_with"])
    if params["raise_error"]:
        raise RuntimeError("raised on purpose")
    if params["exit_code"]:
        print('{"msg": "exiting on purpose"}')
        sys.exit(params["exit_code"])
    module.exit_json(changed=False, name=params["name"], filler="x" * params["stdout_bytes"])


if __name__ == "__main__":
    main()
