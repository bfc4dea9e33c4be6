# -*- coding: latin-1 -*-
# café
from ansible.module_utils.basic import AnsibleModule
NAME = "été"
