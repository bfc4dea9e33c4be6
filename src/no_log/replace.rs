//! `remove_values`' string work: `value in no_log_strings`, then
//! `for omit_me in no_log_strings: value = value.replace(omit_me, "********")`.
//!
//! Why one multi-pattern pass gives the same result (when no value contains `*`):
//! a later value can then never match inside, or across the edge of, a `********` an earlier
//! value put in, so each `replace` only ever sees pieces of the original text.  Value `k`'s
//! `replace` takes, left to right, every occurrence that overlaps neither an occurrence an earlier
//! value took nor the previous one it took itself.  So: find every occurrence of every value once
//! (overlapping included), then walk the values in ansible-core's order and keep each occurrence
//! that overlaps nothing kept so far.  A repeated value finds nothing the second time and is
//! dropped.  The empty value (always last, being shortest) inserts `********` between every
//! character of what the others left; it is applied at the end, once per time it was given.
//! When some value contains `*`, the replacements are chained one by one, exactly as ansible-core.

use std::collections::{BTreeMap, HashSet};

use aho_corasick::{AhoCorasick, Input, MatchKind};
use memchr::memmem::Finder;

use crate::masking::text::char_starts;

/// What ansible-core puts in place of each occurrence of a no_log value.
pub const MASK: &[u8] = b"********";

/// How many overlapping occurrences (per byte of text) the one-pass strategy collects before
/// handing the text to the chained replacements instead (pathological, self-similar values).
const OCCURRENCES_PER_BYTE: usize = 8;

/// Up to this many distinct values, each is first looked for on its own (see `choose_strategy`).
const FEW_VALUES: usize = 4;

/// The result of scrubbing one string.
#[derive(Debug, PartialEq, Eq)]
pub enum Scrubbed {
    /// The string equals a no_log value: ansible-core returns its fixed placeholder.
    Exact,
    /// Nothing to replace: the very same string comes back.
    Unchanged,
    /// The string with every no_log value replaced.
    Replaced(Vec<u8>),
}

