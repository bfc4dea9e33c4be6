from ansible.module_utils.basic import AnsibleModule
if 1:
    import ansible.module_utils.urls
