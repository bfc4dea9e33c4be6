import os, sys
import ansible.module_utils.basic as basic
import ansible.module_utils
import ansible.module_utils_extra.thing
import ansible_collections.ns.col.plugins.module_utils.helper as h, json
import ansible_collections.ns.col.plugins.lookup.other
import  ansible . module_utils . spaced
