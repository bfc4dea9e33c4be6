from ansible.module_utils.basic import *
def f():
    pass
from ansible.module_utils.urls import *
