//! Generated inputs: the matcher against a naive reference (every occurrence of every form,
//! found by comparing at each offset), and masking against a naive merge-and-replace.

use proptest::prelude::*;

use super::{merge_spans, Searchable, SecretMatcher, SecretRegistry};

/// Every (start, end) where some form occurs in `text`, sorted, each once.
fn naive_spans(forms: &[Vec<u8>], text: &[u8]) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    for form in forms.iter().filter(|f| !f.is_empty()) {
        for start in 0..text.len() {
            if text[start..].starts_with(form) {
                spans.push((start, start + form.len()));
            }
        }
    }
    spans.sort_unstable();
    spans.dedup();
    spans
}

/// `text` with each run of overlapping or touching occurrences replaced by `placeholder`.
fn naive_mask(forms: &[Vec<u8>], text: &[u8], placeholder: &[u8]) -> Vec<u8> {
    let mut covered: Vec<(usize, usize)> = Vec::new();
    for (start, end) in naive_spans(forms, text) {
        match covered.last_mut() {
            Some(last) if start <= last.1 => last.1 = last.1.max(end),
            _ => covered.push((start, end)),
        }
    }
    let mut out = Vec::new();
    let mut pos = 0;
    for (start, end) in covered {
        out.extend_from_slice(&text[pos..start]);
        out.extend_from_slice(placeholder);
        pos = end;
    }
    out.extend_from_slice(&text[pos..]);
    out
}

/// Text over a small alphabet (multi-byte characters included) so forms really occur.
fn text(max: usize) -> impl Strategy<Value = String> {
    proptest::collection::vec(
        prop_oneof!["a", "b", "ab", "é", "\u{1F600}", " ", "\""],
        0..max,
    )
    .prop_map(|parts| parts.concat())
}

fn forms() -> impl Strategy<Value = Vec<Vec<u8>>> {
    proptest::collection::vec(text(6).prop_map(String::into_bytes), 0..12)
}

proptest! {

    #[test]
    fn spans_are_every_occurrence(forms in forms(), texts in proptest::collection::vec(text(80), 1..4)) {
        let mut matcher = SecretMatcher::new();
        for form in &forms {
            matcher.add(form);
        }
        for text in &texts {
            let found = matcher.byte_spans(text.as_bytes()).expect("search failed");
            prop_assert_eq!(found, naive_spans(&forms, text.as_bytes()));
        }
    }

    #[test]
    fn forms_added_between_searches(batches in proptest::collection::vec(forms(), 1..5), text in text(120)) {
        let mut matcher = SecretMatcher::new();
        let mut all = Vec::new();
        for batch in &batches {
            for form in batch {
                matcher.add(form);
            }
            all.extend(batch.iter().cloned());
            // A search between batches builds a level; the next batch lands in another.
            let found = matcher.byte_spans(text.as_bytes()).expect("search failed");
            prop_assert_eq!(found, naive_spans(&all, text.as_bytes()));
            let complete = matcher.complete_snapshot(text.len() * 1000).expect("build failed");
            prop_assert_eq!(complete.byte_spans(text.as_bytes()), Some(naive_spans(&all, text.as_bytes())));
        }
    }

    #[test]
    fn mask_replaces_merged_runs(forms in forms(), text in text(80), placeholder in "[$A-Z]{0,4}") {
        let mut matcher = SecretMatcher::new();
        for form in &forms {
            matcher.add(form);
        }
        let snapshot = matcher.complete_snapshot(text.len()).expect("build failed");
        let masked = snapshot.mask(text.as_bytes(), placeholder.as_bytes()).expect("search failed");
        let expected = naive_mask(&forms, text.as_bytes(), placeholder.as_bytes());
        prop_assert_eq!(masked.unwrap_or_else(|| text.clone().into_bytes()), expected);
    }

    #[test]
    fn merge_spans_covers_the_same_bytes(mut spans in proptest::collection::vec((0usize..50, 0usize..8), 0..20)) {
        let spans: Vec<(usize, usize)> = {
            spans.sort_unstable();
            spans.iter().map(|&(s, l)| (s, s + l)).collect()
        };
        let merged = merge_spans(spans.clone());
        let covers = |set: &[(usize, usize)], i: usize| set.iter().any(|&(s, e)| s <= i && i < e);
        for i in 0..60 {
            prop_assert_eq!(covers(&merged, i), covers(&spans, i));
        }
        for pair in merged.windows(2) {
            prop_assert!(pair[0].1 < pair[1].0);
        }
    }

    #[test]
    fn registry_never_panics(secrets in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..12), 0..10), text in proptest::collection::vec(any::<u8>(), 0..200)) {
        let mut registry = SecretRegistry::new();
        for secret in &secrets {
            // Bytes that are not generalized UTF-8 must be refused, never panic.
            let _ = registry.register(secret);
        }
        let _ = registry.secrets_in_json(&text);
        if let Ok(snapshot) = registry.complete_snapshot(text.len()) {
            let _ = snapshot.mask(&text, b"$REDACTED$");
        }
    }
}
