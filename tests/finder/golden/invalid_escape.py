from ansible.module_utils.basic import AnsibleModule
PATTERN = "\d+"
