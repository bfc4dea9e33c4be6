"""Masking against ansible-core 2.22's ``SecretMasker`` and ``mask_object`` on generated
secrets, texts and object graphs (non-str keys, sets, tuples, numbers, bytes, surrogates)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_accel import _activation, _counters, masking

from .conftest import CASES, fuzz_settings
from ._outcomes import assert_same_outcome, outcome

pytestmark = pytest.mark.skipif(
    _activation.core_minor() < (2, 22), reason="ansible-core before 2.22 has no registered-secret masker"
)

ALPHABET = list("ab1 ") + ['"', "\\", "\n", "\t", "\r", "\x00", "\x1f", "é", "中", "😀", "\ud800", "\udc80", "\u2028"]
chars = st.sampled_from(ALPHABET)
secret_texts = st.text(chars, max_size=7)
noise = st.text(chars, max_size=6)
placeholders = st.sampled_from(["$REDACTED$", "", "*", "\ud83d", "<😀>", "ab"])


def _forms(secret: str) -> list[str]:
    try:
        return [secret, json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1]]
    except UnicodeError:
        return [secret]


@st.composite
def registry_and_text(draw):
    registered = draw(st.lists(secret_texts, max_size=8))
    pieces = []
    for _ in range(draw(st.integers(0, 10))):
        if registered and draw(st.booleans()):
            form = draw(st.sampled_from(_forms(draw(st.sampled_from(registered)))))
            if len(form) > 1 and draw(st.booleans()):
                form = form[: draw(st.integers(1, len(form) - 1))]  # near misses
            pieces.append(form)
        else:
            pieces.append(draw(noise))
    return registered, "".join(pieces)


def _maskers(registered):
    from ansible.module_utils._internal import _secrets

    reference, ours = _secrets.SecretMasker(), masking.SecretMasker()
    assert_same_outcome(outcome(reference.register_secret_texts, registered), outcome(ours.register_secret_texts, registered))
    return reference, ours


def _native_count() -> int:
    return _counters.snapshot()["masking"]["native"]


@fuzz_settings()
@given(registry_and_text(), placeholders, st.integers(0, 2))
def test_mask_string_like_2_22(case, placeholder, long):
    CASES["masking"] += 1
    registered, text = case
    reference, ours = _maskers(registered)
    text = ("." * 5000 + text) * long + text  # long texts take the automata
    expected = outcome(reference.mask_string, text, mask_placeholder=placeholder)
    before = _native_count()
    got = outcome(ours.mask_string, text, mask_placeholder=placeholder)
    assert_same_outcome(expected, got)
    if got[0] == "returned" and text:
        assert _native_count() == before + 1
    assert_same_outcome(outcome(reference.secrets_in_json, text), outcome(ours.secrets_in_json, text))


def _objects(leaf):
    keys = st.one_of(leaf, noise, st.integers(-2, 20), st.none(), st.booleans(), st.floats(allow_nan=False), st.tuples(st.integers(0, 3)), st.binary(max_size=3))
    scalars = st.one_of(leaf, noise, st.integers(), st.floats(), st.booleans(), st.none(), st.binary(max_size=4), st.just(bytearray(b"ab")))
    return st.recursive(
        scalars,
        lambda children: st.one_of(
            st.lists(children, max_size=4),
            st.tuples(children, children),
            st.dictionaries(keys, children, max_size=4),
            st.frozensets(st.one_of(noise, st.integers(0, 9)), max_size=3),
            st.sets(st.one_of(leaf, st.integers(0, 9)), max_size=3),
        ),
        max_leaves=10,
    )


@st.composite
def object_case(draw):
    registered = draw(st.lists(st.sampled_from(["ab", "12", "1", "b", "é😀", 'q"\\', "\ud800", "pass word", "None", "True", "0.5"]) | secret_texts, min_size=1, max_size=4))
    value = draw(_objects(st.sampled_from(registered)))
    lines = draw(st.lists(st.sampled_from(registered + ["x", "two\nlines"]), max_size=4))
    text = "\n".join(lines)
    result = {"stdout": text, "stdout_lines": text.splitlines(), "value": value}
    if draw(st.booleans()):
        result["stdout_lines"] = result["stdout_lines"] + ["extra"]
    if draw(st.booleans()):
        result = [result, value]
    return registered, result


@fuzz_settings(share=0.5)
@given(object_case(), placeholders)
def test_mask_object_like_2_22(case, placeholder):
    """2.22's own ``mask_object`` (on a masker of its own) against ours on our masker."""
    from ansible.module_utils._internal import _secrets_object

    CASES["masking"] += 1
    registered, value = case
    reference, ours = _maskers(registered)
    lines_keys = {"stdout": "stdout_lines"}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_secrets_object, "_secret_masker", reference)
        expected = outcome(_secrets_object.mask_object, value, mask_placeholder=placeholder, lines_keys=lines_keys)
    got = outcome(masking._mask_object_with, ours, value, placeholder, lines_keys)
    assert_same_outcome(expected, got, identity_of=value)

