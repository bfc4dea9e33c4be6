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


# --- the engines' own output: rows with times and ratios, shown by make bench only ----------

ROW_LINE = "finder     scan: one                            1 module        py    1.23ms  native   45.6us  x    27.0  equal"


def _fake_python(tmp_path) -> str:
    """An interpreter stand-in: answers ``describe()`` and runs one engine the way ``python -m
    benches --json FILE`` does, printing a row with its times and ratio."""
    row = {"group": "finder", "name": "scan: one", "inputs": "1 module", "python_s": 1.23e-3, "native_s": 45.6e-6,
           "python_spread": 0.1, "native_spread": 0.1, "equal": True, "ansible_core": "2.21.5", "python": "3.12.1"}
    script = tmp_path / "python"
    script.write_text(
        f"#!{sys.executable}\n"
        "import json, sys\n"
        "args = sys.argv[1:]\n"
        "if args[0] == '-c':\n"
        "    print(json.dumps({'python': '3.12.1', 'ansible_core': '2.21.5', 'ansible_accel': '0.1.0', 'ansible': None}))\n"
        "    sys.exit(0)\n"
        f"print({ROW_LINE!r}, flush=True)\n"
        "with open(args[args.index('--json') + 1], 'w') as handle:\n"
        f"    json.dump({{'rows': [{row!r}], 'errors': {{}}}}, handle)\n"
    )
    script.chmod(0o755)
    return str(script)


def test_check_run_prints_no_times_or_ratios(tmp_path, capfd):
    python = _fake_python(tmp_path)
    assert suite.main(["--python", python, "--quick", "--check", "finder"]) == 0
    out = capfd.readouterr().out
    assert "1.23ms" not in out and "45.6us" not in out and "27.0" not in out, out
    assert "rows in" not in out, out
    assert ["finder", "1", "1"] in [line.split() for line in out.splitlines()], out
    assert "Outputs equal to ansible-core's on every row (1 rows, quick inputs)." in out, out
    assert "OK: 1 rows, 0 failures" in out, out


def test_a_timed_run_streams_the_rows(tmp_path, capfd):
    # The check's silence is its own: without --check the engine's table streams through.
    result = suite.run_engine(_fake_python(tmp_path), "finder", True, "finder on ansible-core 2.21.5")
    assert ROW_LINE in capfd.readouterr().out
    assert result["rows"][0]["name"] == "scan: one"
