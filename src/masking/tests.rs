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

/// Mask `input`, searching as for a text of `as_len` bytes (long ones use the automata).
fn mask(registry: &mut SecretRegistry, input: &[u8], placeholder: &[u8], as_len: usize) -> Vec<u8> {
    let snapshot = registry.snapshot_for(as_len).unwrap();
    snapshot
        .mask(input, placeholder)
        .unwrap_or_else(|| input.to_vec())
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
        let input = text_of(&case["input"]);
        // once through the fresh index, once through an automaton
        for as_len in [input.len(), 1 << 20] {
            let got = mask(&mut registry, &input, &placeholder, as_len);
            let expected = case["expected"].as_str().unwrap();
            assert_eq!(String::from_utf8_lossy(&got), expected, "case {}", case["name"]);
        }
    }
}

#[test]
fn shared_cases_survive_tier_changes() {
    // The same cases with the secrets registered among many others, so they sit in both tiers.
    let doc: serde_json::Value = serde_json::from_str(CASES).unwrap();
    let placeholder = text_of(&doc["placeholder_in_cases"]);
    for case in doc["cases"].as_array().unwrap() {
        let mut registry = SecretRegistry::new();
        for i in 0..300 {
            registry
                .register(format!("filler-{i}-\u{1}").as_bytes())
                .unwrap();
            if i % 97 == 0 {
                registry.snapshot_for(1 << 20).unwrap();
            }
        }
        for secret in case["secrets"].as_array().unwrap() {
            registry.register(&text_of(secret)).unwrap();
            registry.snapshot_for(1 << 20).unwrap();
        }
        let got = mask(&mut registry, &text_of(&case["input"]), &placeholder, 1 << 20);
        assert_eq!(
            String::from_utf8_lossy(&got),
            case["expected"].as_str().unwrap(),
            "case {}",
            case["name"]
        );
    }
}

#[test]
fn spans_are_code_points_and_include_overlaps() {
    let mut registry = SecretRegistry::new();
    registry.register(b"0000").unwrap();
    let snapshot = registry.snapshot().unwrap();
    assert_eq!(
        snapshot.spans(b"a000000b", true),
        vec![(1, 5), (2, 6), (3, 7)]
    );
    let text = encode(&[0x1F600, 0xD800, 0x30, 0x30, 0x30, 0x30]);
    assert_eq!(snapshot.spans(&text, false), vec![(2, 6)]);
}

#[test]
fn lone_surrogates_match_only_themselves() {
    let mut registry = SecretRegistry::new();
    registry.register(&encode(&[0xD83D, 0x61])).unwrap();
    let snapshot = registry.snapshot().unwrap();
    // The astral character U+1F600 is not the lone surrogate U+D83D.
    assert_eq!(snapshot.mask(&encode(&[0x1F600, 0x61]), b"*"), None);
    let masked = snapshot
        .mask(&encode(&[0x62, 0xD83D, 0x61, 0xDE00]), b"*")
        .unwrap();
    assert_eq!(decode(&masked).unwrap(), vec![0x62, 0x2A, 0xDE00]);
    // ... and its JSON-escaped form is matched too.
    assert_eq!(snapshot.mask(b"x\\ud83da", b"*").unwrap(), b"x*");
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
fn many_registrations_rebuild_rarely_and_stay_exact() {
    let mut registry = SecretRegistry::new();
    for i in 0..5000 {
        registry
            .register(format!("secret-{i:05}").as_bytes())
            .unwrap();
        let snapshot = registry.snapshot().unwrap();
        let text = format!("before secret-{i:05} after");
        assert_eq!(
            snapshot.mask(text.as_bytes(), b"*").unwrap(),
            b"before * after"
        );
    }
    let snapshot = registry.snapshot_for(1 << 30).unwrap();
    assert_eq!(
        snapshot.mask(b"secret-00000secret-04999", b"*").unwrap(),
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
