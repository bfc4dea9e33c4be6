//! Finding every occurrence of every registered form, overlapping ones included.
//!
//! Secrets arrive one at a time all run long, with masking in between, so registration must
//! not rebuild one big automaton each time.  Forms therefore live in two tiers: `settled`, one
//! large automaton rebuilt rarely, and `recent`, a small one rebuilt cheaply.  New forms wait in
//! `pending` until the next search; when the recent tier outgrows a fraction of the settled one
//! it is folded in, so the settled automaton is rebuilt after a number of additions
//! proportional to its size (amortised constant cost per form) and a search scans at most two
//! automata.

use std::collections::HashSet;
use std::sync::Arc;

use aho_corasick::{AhoCorasick, AhoCorasickKind, MatchKind};

use super::text::CodePointCursor;
use super::MaskError;

/// The recent tier never has to hold fewer forms than this before it is folded in.
const RECENT_MIN: usize = 64;
/// The recent tier is folded in once it holds more than settled/RECENT_SHARE forms.
const RECENT_SHARE: usize = 8;
/// Above this many pattern bytes the settled tier uses a (smaller, slower) NFA instead of a DFA.
const DFA_MAX_BYTES: usize = 64 * 1024;

#[derive(Default)]
struct Tier {
    forms: Vec<Arc<[u8]>>,
    automaton: Option<Arc<AhoCorasick>>,
}

impl Tier {
    fn rebuild(&mut self) -> Result<(), MaskError> {
        self.automaton = if self.forms.is_empty() { None } else { Some(Arc::new(build(&self.forms)?)) };
        Ok(())
    }
}

fn build(forms: &[Arc<[u8]>]) -> Result<AhoCorasick, MaskError> {
    let bytes: usize = forms.iter().map(|f| f.len()).sum();
    let kind = if bytes <= DFA_MAX_BYTES { AhoCorasickKind::DFA } else { AhoCorasickKind::ContiguousNFA };
    AhoCorasick::builder()
        .match_kind(MatchKind::Standard)
        .kind(Some(kind))
        .build(forms.iter().map(|f| &f[..]))
        .or_else(|_| AhoCorasick::builder().match_kind(MatchKind::Standard).build(forms.iter().map(|f| &f[..])))
        .map_err(|_| MaskError::Build)
}

/// The registered forms (generalized UTF-8), searchable for all their occurrences.
#[derive(Default)]
pub struct SecretMatcher {
    known: HashSet<Arc<[u8]>>,
    settled: Tier,
    recent: Tier,
    pending: Vec<Arc<[u8]>>,
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
        self.pending.push(form);
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

    /// Fold the pending forms into the automata, so that `snapshot()` sees every form.
    pub fn settle(&mut self) -> Result<(), MaskError> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let pending = std::mem::take(&mut self.pending);
        let recent_cap = RECENT_MIN.max(self.settled.forms.len() / RECENT_SHARE);
        if self.recent.forms.len() + pending.len() > recent_cap {
            let recent = std::mem::take(&mut self.recent.forms);
            self.settled.forms.extend(recent.into_iter().chain(pending));
            self.recent.automaton = None;
            return self.settled.rebuild();
        }
        self.recent.forms.extend(pending);
        self.recent.rebuild()
    }

    /// The automata to search, after settling: cheap to clone and to use without `self`.
    pub fn snapshot(&mut self) -> Result<Snapshot, MaskError> {
        self.settle()?;
        let automata = [&self.settled.automaton, &self.recent.automaton].into_iter().flatten().cloned().collect();
        Ok(Snapshot { automata })
    }
}

/// A fixed set of automata to search with; searching it needs no lock on the matcher.
#[derive(Clone, Default)]
pub struct Snapshot {
    automata: Vec<Arc<AhoCorasick>>,
}

impl Snapshot {
    pub fn is_empty(&self) -> bool {
        self.automata.is_empty()
    }

    /// Every occurrence of every form in `text`, as byte spans sorted by (start, end).
    pub fn byte_spans(&self, text: &[u8]) -> Vec<(usize, usize)> {
        let mut spans: Vec<(usize, usize)> = Vec::new();
        for automaton in &self.automata {
            spans.extend(automaton.find_overlapping_iter(text).map(|m| (m.start(), m.end())));
        }
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
