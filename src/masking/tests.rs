//! The shared conformance cases, and the behaviour around them, on the plain-Rust engine.

use super::text::{decode, encode};
use super::*;

const CASES: &str = include_str!("../../tests/masking/secret_masking_cases.json");

/// Python `str` from a JSON string value: serde gives UTF-8, which is generalized UTF-8.
fn text_of(value: &serde_json::Value) -> Vec<u8> {
    value
        .as_str()
        .expect("case strings are strings")
        .as_bytes()
        .to_vec()
}

/// Mask `input` through the anchor index and, separately, through the automata alone; both
/// must agree, and the result is returned.
fn mask_both_ways(registry: &mut SecretRegistry, input: &[u8], placeholder: &[u8]) -> Vec<u8> {
    let by_index = registry
        .mask(input, placeholder)
        .unwrap()
        .unwrap_or_else(|| input.to_vec());
    let snapshot = registry.complete_snapshot(input.len()).unwrap();
    let mut spans = snapshot.automata_spans(input).unwrap();
    spans.sort_unstable();
    let by_automata =
        replace_spans(input, merge_spans(spans), placeholder).unwrap_or_else(|| input.to_vec());
    assert_eq!(by_index, by_automata);
    by_index
}

fn check_case(registry: &mut SecretRegistry, case: &serde_json::Value, placeholder: &[u8]) {
    let got = mask_both_ways(registry, &text_of(&case["input"]), placeholder);
    let expected = case["expected"].as_str().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&got),
        expected,
        "case {}",
        case["name"]
    );
}

