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
        snapshot.spans(b"a000000b", true).unwrap(),
        vec![(1, 5), (2, 6), (3, 7)]
    );
    let text = encode(&[0x1F600, 0xD800, 0x30, 0x30, 0x30, 0x30]);
    assert_eq!(snapshot.spans(&text, false).unwrap(), vec![(2, 6)]);
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
