use super::*;
use crate::masking::text::encode as encode_code_points;

/// Python's `str.replace(old, new)` over code points, written the obvious way.
fn py_replace(text: &[u32], old: &[u32], new: &[u32]) -> Vec<u32> {
    let mut out = Vec::new();
    if old.is_empty() {
        for &c in text {
            out.extend_from_slice(new);
            out.push(c);
        }
        out.extend_from_slice(new);
        return out;
    }
    let mut i = 0;
    while i < text.len() {
        if text[i..].starts_with(old) {
            out.extend_from_slice(new);
            i += old.len();
        } else {
            out.push(text[i]);
            i += 1;
        }
    }
    out
}

/// ansible-core's per-string work: exact test, then one replace per value, in the given order.
fn reference(text: &[u32], values: &[Vec<u32>]) -> Scrubbed {
    if values.iter().any(|v| v == text) {
        return Scrubbed::Exact;
    }
    let mask: Vec<u32> = MASK.iter().map(|&b| b as u32).collect();
    let mut current = text.to_vec();
    for v in values {
        current = py_replace(&current, v, &mask);
    }
    if current == text {
        Scrubbed::Unchanged
    } else {
        Scrubbed::Replaced(encode_code_points(&current))
    }
}

/// Python's `sorted(values, key=len, reverse=True)` (stable).
fn ansible_order(mut values: Vec<Vec<u32>>) -> Vec<Vec<u32>> {
    values.sort_by_key(|v| std::cmp::Reverse(v.len())); // stable, like sorted()
    values
}

fn scrub(text: &[u32], values: &[Vec<u32>]) -> Scrubbed {
    let patterns = NoLogPatterns::new(values.iter().map(|v| encode_code_points(v)));
    patterns.scrub(&encode_code_points(text))
}

fn cps(s: &str) -> Vec<u32> {
    s.chars().map(|c| c as u32).collect()
}

fn check(text: &str, values: &[&str]) {
    let values = ansible_order(values.iter().map(|v| cps(v)).collect());
    let text = cps(text);
    assert_eq!(
        scrub(&text, &values),
        reference(&text, &values),
        "text {text:?} values {values:?}"
    );
}

#[test]
fn longer_value_wins_over_an_earlier_shorter_one() {
    check("abcd", &["ab", "bcd"]);
    assert_eq!(
        scrub(&cps("abcd"), &ansible_order(vec![cps("ab"), cps("bcd")])),
        Scrubbed::Replaced(b"a********".to_vec())
    );
}

#[test]
fn contained_and_overlapping_values() {
    check("abcb", &["abc", "b"]);
    check("aaaa", &["aa"]);
    check("aaaaa", &["aa", "aaa"]);
    check("xabcabcabx", &["abca", "cab", "bx", "x"]);
    check("secret secretive", &["secret", "secretive", "cret"]);
}

#[test]
fn exact_match_and_unchanged() {
    assert_eq!(scrub(&cps("pw"), &[cps("pw")]), Scrubbed::Exact);
    assert_eq!(scrub(&cps(""), &[cps("")]), Scrubbed::Exact);
    assert_eq!(scrub(&cps("nothing"), &[cps("pw")]), Scrubbed::Unchanged);
    assert_eq!(scrub(&cps("nothing"), &[]), Scrubbed::Unchanged);
    assert_eq!(scrub(&cps(""), &[cps("pw")]), Scrubbed::Unchanged);
}

#[test]
fn empty_values_mask_between_every_character() {
    check("ab", &[""]);
    check("ab", &["", ""]);
    check("a pw b", &["pw", ""]);
    check("", &["x", ""]);
}

#[test]
fn values_with_stars_are_chained() {
    check("a*b", &["*", "*"]);
    check("pw*", &["pw", "**"]);
    check("x********y", &["*x", "y*", "***"]);
}

#[test]
fn surrogates_astral_and_wide_characters() {
    let text = vec![0x61, 0xD83D, 0xDE00, 0x1F600, 0xE9, 0xD83D, 0x62];
    let values = ansible_order(vec![vec![0xD83D], vec![0x1F600], vec![0xDE00, 0x1F600]]);
    assert_eq!(scrub(&text, &values), reference(&text, &values));
}

#[test]
fn any_within_matches_the_python_test() {
    let p = NoLogPatterns::new(["23", "9"]);
    assert!(p.any_within(b"1234"));
    assert!(!p.any_within(b"1.5"));
    assert!(NoLogPatterns::new([""]).any_within(b"1"));
    assert!(!NoLogPatterns::new(Vec::<&str>::new()).any_within(b"1"));
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn string(&mut self, alphabet: &[u32], max_len: usize) -> Vec<u32> {
        let len = self.below(max_len + 1);
        (0..len)
            .map(|_| alphabet[self.below(alphabet.len())])
            .collect()
    }
}

#[test]
fn random_texts_and_values_agree_with_the_chain() {
    let alphabets: [&[u32]; 3] = [
        &[0x61, 0x62],
        &[0x61, 0x62, 0x2A, 0xE9],
        &[0x61, 0x2A, 0xD800, 0xDC00, 0x10000, 0x1F600, 0x4E2D],
    ];
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for round in 0..40_000 {
        let alphabet = alphabets[round % alphabets.len()];
        let count = rng.below(6);
        let values = ansible_order((0..count).map(|_| rng.string(alphabet, 4)).collect());
        let text = if rng.below(8) == 0 && !values.is_empty() {
            values[0].clone()
        } else {
            rng.string(alphabet, 24)
        };
        assert_eq!(
            scrub(&text, &values),
            reference(&text, &values),
            "text {text:?} values {values:?}"
        );
    }
}

#[test]
fn self_similar_values_beyond_the_budget_still_agree() {
    let values = ansible_order((1..=40).map(|n| vec![0x61; n]).collect());
    let text = vec![0x61; 5000];
    assert_eq!(scrub(&text, &values), reference(&text, &values));
}

#[test]
fn float_text_matchable_only_for_values_made_of_float_characters() {
    assert!(!NoLogPatterns::new(["secret", "1x"]).float_text_matchable());
    assert!(NoLogPatterns::new(["secret", "1.5"]).float_text_matchable());
    assert!(NoLogPatterns::new(["inf"]).float_text_matchable());
    assert!(NoLogPatterns::new(["e+16"]).float_text_matchable());
    assert!(NoLogPatterns::new(["x", ""]).float_text_matchable());
    assert!(!NoLogPatterns::new(Vec::<&str>::new()).float_text_matchable());
}

#[test]
fn int_text_matchable_only_for_values_made_of_digits_and_minus() {
    assert!(!NoLogPatterns::new(["secret", "1.5"]).int_text_matchable());
    assert!(NoLogPatterns::new(["secret", "42"]).int_text_matchable());
    assert!(NoLogPatterns::new(["-"]).int_text_matchable());
    assert!(NoLogPatterns::new(["x", ""]).int_text_matchable());
    assert!(!NoLogPatterns::new(Vec::<&str>::new()).int_text_matchable());
}
