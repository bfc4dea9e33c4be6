from ansible.module_utils.basic import AnsibleModule

type Alias = list[int]

def first[T](items: list[T]) -> T:
    from ansible.module_utils import generic_helper
    return items[0]
