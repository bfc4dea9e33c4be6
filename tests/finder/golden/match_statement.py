from ansible.module_utils.basic import AnsibleModule

match command:
    case "a":
        from ansible.module_utils import in_case
    case [x, y] if x:
        def nested():
            import ansible.module_utils.deep_in_case
    case _:
        pass
