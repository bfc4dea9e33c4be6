"""heuristic_log_sanitize: hand-written edge cases against the installed ansible-core."""

from __future__ import annotations

import pytest
from ansible.module_utils import basic

from ansible_accel import no_log

from .conftest import ONLY_WHERE_NATIVE, assert_same

pytestmark = ONLY_WHERE_NATIVE


class MyStr(str):
    pass


class OwnSearch(str):
    def rindex(self, *args):
        return str.rindex(self, *args)


CASES = [
    ("url", "http://user:pass@host/path", None),
    ("ssh", "user:pass@host:/path", None),
    ("several", "a://b:c@d e://f:g@h user:x@y", None),
    ("no password", "nothing to see", None),
    ("empty", "", None),
    ("at only", "@@@ @", None),
    ("scheme without separator", "http://user@host", None),
    ("begin plus three counts characters", "éé:x@y", None),
    ("wide characters", "中文://用户:密码@主机 \U0001F600:\U0001F600@x", None),
    ("surrogates", "\ud800://\udc00:\ud83d@\ude00", None),
    ("with no_log values", "http://u:p@h the hunter2 here", ["hunter2", "h"]),
    ("empty no_log collection", "u:p@h", []),
    ("bytes", b"http://u:p@h \xff", None),
    ("number", 12345, ["3"]),
    ("str subclass", MyStr("http://u:p@h"), None),
    ("str subclass unchanged", MyStr("plain"), None),
    ("str subclass with own search", OwnSearch("http://u:p@h"), None),
    ("many credentials", "x://u:p@h " * 2000, ["p"]),
]


@pytest.mark.parametrize(("data", "no_log_values"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_heuristic_case(data, no_log_values):
    runs_native = type(data) is not OwnSearch
    assert_same(basic.heuristic_log_sanitize, no_log.heuristic_log_sanitize, data, no_log_values, runs_native=runs_native)


def test_unchanged_text_is_the_same_object():
    text = "nothing here"
    assert no_log.heuristic_log_sanitize(text) is basic.heuristic_log_sanitize(text) is text
