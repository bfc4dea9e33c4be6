"""What make test's quick benchmark check prints (``benches.suite --check``): equality per path,
never quick times or speed-target verdicts."""

from __future__ import annotations

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from benches import suite  # noqa: E402


def _row(group: str, equal: bool, ratio: float) -> dict:
    # A finder row far below its target (recursive_finder warm >= 100x) when timed.
    return {"group": group, "name": "recursive_finder warm", "inputs": "x", "ansible_core": "2.21.5",
            "equal": equal, "ratio": ratio, "py": 1.0, "native": 1.0 / ratio}


def test_check_prints_equality_not_times_or_targets():
    text = suite.check_text({"rows": [_row("finder", True, 2.0), _row("finder", True, 3.0), _row("payload", True, 1.1)]})
    assert "missed" not in text and "target" not in text and "2.0" not in text
    assert text.split("\n")[1].split() == ["finder", "2", "2"]
    assert "equal to ansible-core's on every row (3 rows, quick inputs)" in text
    assert "`make bench` times every path" in text


def test_check_names_differing_rows():
    text = suite.check_text({"rows": [_row("finder", True, 2.0), _row("finder", False, 3.0)]})
    assert text.split("\n")[1].split() == ["finder", "2", "1"]
    assert "different on 1 of 2 rows" in text
