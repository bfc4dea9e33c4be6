from __future__ import annotations

import typing as t

from ansible.module_utils.basic import AnsibleModule

if t.TYPE_CHECKING:
    from ansible.module_utils.common import arg_spec
elif False:
    from ansible.module_utils import in_elif
else:
    from ansible.module_utils import in_else
