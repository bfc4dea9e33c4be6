"""Reports, from inside the worker, what the worker inherited from the controller (for the
``workers`` path's tests): the result field mappings' cache, and the frozen heap."""

from __future__ import annotations

import gc

from ansible.plugins.action import ActionBase


class ActionModule(ActionBase):
    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        try:
            from ansible._internal._task import UnifiedTaskResult

            info = UnifiedTaskResult.get_result_key_to_resolved_field_mapping.cache_info()
            cached = {"hits": info.hits, "misses": info.misses, "size": info.currsize}
        except ImportError:
            cached = None
        result.update(changed=False, cached=cached, frozen=gc.get_freeze_count())
        return result
