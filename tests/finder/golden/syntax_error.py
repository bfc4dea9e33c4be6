from ansible.module_utils.basic import AnsibleModule

def broken(:
    pass
