import os
try:
    from ansible.module_utils.compat import selinux
except ImportError:
    from ansible.module_utils.compat import fallback_selinux
else:
    import ansible.module_utils.facts.timeout
finally:
    from ansible.module_utils import common
try:
    pass
except* ValueError:
    from ansible.module_utils import star_handler
from ansible.module_utils.compat import selinux
