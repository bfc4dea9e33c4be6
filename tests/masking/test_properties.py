"""Generated secrets and texts: ours against ansible-core 2.22's SecretMasker and result walk."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_accel import masking

from ._helpers import core_secrets, needs_222

pytestmark = needs_222

# Characters that exercise every kind of str: ASCII, quotes and backslashes, control and
# whitespace (stripped or escaped), 2- and 3-byte, astral, and lone surrogates.
ALPHABET = list("abAB01 -") + ['"', "\\", "\n", "\t", "\r", "\x00", "\x7f", "\x0b", "é", "中", "😀", "\ud83d", "\ude00", "\udfff"]
chars = st.sampled_from(ALPHABET)
secret_text = st.text(chars, min_size=0, max_size=6)
noise = st.text(chars, min_size=0, max_size=5)
placeholders = st.sampled_from(["$REDACTED$", "*", "", "\ud800", "😀<m>"])
SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _json_forms(secret: str) -> list[str]:
    return [secret, json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1]]


@st.composite
def registry_and_text(draw):
    """Secrets, and a text made of noise and of the secrets' forms (so hits, overlaps and
    adjacency are common)."""
    registered = draw(st.lists(secret_text, min_size=0, max_size=6))
    pieces = []
    for _ in range(draw(st.integers(0, 8))):
        if registered and draw(st.booleans()):
            form = draw(st.sampled_from(_json_forms(draw(st.sampled_from(registered)))))
            # a part of a form makes near misses
            if draw(st.booleans()) and len(form) > 1:
                form = form[: draw(st.integers(1, len(form) - 1))]
            pieces.append(form)
        else:
            pieces.append(draw(noise))
    return registered, "".join(pieces)


def _pair(registered):
    _secrets, _ = core_secrets()
    reference, ours = _secrets.SecretMasker(), masking.SecretMasker()
    reference.register_secret_texts(registered)
    ours.register_secret_texts(registered)
    return reference, ours


@SETTINGS
@given(registry_and_text(), placeholders)
def test_mask_string_equals_2_22(case, placeholder):
    registered, text = case
    reference, ours = _pair(registered)
    expected = reference.mask_string(text, mask_placeholder=placeholder)
    assert ours.mask_string(text, mask_placeholder=placeholder) == expected
    assert sorted(reference._matcher.spans(text)) == ours._registry.spans(text)


@SETTINGS
@given(registry_and_text(), st.integers(0, 3))
def test_mask_string_long_texts_equal_2_22(case, copies):
    """Texts of 4 KB and more are searched with automata, not the fresh-secret index."""
    registered, text = case
    reference, ours = _pair(registered)
    ours.mask_string("short text first, so the index serves it")
    long_text = ("." * 4096 + text) * (copies + 1)
    assert ours.mask_string(long_text, mask_placeholder="<m>") == reference.mask_string(long_text, mask_placeholder="<m>")
    assert ours._registry.spans(long_text) == sorted(reference._matcher.spans(long_text))
    # and short again, after the forms moved into an automaton, plus one more secret
    ours.register_secret_text(text[:3])
    reference.register_secret_text(text[:3])
    assert ours.mask_string(text, mask_placeholder="#") == reference.mask_string(text, mask_placeholder="#")


@SETTINGS
@given(registry_and_text())
def test_secrets_in_json_equals_2_22(case):
    registered, text = case
    reference, ours = _pair(registered)
    assert ours.secrets_in_json(text) == reference.secrets_in_json(text)
    document = json.dumps({"k": text, "l": [text, text[:3]]}, ensure_ascii=len(text) % 2 == 0)
    assert ours.secrets_in_json(document) == reference.secrets_in_json(document)


@SETTINGS
@given(st.lists(secret_text, max_size=8), st.lists(secret_text, max_size=8))
def test_trackers_equal_2_22(first, second):
    _secrets, _ = core_secrets()
    reference, ours = _secrets.SecretMasker(), masking.SecretMasker()
    reference.register_secret_texts(first)
    ours.register_secret_texts(first)
    ref_tracker, our_tracker = reference.track_new_secrets(), ours.track_new_secrets()
    for secret in second:
        assert ours.register_secret_text(secret) is secret
        reference.register_secret_text(secret)
    assert our_tracker.flush() == ref_tracker.flush()
    assert our_tracker.flush() == ref_tracker.flush() == frozenset()


@SETTINGS
@given(registry_and_text(), st.lists(secret_text, max_size=3))
def test_native_matcher_in_ansible_core_masker(case, more):
    """ansible-core's own masker class given our matcher: same results as with its own."""
    registered, text = case
    _secrets, _ = core_secrets()
    reference, native = _secrets.SecretMasker(), _secrets.SecretMasker()
    native._matcher = masking.SecretMatcher()
    for batch in (registered, more):
        reference.register_secret_texts(batch)
        native.register_secret_texts(batch)
        assert masking._mask_text(native._matcher, text, "#") == reference.mask_string(text, mask_placeholder="#") if native._forms else True
        assert native.secrets_in_json(text) == reference.secrets_in_json(text)