#[test]
fn shared_conformance_cases() {
    let doc: serde_json::Value = serde_json::from_str(CASES).unwrap();
    let placeholder = text_of(&doc["placeholder_in_cases"]);
    let cases = doc["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 52);
    for case in cases {
        let mut registry = SecretRegistry::new();
        for secret in case["secrets"].as_array().unwrap() {
            registry.register(&text_of(secret)).unwrap();
        }
        check_case(&mut registry, case, &placeholder);
    }
}

#[test]
fn shared_cases_survive_level_changes() {
    // The same cases with the secrets registered among many others, built in between, so
    // they sit in different automaton levels.
    let doc: serde_json::Value = serde_json::from_str(CASES).unwrap();
    let placeholder = text_of(&doc["placeholder_in_cases"]);
    for case in doc["cases"].as_array().unwrap() {
        let mut registry = SecretRegistry::new();
        for i in 0..300 {
            registry
                .register(format!("filler-{i}-\u{1}").as_bytes())
                .unwrap();
            if i % 97 == 0 {
                registry.complete_snapshot(0).unwrap();
            }
        }
        for secret in case["secrets"].as_array().unwrap() {
            registry.register(&text_of(secret)).unwrap();
            registry.complete_snapshot(1 << 20).unwrap();
        }
        check_case(&mut registry, case, &placeholder);
    }
}

#[test]
fn spans_are_code_points_and_include_overlaps() {
    let mut registry = SecretRegistry::new();
    registry.register(b"0000").unwrap();
    let snapshot = registry.snapshot();
    assert_eq!(
        snapshot.spans(b"a000000b", true, true).unwrap(),
        vec![(1, 5), (2, 6), (3, 7)]
    );
    let text = encode(&[0x1F600, 0xD800, 0x30, 0x30, 0x30, 0x30]);
    assert_eq!(snapshot.spans(&text, false, true).unwrap(), vec![(2, 6)]);
}

#[test]
fn dense_text_falls_back_to_the_automata() {
    let mut registry = SecretRegistry::new();
    registry.register(b"a").unwrap();
    registry
        .register(b"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab")
        .unwrap();
    let text = vec![b'a'; 100_000];
    // The index alone gives up on this text, and no automaton exists yet.
    assert_eq!(registry.snapshot().byte_spans(&text), None);
    assert_eq!(registry.mask(&text, b"*").unwrap().unwrap(), b"*");
    // Now the automata exist and the snapshot answers by them.
    assert_eq!(
        registry.snapshot().byte_spans(&text).unwrap().len(),
        100_000
    );
}

#[test]
fn lone_surrogates_match_only_themselves() {
    let mut registry = SecretRegistry::new();
    registry.register(&encode(&[0xD83D, 0x61])).unwrap();
    // The astral character U+1F600 is not the lone surrogate U+D83D.
    assert_eq!(
        mask_both_ways(&mut registry, &encode(&[0x1F600, 0x61]), b"*"),
        encode(&[0x1F600, 0x61])
    );
    let masked = mask_both_ways(&mut registry, &encode(&[0x62, 0xD83D, 0x61, 0xDE00]), b"*");
    assert_eq!(decode(&masked).unwrap(), vec![0x62, 0x2A, 0xDE00]);
    // ... and its JSON-escaped form is matched too.
    assert_eq!(mask_both_ways(&mut registry, b"x\\ud83da", b"*"), b"x*");
}

#[test]
fn registration_reports_new_stripped_secrets() {
    let mut registry = SecretRegistry::new();
    assert_eq!(registry.register(b" pw\n").unwrap(), Some(b"pw".to_vec()));
    assert_eq!(registry.register(b"pw").unwrap(), None);
    assert_eq!(registry.register(b" \t").unwrap(), None);
    assert_eq!(registry.secret_count(), 1);
}

#[test]
fn secrets_in_json_returns_literal_secrets() {
    let mut registry = SecretRegistry::new();
    registry.register("pä\"ss".as_bytes()).unwrap();
    registry.register(b"plain").unwrap();
    let mut found = registry
        .secrets_in_json(b"{\"a\": \"p\\u00e4\\\"ss\", \"b\": \"plain\"}")
        .unwrap();
    found.sort();
    assert_eq!(found, vec![b"plain".to_vec(), "pä\"ss".as_bytes().to_vec()]);
}

#[test]
fn a_secret_that_is_a_json_form_of_another_reports_the_other() {
    let mut registry = SecretRegistry::new();
    registry.register(b"a\\\"b").unwrap();
    registry.register(b"a\"b").unwrap();
    assert_eq!(
        registry.secrets_in_json(b"x a\\\"b x").unwrap(),
        vec![b"a\"b".to_vec()]
    );
}

#[test]
fn many_registrations_stay_exact() {
    let mut registry = SecretRegistry::new();
    for i in 0..1000 {
        registry
            .register(format!("secret-{i:05}").as_bytes())
            .unwrap();
        if i % 7 == 0 {
            // a long text now and then builds the automata in levels
            registry.complete_snapshot(1 << 16).unwrap();
        }
        let text = format!("before secret-{i:05} after");
        assert_eq!(
            mask_both_ways(&mut registry, text.as_bytes(), b"*"),
            b"before * after"
        );
    }
    assert_eq!(
        mask_both_ways(&mut registry, b"secret-00000secret-00999", b"*"),
        b"*"
    );
}

#[test]
fn merge_joins_overlapping_and_touching_spans() {
    assert_eq!(
        merge_spans(vec![(0, 2), (2, 4), (5, 6), (5, 9), (6, 7)]),
        vec![(0, 4), (5, 9)]
    );
    assert_eq!(merge_spans(vec![]), vec![]);
}

/// Every occurrence of every form, by trying each form at each position.
fn brute_force_spans(forms: &[Vec<u8>], text: &[u8]) -> Vec<(usize, usize)> {
    let mut spans: Vec<(usize, usize)> = Vec::new();
    for start in 0..text.len() {
        for form in forms {
            if text[start..].starts_with(form) {
                spans.push((start, start + form.len()));
            }
        }
    }
    spans.sort_unstable();
    spans.dedup();
    spans
}

#[test]
fn skipping_scan_finds_every_occurrence() {
    // Small alphabets make occurrences, near-misses and overlaps frequent; forms arrive longest
    // first and then shorter, so the skip length shrinks while grams of longer forms remain,
    // and enough of them arrive to grow the filters.
    let mut seed: u64 = 0x005E_C2E7;
    let mut next = move |bound: usize| {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((seed >> 33) as usize) % bound
    };
    let mut index_answered = 0;
    for round in 0..40 {
        let alphabet: &[u8] = if round % 2 == 0 {
            b"ab"
        } else {
            b"abcdefgh\xc3\xa9"
        };
        let mut matcher = SecretMatcher::new();
        let mut index = super::anchors::AnchorIndex::default();
        let mut forms: Vec<Vec<u8>> = Vec::new();
        let count = if round % 10 == 9 { 3000 } else { 1 + next(40) };
        for i in 0..count {
            let longest = 24usize.saturating_sub(i * 20 / count).max(1);
            let len = 1 + next(longest);
            let form: Vec<u8> = (0..len).map(|_| alphabet[next(alphabet.len())]).collect();
            if matcher.add(&form) {
                index.add(std::sync::Arc::from(&form[..]));
                forms.push(form);
            }
            if i % 500 == 0 || i + 1 == count {
                let text: Vec<u8> = (0..2000).map(|_| alphabet[next(alphabet.len())]).collect();
                let mut text = text;
                // Plant some forms whole, some cut short.
                for _ in 0..20 {
                    let form = &forms[next(forms.len())];
                    let at = next(text.len());
                    let cut = form.len() - next(2).min(form.len() - 1);
                    let end = (at + cut).min(text.len());
                    text[at..end].copy_from_slice(&form[..end - at]);
                }
                let expected = brute_force_spans(&forms, &text);
                let mut by_index = Vec::new();
                if index.spans(&text, &mut by_index) {
                    index_answered += 1;
                    by_index.sort_unstable();
                    assert_eq!(by_index, expected, "round {round}");
                }
                assert_eq!(
                    matcher.byte_spans(&text).unwrap(),
                    expected,
                    "round {round}"
                );
                let snapshot = matcher.complete_snapshot(text.len()).unwrap();
                let mut by_automata = snapshot.automata_spans(&text).unwrap();
                by_automata.sort_unstable();
                assert_eq!(by_automata, expected, "round {round}");
            }
        }
    }
    assert!(
        index_answered > 20,
        "the index answered only {index_answered} times"
    );
}
