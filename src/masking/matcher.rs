//! Finding every occurrence of every registered form, overlapping ones included.
//!
//! Secrets arrive one at a time all run long, with a mask between most of them, so adding a
//! form must not rebuild an automaton.  New forms go into `fresh`, a hash index that needs no
//! build (see `fresh`) and serves short texts.  The first long text moves them into a level
//! with its own automaton; levels of similar size are merged, like an LSM tree, so a form
//! takes part in O(log n) rebuilds in all and a search runs at most O(log n) automata.  A long
//! text, where every extra automaton costs a pass over it, first merges all levels into one
//! when that rebuild costs less than the extra passes.

use std::collections::HashSet;
use std::sync::Arc;

use aho_corasick::{AhoCorasick, AhoCorasickKind, MatchKind};

use super::fresh::FreshIndex;
use super::text::CodePointCursor;
use super::MaskError;

/// Texts at least this long are searched with automata only.
const FRESH_TEXT_MAX: usize = 4096;
/// Above this many pattern bytes an automaton is an NFA (smaller, slower) instead of a DFA.
const DFA_MAX_BYTES: usize = 64 * 1024;
/// A fast (DFA) build costs about this many scanned text bytes per pattern byte.
const FAST_BUILD_COST: usize = 32;
/// A rebuild costs about this many scanned text bytes per pattern byte.
const REBUILD_COST: usize = 16;

#[derive(Default)]
struct Tier {
    forms: Vec<Arc<[u8]>>,
    automaton: Option<Arc<AhoCorasick>>,
    /// Built for scanning speed (DFA when small enough) rather than build speed.
    fast: bool,
}

impl Tier {
    /// `lasting` says the level is likely to stay as it is for many searches (a bulk
    /// registration, or all levels merged for a long text), so a slower-to-build, faster
    /// automaton pays off.
    fn rebuild(&mut self, lasting: bool) -> Result<(), MaskError> {
        self.automaton = if self.forms.is_empty() {
            None
        } else {
            Some(Arc::new(build(&self.forms, lasting)?))
        };
        self.fast = lasting;
        Ok(())
    }

    fn bytes(&self) -> usize {
        self.forms.iter().map(|f| f.len()).sum()
    }
}

fn build(forms: &[Arc<[u8]>], lasting: bool) -> Result<AhoCorasick, MaskError> {
    let bytes: usize = forms.iter().map(|f| f.len()).sum();
    // Levels that will soon be merged again are rebuilt often: the cheapest build wins.
    let kind = if lasting && bytes <= DFA_MAX_BYTES {
        AhoCorasickKind::DFA
    } else {
        // The noncontiguous NFA builds a little faster but scans several times slower.
        AhoCorasickKind::ContiguousNFA
    };
    // Measured on log text with random secrets: a DFA is faster without the prefilter (secrets
    // start with common bytes, so it keeps stopping); an NFA gains from it.
    AhoCorasick::builder()
        .match_kind(MatchKind::Standard)
        .kind(Some(kind))
        .prefilter(kind != AhoCorasickKind::DFA)
        .build(forms.iter().map(|f| &f[..]))
        .or_else(|_| {
            AhoCorasick::builder()
                .match_kind(MatchKind::Standard)
                .build(forms.iter().map(|f| &f[..]))
        })
        .map_err(|_| MaskError::Build)
}

/// The registered forms (generalized UTF-8), searchable for all their occurrences.
#[derive(Default)]
pub struct SecretMatcher {
    known: HashSet<Arc<[u8]>>,
    /// Automaton levels, oldest (largest) first.
    levels: Vec<Tier>,
    /// The newest forms, in no automaton yet.
    fresh: Arc<FreshIndex>,
}

impl SecretMatcher {
    pub fn new() -> Self {
        Self::default()
    }

    /// Add one form; false when it is empty or already known.  Costs no automaton rebuild.
    pub fn add(&mut self, form: &[u8]) -> bool {
        if form.is_empty() || self.known.contains(form) {
            return false;
        }
        let form: Arc<[u8]> = Arc::from(form);
        self.known.insert(form.clone());
        // Copies the index only while a snapshot of it is still being searched elsewhere.
        Arc::make_mut(&mut self.fresh).add(form);
        true
    }

    pub fn len(&self) -> usize {
        self.known.len()
    }

    pub fn is_empty(&self) -> bool {
        self.known.is_empty()
    }

    pub fn contains(&self, form: &[u8]) -> bool {
        self.known.contains(form)
    }

    /// Move the fresh forms into a level of their own, then merge levels of similar size.
    fn level_fresh(&mut self) -> Result<(), MaskError> {
        if self.fresh.is_empty() {
            return Ok(());
        }
        let mut level = Tier {
            forms: FreshIndex::into_forms(std::mem::take(&mut self.fresh)),
            automaton: None,
            fast: false,
        };
        while self
            .levels
            .last()
            .is_some_and(|last| last.forms.len() <= 2 * level.forms.len())
        {
            if let Some(last) = self.levels.pop() {
                let mut forms = last.forms;
                forms.extend(level.forms);
                level.forms = forms;
            }
        }
        level.rebuild(false)?;
        self.levels.push(level);
        Ok(())
    }