def _tagged(value):
    from ansible._internal._datatag._tags import Origin

    return Origin(path="/tmp/x.yml", line_num=1).tag(value)


scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 123456), st.floats(allow_nan=False), noise, secret_text,
    st.binary(max_size=4), st.builds(_tagged, noise),
)


def _objects(registered_strategy):
    leaf = st.one_of(scalars, registered_strategy)
    return st.recursive(
        leaf,
        lambda children: st.one_of(
            st.lists(children, max_size=4),
            st.tuples(children, children),
            st.dictionaries(st.one_of(noise, registered_strategy, st.integers(0, 20)), children, max_size=4),
            st.frozensets(st.one_of(noise, st.integers(0, 9)), max_size=3),
            st.builds(_tagged, st.lists(children, max_size=3)),
        ),
        max_leaves=8,
    )


@st.composite
def object_case(draw):
    registered = draw(st.lists(st.sampled_from(["abcd", "12", "1", "b", "é😀", 'q"\\', "\ud83d", "pass word"]) | secret_text, min_size=1, max_size=4))
    value = draw(_objects(st.sampled_from(registered)))
    stdout = draw(st.lists(st.sampled_from(registered + ["x", "line two"]), max_size=4))
    text = "\n".join(stdout)
    result = {"stdout": text, "stdout_lines": text.splitlines(), "value": value}
    if draw(st.booleans()):
        result["stdout_lines"] = result["stdout_lines"] + ["not derived"]
    if draw(st.booleans()):
        result = [result, draw(_objects(st.sampled_from(registered)))]
    return registered, result


def _same(a, b):
    """Equal, same types all the way down, and the same identity pattern w.r.t. the input."""
    assert type(a) is type(b)
    if isinstance(a, dict):
        assert list(a) == list(b)
        for key in a:
            _same(a[key], b[key])
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
    else:
        assert a == b or (a != a and b != b)
    from ansible.module_utils._internal._datatag import AnsibleTagHelper

    assert AnsibleTagHelper.tags(a) == AnsibleTagHelper.tags(b)


@SETTINGS
@given(object_case(), placeholders)
def test_mask_object_equals_2_22(case, placeholder):
    registered, value = case
    _secrets, _secrets_object = core_secrets()
    reference, ours = _pair(registered)
    lines_keys = {"stdout": "stdout_lines"}
    # 2.22's mask_object with this masker: its empty-registry shortcut, then its walk
    expected = _secrets_object._Walker(reference, placeholder, lines_keys).mask(value) if reference._forms else value
    got = masking._mask_object_with(ours, value, placeholder, lines_keys)
    _same(expected, got)
    assert (expected is value) == (got is value)


@pytest.mark.parametrize("registered", [["a"], ["aa", "aaab"], ["abab", "ba", "a" * 40 + "b"], ["é", "éé\ud800"]])
def test_dense_texts_equal_2_22(registered):
    """Texts dense with candidates, where the index gives up and the automata answer."""
    reference, ours = _pair(registered)
    for text in ("a" * 20000 + "ab" * 5000 + "b", "é" * 10000 + "éé\ud800" * 100, "a" * 50):
        assert ours.mask_string(text, mask_placeholder="#") == reference.mask_string(text, mask_placeholder="#")
        assert ours._registry.spans(text) == sorted(reference._matcher.spans(text))


# Words sharing prefixes, of every length around the 4-character anchor, so spans sharing a
# start are common: 2.22's matcher reports those by the age of their (anchor, length) bucket,
# and sorts everything once a word shorter than the anchor was added.
order_chars = st.sampled_from(list("aab") + ["é", "😀", "\ud83d"])
order_word = st.text(order_chars, min_size=1, max_size=7)


@SETTINGS
@given(st.lists(order_word, min_size=1, max_size=12), st.lists(st.integers(0, 11), max_size=8), st.text(order_chars, max_size=6))
def test_matcher_spans_in_2_22_order(words, picks, noise_text):
    """Our matcher's spans() equals 2.22's matcher's, order included, after every add."""
    _secrets, _ = core_secrets()
    reference, ours = _secrets._Fixed4Matcher(), masking.SecretMatcher()
    text = "".join(words[i % len(words)] for i in picks) + noise_text + "".join(reversed(words))
    for word in words:
        reference.add(word)
        ours.add(word)
        assert ours.spans(text) == reference.spans(text)


def test_matcher_spans_order_examples():
    """Spans sharing a start: by bucket age, unless a word shorter than the anchor exists."""
    _secrets, _ = core_secrets()
    reference, ours = _secrets._Fixed4Matcher(), masking.SecretMatcher()
    for word in ("abcdef", "abcd", "abcde"):
        reference.add(word)
        ours.add(word)
    assert ours.spans("abcdef") == reference.spans("abcdef") == [(0, 6), (0, 4), (0, 5)]
    reference.add("xy")
    ours.add("xy")
    assert ours.spans("abcdef") == reference.spans("abcdef") == [(0, 4), (0, 5), (0, 6)]
