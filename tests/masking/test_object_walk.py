"""The native mask_object walk against ansible-core 2.22's ``_Walker``, on the cases the walk
treats specially: derived lines (compared and rebuilt natively), values it hands to the Python
walk, and structures deep enough that it checks how deep 2.22's recursive walk could go."""

from __future__ import annotations

import sys

import pytest

from ansible_accel import _counters, masking

from ._helpers import core_secrets, needs_222
from .test_properties import _pair, _same, _tagged

pytestmark = needs_222

LINES_KEYS = {"stdout": "stdout_lines", "stderr": "stderr_lines"}


def _both(registered, value, lines_keys=LINES_KEYS, placeholder="$REDACTED$"):
    _, _secrets_object = core_secrets()
    reference, ours = _pair(registered)
    expected = _secrets_object._Walker(reference, placeholder, lines_keys).mask(value)
    before = _counters.snapshot()["masking"]["native"]
    got = masking._mask_object_with(ours, value, placeholder, lines_keys)
    _same(expected, got)
    assert (expected is value) == (got is value)
    assert _counters.snapshot()["masking"]["native"] == before + 1
    return expected, got


# Every line boundary of str.splitlines(), secrets inside lines, across boundaries and alone.
TEXTS = [
    "plain\nsecret1 here\nlast",
    "a\r\nsecret1\rb\x0bc\x0cd\x1ce\x1df\x1eg\x85h\u2028i\u2029j\n",
    "secret1\nsecret1\n\nsecret1",
    "before secr\net1 after\nsecret1\r\nx",
    "é中😀 secret1\n\ud800 line\nsecret1",
    "no secret at all\nanywhere",
    "",
    "\n\n\n",
    "x" * 70 + "secret1" + "\n" + "y" * 70,
]


@pytest.mark.parametrize("text", TEXTS)
@pytest.mark.parametrize("lines_edit", [None, "append", "drop", "str_subclass", "tuple", "tagged"])
def test_derived_lines_like_2_22(text, lines_edit):
    class Text(str):
        pass

    lines = text.splitlines()
    if lines_edit == "append":
        lines.append("extra")
    elif lines_edit == "drop":
        lines = lines[:-1]
    elif lines_edit == "str_subclass":
        lines = [Text(line) for line in lines]
    elif lines_edit == "tuple":
        lines = tuple(lines)
    elif lines_edit == "tagged":
        lines = _tagged(lines)
    value = {"stdout": text, "stdout_lines": lines, "stderr": text, "rc": 0}
    expected, got = _both(["secret1", "secr\net1"], value)
    if isinstance(got, dict) and isinstance(got.get("stdout_lines"), list):
        assert all(type(line) is type(ref) for line, ref in zip(got["stdout_lines"], expected["stdout_lines"]))


def test_rebuilt_lines_reuse_only_equal_lines():
    text = "\n".join(f"line {i}" + (" secret1" if i % 3 == 0 else "") for i in range(50))
    value = {"stdout": text, "stdout_lines": text.splitlines()}
    _, got = _both(["secret1"], value)
    rebuilt = got["stdout_lines"]
    assert rebuilt == text.replace("secret1", "$REDACTED$").splitlines()
    reused = [line for line in rebuilt if any(line is original for original in value["stdout_lines"])]
    assert len(reused) == 50 - 17  # the lines without a secret are the original objects


def test_tagged_text_and_keys_and_collisions():
    value = {
        "stdout": _tagged("a secret1 b\nc"),
        "stdout_lines": ["a secret1 b", "c"],
        "k secret1": 1,
        "k $REDACTED$": 2,
        _tagged("secret1"): [_tagged({"x": "secret1", "y": ("secret1", 3)}), {1, "secret1"}],
        7: 12.5,
        "n": 7123,
        "big": 10**30 + 7,
    }
    _both(["secret1", "123", "7"], value)


@pytest.mark.parametrize("placeholder", ["\ud800", "x\udfff\U0001f600", "$REDACTED$"])
def test_key_collisions_with_a_lone_surrogate_in_the_key(placeholder):
    # The " (2)" suffix is joined as str: a key with a lone surrogate has no UTF-8 form.
    expected, _ = _both(["abcd", "12"], {"stdout": "", "value": {"abcd": None, "12": None, "\udc80abcd": 1}}, placeholder=placeholder)
    assert len(expected["value"]) == 3


def _deep(levels, leaf="secret1"):
    value = leaf
    for i in range(levels):
        value = [value] if i % 2 else {"k": value}
    return value


@pytest.mark.parametrize("levels", [5, 31, 32, 33, 60, 200])
def test_deep_structures_like_2_22(levels):
    """Past the first depth bound the walk checks the stack and goes on natively when 2.22's
    walk surely succeeds too."""
    _both(["secret1"], _deep(levels))


def test_too_deep_for_2_22_fails_like_it():
    _, _secrets_object = core_secrets()
    reference, ours = _pair(["secret1"])
    value = _deep(sys.getrecursionlimit())
    with pytest.raises(Exception):
        _secrets_object._Walker(reference, "*", {}).mask(value)
    with pytest.raises(masking.AnsibleSecretMaskError) as info:
        masking._mask_object_with(ours, value, "*", None)
    assert info.value.__context__ is None


def test_deep_under_a_delegated_container():
    """Depth counts the Python walk's levels as well: a tagged list on the way down."""
    value = _deep(20, _tagged([_deep(40)]))
    _both(["secret1"], value)


def test_unchanged_result_is_the_same_object():
    value = {"stdout": "nothing\nhere", "stdout_lines": ["nothing", "here"], "x": [1, 2.5, None, True, b"secret1"], "t": ("a",)}
    _, got = _both(["secret1"], value)
    assert got is value