    /// Merge every level into one, built for speed when `fast`.
    fn consolidate(&mut self, fast: bool) -> Result<(), MaskError> {
        self.level_fresh()?;
        let forms = self
            .levels
            .drain(..)
            .flat_map(|level| level.forms)
            .collect();
        let mut level = Tier {
            forms,
            automaton: None,
            fast: false,
        };
        level.rebuild(fast)?;
        self.levels.push(level);
        Ok(())
    }

    /// What a search of a text of `text_len` bytes should use: the fresh forms stay out of
    /// the automata for short texts; a long text gets one automaton when its rebuild costs
    /// less than the passes over the text it saves.
    pub fn snapshot_for(&mut self, text_len: usize) -> Result<Snapshot, MaskError> {
        if text_len >= FRESH_TEXT_MAX && !self.fresh.is_empty() {
            self.level_fresh()?;
        }
        if text_len >= FRESH_TEXT_MAX && !self.levels.is_empty() {
            let total: usize = self.levels.iter().map(Tier::bytes).sum();
            let smaller = total - self.levels[0].bytes();
            let extra = self.levels.len() - 1;
            // Rebuilds are paid once and then serve every later search as well.
            let fast = total.saturating_mul(FAST_BUILD_COST) <= text_len;
            if extra.saturating_mul(text_len) >= smaller.saturating_mul(REBUILD_COST) && extra > 0 {
                self.consolidate(fast)?;
            } else if extra == 0 && fast && !self.levels[0].fast {
                self.levels[0].rebuild(true)?;
            }
        }
        let automata = self
            .levels
            .iter()
            .filter_map(|level| level.automaton.clone())
            .collect();
        Ok(Snapshot {
            automata,
            fresh: self.fresh.clone(),
        })
    }

    /// A snapshot that sees every form, for a short text.
    pub fn snapshot(&mut self) -> Result<Snapshot, MaskError> {
        self.snapshot_for(0)
    }
}

/// A fixed set of automata to search with; searching it needs no lock on the matcher.
#[derive(Clone, Default)]
pub struct Snapshot {
    automata: Vec<Arc<AhoCorasick>>,
    fresh: Arc<FreshIndex>,
}

impl Snapshot {
    pub fn is_empty(&self) -> bool {
        self.automata.is_empty() && self.fresh.is_empty()
    }

    /// Every occurrence of every form in `text`, as byte spans sorted by (start, end).
    pub fn byte_spans(&self, text: &[u8]) -> Vec<(usize, usize)> {
        let mut spans: Vec<(usize, usize)> = Vec::new();
        for automaton in &self.automata {
            spans.extend(
                automaton
                    .find_overlapping_iter(text)
                    .map(|m| (m.start(), m.end())),
            );
        }
        self.fresh.spans(text, &mut spans);
        // Overlapping search reports by end position; forms are distinct, so sorting is enough.
        spans.sort_unstable();
        spans.dedup();
        spans
    }

    /// Every occurrence as code-point spans (Python indices), sorted by (start, end).
    pub fn spans(&self, text: &[u8], ascii: bool) -> Vec<(usize, usize)> {
        let mut cursor = CodePointCursor::new(text, ascii);
        self.byte_spans(text)
            .into_iter()
            .map(|(start, end)| {
                let cp_start = cursor.advance_to(start);
                (cp_start, cp_start + cursor.length_of(start, end))
            })
            .collect()
    }

    /// `text` with every run of overlapping or touching occurrences replaced by one
    /// `placeholder`; `None` when nothing in `text` is a secret.
    pub fn mask(&self, text: &[u8], placeholder: &[u8]) -> Option<Vec<u8>> {
        let merged = merge_spans(self.byte_spans(text));
        if merged.is_empty() {
            return None;
        }
        let kept: usize = text.len() - merged.iter().map(|(s, e)| e - s).sum::<usize>();
        let mut out = Vec::with_capacity(kept + merged.len() * placeholder.len());
        let mut pos = 0;
        for (start, end) in merged {
            out.extend_from_slice(&text[pos..start]);
            out.extend_from_slice(placeholder);
            pos = end;
        }
        out.extend_from_slice(&text[pos..]);
        Some(out)
    }
}

/// Merge spans sorted by start: spans that overlap or touch become one.
pub fn merge_spans(spans: Vec<(usize, usize)>) -> Vec<(usize, usize)> {
    let mut merged: Vec<(usize, usize)> = Vec::with_capacity(spans.len());
    for (start, end) in spans {
        match merged.last_mut() {
            Some(last) if start <= last.1 => last.1 = last.1.max(end),
            _ => merged.push((start, end)),
        }
    }
    merged
}
