from . import sibling
from ..module_utils import common_helper, other as o
from ..module_utils.sub import thing
from ..lookup import not_module_utils
from ansible_collections.ns.col.plugins.module_utils import absolute
from ansible_collections.ns.col.plugins.action import not_this
from ansible_collections.ns.col.plugins.module_utils_x import not_this_either
from ansible.module_utils_extra import startswith_quirk
