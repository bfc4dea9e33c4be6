from ansible.module_utils.basic import AnsibleModule
NAME = "café"