enum Strategy {
    /// No non-empty value.
    Nothing,
    /// One distinct non-empty value without `*`.
    Single(Finder<'static>),
    /// Several distinct non-empty values, none with `*`: a fast leftmost scan finds where
    /// occurrences are, an overlapping search around those places finds them all.
    OnePass {
        quick: AhoCorasick,
        search: AhoCorasick,
        lengths: Vec<usize>,
        few: Option<Vec<Finder<'static>>>,
    },
    /// Some value contains `*`: one replace per value, in order (duplicates kept).
    Chained,
}

/// The no_log values of one `remove_values`/`sanitize_keys` call, compiled once.
pub struct NoLogPatterns {
    /// Non-empty values in ansible-core's order (duplicates kept, for `Chained`).
    ordered: Vec<Finder<'static>>,
    exact: HashSet<Vec<u8>>,
    /// Byte lengths of the values (sorted), so most strings skip hashing for the exact test.
    exact_lengths: Vec<usize>,
    empty_count: usize,
    /// Byte length of the shortest non-empty value (`usize::MAX` when there is none).
    shortest: usize,
    /// Could some value be found in the text of a float (`repr` uses only `FLOAT_TEXT_BYTES`)?
    float_text_matchable: bool,
    /// Could some value be found in the decimal text of an int (only `INT_TEXT_BYTES`)?
    int_text_matchable: bool,
    strategy: Strategy,
}

/// Every byte `repr(float)` can produce: digits, sign, point, exponent, `inf`, `nan`.
const FLOAT_TEXT_BYTES: &[u8] = b"0123456789.-+einfa";
/// Every byte the decimal text of an int can have: digits and a minus sign.
const INT_TEXT_BYTES: &[u8] = b"0123456789-";

/// True when some value (empty ones included) is made only of `alphabet`'s bytes, so a text made
/// of them could equal or contain it.
fn matchable_in(empty_count: usize, ordered: &[Finder<'static>], alphabet: &[u8]) -> bool {
    empty_count > 0
        || ordered
            .iter()
            .any(|f| f.needle().iter().all(|b| alphabet.contains(b)))
}

impl NoLogPatterns {
    /// `values` in the order ansible-core applies them (sorted by length, longest first).
    pub fn new<I, V>(values: I) -> Self
    where
        I: IntoIterator<Item = V>,
        V: AsRef<[u8]>,
    {
        let mut ordered = Vec::new();
        let mut exact = HashSet::new();
        let mut exact_lengths = Vec::new();
        let mut empty_count = 0;
        for value in values {
            let value = value.as_ref();
            exact.insert(value.to_vec());
            exact_lengths.push(value.len());
            if value.is_empty() {
                empty_count += 1;
            } else {
                ordered.push(Finder::new(value).into_owned());
            }
        }
        exact_lengths.sort_unstable();
        exact_lengths.dedup();
        let strategy = choose_strategy(&ordered);
        let float_text_matchable = matchable_in(empty_count, &ordered, FLOAT_TEXT_BYTES);
        let int_text_matchable = matchable_in(empty_count, &ordered, INT_TEXT_BYTES);
        let shortest = ordered
            .iter()
            .map(|f| f.needle().len())
            .min()
            .unwrap_or(usize::MAX);
        NoLogPatterns {
            shortest,
            ordered,
            exact,
            exact_lengths,
            empty_count,
            float_text_matchable,
            int_text_matchable,
            strategy,
        }
    }

    /// `text in no_log_strings`.
    pub fn is_exact(&self, text: &[u8]) -> bool {
        self.exact_lengths.binary_search(&text.len()).is_ok() && self.exact.contains(text)
    }

    /// `false` when no value can equal or be found in any float's `repr`, which then need not
    /// be computed.
    pub fn float_text_matchable(&self) -> bool {
        self.float_text_matchable
    }

    /// `false` when no value can equal or be found in the decimal text of any int.
    pub fn int_text_matchable(&self) -> bool {
        self.int_text_matchable
    }

    /// `any(omit_me in text for omit_me in no_log_strings)`.
    pub fn any_within(&self, text: &[u8]) -> bool {
        if self.empty_count > 0 {
            return true;
        }
        if text.len() < self.shortest {
            return false;
        }
        match &self.strategy {
            Strategy::Nothing => false,
            Strategy::Single(finder) => finder.find(text).is_some(),
            Strategy::OnePass { quick, .. } => quick.is_match(text),
            Strategy::Chained => self.ordered.iter().any(|f| f.find(text).is_some()),
        }
    }

    /// What `_remove_values_conditions` does to one string.
    pub fn scrub(&self, text: &[u8]) -> Scrubbed {
        if self.is_exact(text) {
            return Scrubbed::Exact;
        }
        match self.replace_all(text) {
            Some(out) => Scrubbed::Replaced(out),
            None => Scrubbed::Unchanged,
        }
    }

    /// The chain of replacements; `None` when nothing changed.
    pub fn replace_all(&self, text: &[u8]) -> Option<Vec<u8>> {
        let replaced = if text.len() < self.shortest {
            None // most strings of a result are shorter than any secret
        } else {
            self.replace_non_empty(text)
        };
        if self.empty_count == 0 {
            return replaced;
        }
        let mut out = replaced.unwrap_or_else(|| text.to_vec());
        for _ in 0..self.empty_count {
            out = mask_between_chars(&out);
        }
        Some(out)
    }

    fn replace_non_empty(&self, text: &[u8]) -> Option<Vec<u8>> {
        match &self.strategy {
            Strategy::Nothing => None,
            Strategy::Single(finder) => replace_one(text, finder),
            Strategy::OnePass {
                quick,
                search,
                lengths,
                few,
            } => {
                if few
                    .as_ref()
                    .is_some_and(|finders| finders.iter().all(|f| f.find(text).is_none()))
                {
                    None
                } else {
                    one_pass(text, quick, search, lengths).unwrap_or_else(|| self.chained(text))
                }
            }
            Strategy::Chained => self.chained(text),
        }
    }

    fn chained(&self, text: &[u8]) -> Option<Vec<u8>> {
        let mut current: Option<Vec<u8>> = None;
        for finder in &self.ordered {
            let input = current.as_deref().unwrap_or(text);
            if let Some(next) = replace_one(input, finder) {
                current = Some(next);
            }
        }
        current
    }
}

fn choose_strategy(ordered: &[Finder<'static>]) -> Strategy {
    if ordered.is_empty() {
        return Strategy::Nothing;
    }
    if ordered.iter().any(|f| f.needle().contains(&b'*')) {
        return Strategy::Chained;
    }
    let mut seen = HashSet::new();
    let distinct: Vec<&[u8]> = ordered
        .iter()
        .map(|f| f.needle())
        .filter(|n| seen.insert(*n))
        .collect();
    if distinct.len() == 1 {
        return Strategy::Single(Finder::new(distinct[0]).into_owned());
    }
    // Only leftmost searches get the SIMD prefilters; overlapping ones need Standard.
    let quick = AhoCorasick::builder()
        .match_kind(MatchKind::LeftmostFirst)
        .build(&distinct);
    let search = AhoCorasick::builder()
        .match_kind(MatchKind::Standard)
        .build(&distinct);
    match (quick, search) {
        (Ok(quick), Ok(search)) => Strategy::OnePass {
            quick,
            search,
            lengths: distinct.iter().map(|n| n.len()).collect(),
            // With a few values, memmem's SIMD search of each beats the automaton's scan for the
            // common answer "nowhere" (the automaton's prefilters are weak for 2-3 values).
            few: (distinct.len() <= FEW_VALUES).then(|| {
                distinct
                    .iter()
                    .map(|n| Finder::new(n).into_owned())
                    .collect()
            }),
        },
        _ => Strategy::Chained, // too large for the automaton: the chain gives the same answer
    }
}

/// `text.replace(needle, MASK)`: leftmost, non-overlapping; `None` when there is no match.
fn replace_one(text: &[u8], finder: &Finder<'_>) -> Option<Vec<u8>> {
    let mut matches = finder.find_iter(text).peekable();
    matches.peek()?;
    let width = finder.needle().len();
    let mut out = Vec::with_capacity(text.len());
    let mut copied = 0;
    for start in matches {
        out.extend_from_slice(&text[copied..start]);
        out.extend_from_slice(MASK);
        copied = start + width;
    }
    out.extend_from_slice(&text[copied..]);
    Some(out)
}

/// The one-pass equivalent of the chain (see the module comment).  `Some(None)`: no change;
/// `None`: too many overlapping occurrences, use the chain.
///
/// Every occurrence starts inside a match of the leftmost scan (an occurrence it skipped
/// overlaps the match it reported instead), so the overlapping search only runs from each such
/// match's start to its end plus the longest value.
fn one_pass(
    text: &[u8],
    quick: &AhoCorasick,
    search: &AhoCorasick,
    lengths: &[usize],
) -> Option<Option<Vec<u8>>> {
    let longest = lengths.iter().copied().max().unwrap_or(0);
    let mut starts: Vec<Vec<usize>> = vec![Vec::new(); lengths.len()];
    let budget = text
        .len()
        .saturating_mul(OCCURRENCES_PER_BYTE)
        .saturating_add(4096);
    let mut found = 0usize;
    for cluster in quick.find_iter(text) {
        let window_end = (cluster.end() - 1).saturating_add(longest).min(text.len());
        let window = Input::new(text).span(cluster.start()..window_end);
        for m in search.find_overlapping_iter(window) {
            if m.start() >= cluster.end() {
                continue; // found again from the next cluster
            }
            // Occurrences of one value have one length, so they arrive in order of start.
            starts[m.pattern().as_usize()].push(m.start());
            found += 1;
            if found > budget {
                return None;
            }
        }
    }
    if found == 0 {
        return Some(None);
    }
    let mut kept: BTreeMap<usize, usize> = BTreeMap::new();
    for (value_starts, &width) in starts.iter().zip(lengths) {
        for &start in value_starts {
            let end = start + width;
            // Kept intervals are disjoint: only the last one starting before `end` can overlap.
            if let Some((_, &kept_end)) = kept.range(..end).next_back() {
                if kept_end > start {
                    continue;
                }
            }
            kept.insert(start, end);
        }
    }
    let mut out = Vec::with_capacity(text.len());
    let mut copied = 0;
    for (start, end) in kept {
        out.extend_from_slice(&text[copied..start]);
        out.extend_from_slice(MASK);
        copied = end;
    }
    out.extend_from_slice(&text[copied..]);
    Some(Some(out))
}

/// `text.replace("", MASK)`: the mask before every character and at the end.
fn mask_between_chars(text: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len() + MASK.len() * (text.len() + 1));
    let mut copied = 0;
    for start in char_starts(text) {
        out.extend_from_slice(&text[copied..start]);
        out.extend_from_slice(MASK);
        copied = start;
    }
    out.extend_from_slice(&text[copied..]);
    out.extend_from_slice(MASK);
    out
}

#[cfg(test)]
#[path = "replace_tests.rs"]
mod tests;
