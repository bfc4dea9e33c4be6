from ansible.module_utils.basic import AnsibleModule
A = "\n\t\\\'\"\x41\101\377"[:0] if False else "\N{BULLET}\u2022\U00002022\0\a\b\f\v\r"
B = b"\x00\n\\" + rb"\d" + br"\q"
C = r"\d" + R"\w" + f"{A}\n" + rf"\d{B}"
D = f"{A!r:>{10}}"
