from ansible.module_utils.basic import AnsibleModule

def first[T = int](items: list[T]) -> T:
    return items[0]
