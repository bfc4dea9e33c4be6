import functools


@functools.lru_cache()
def helper(x=lambda: None):
    from ansible.module_utils.common.text.converters import to_text
    def inner():
        import ansible.module_utils.urls
    return to_text


async def run():
    async with ctx() as c:
        from ansible.module_utils import in_async_with
    async for x in y:
        from ansible.module_utils import in_async_for


class Thing(Base, metaclass=Meta):
    from ansible.module_utils.basic import AnsibleModule

    def method(self):
        while True:
            from ansible.module_utils import in_while
        else:
            from ansible.module_utils import in_while_else
        for i in range(3):
            pass
        else:
            from ansible.module_utils import in_for_else
        with open("x") as f, open("y"):
            from ansible.module_utils import in_with
