//! Finding every occurrence of every registered form, overlapping ones included.
//!
//! Two structures hold the forms.  The anchor index (`anchors`) takes a new form in O(its
//! length) and needs no build, and scans about twice as fast as an automaton on ordinary text;
//! but a text dense with candidate positions makes it slow.  So every scan through it has a
//! budget of candidates, and a text that exceeds it is searched with Aho-Corasick automata,
//! which take linear time whatever the text.  The automata are built only when first needed,
//! in levels like an LSM tree: forms added since the last build become a level of their own
//! and levels of similar size are merged, so a form takes part in O(log n) builds in all and a
//! search runs at most O(log n) automata; a long text first merges them all into one when that
//! rebuild costs less than the extra passes it saves.

use std::collections::HashSet;
use std::sync::Arc;

use aho_corasick::{AhoCorasick, AhoCorasickKind, MatchKind};

use super::anchors::AnchorIndex;
use super::order::SpanOrder;
use super::text::CodePointCursor;
use super::MaskError;

/// Above this many pattern bytes an automaton is an NFA (smaller, slower) instead of a DFA.
const DFA_MAX_BYTES: usize = 64 * 1024;
/// A rebuild costs about this many scanned text bytes per pattern byte.
const REBUILD_COST: usize = 16;
/// A fast (DFA) build costs about this many scanned text bytes per pattern byte.
const FAST_BUILD_COST: usize = 32;

#[derive(Default)]
struct Level {
    forms: Vec<Arc<[u8]>>,
    automaton: Option<Arc<AhoCorasick>>,
    /// Built for scanning speed (DFA when small enough) rather than build speed.
    fast: bool,
}

impl Level {
    fn build(forms: Vec<Arc<[u8]>>, fast: bool) -> Result<Level, MaskError> {
        let automaton = if forms.is_empty() {
            None
        } else {
            Some(Arc::new(build(&forms, fast)?))
        };
        Ok(Level {
            forms,
            automaton,
            fast,
        })
    }

    fn bytes(&self) -> usize {
        self.forms.iter().map(|f| f.len()).sum()
    }
}

fn build(forms: &[Arc<[u8]>], fast: bool) -> Result<AhoCorasick, MaskError> {
    let bytes: usize = forms.iter().map(|f| f.len()).sum();
    let kind = if fast && bytes <= DFA_MAX_BYTES {
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
    anchors: Arc<AnchorIndex>,
    order: Arc<SpanOrder>,
    /// Automaton levels, oldest (largest) first.
    levels: Vec<Level>,
    /// Forms in no automaton yet.
    unbuilt: Vec<Arc<[u8]>>,
}

impl SecretMatcher {
    pub fn new() -> Self {
        Self::default()
    }

    /// Add one form; false when it is empty or already known.  Builds nothing.
    pub fn add(&mut self, form: &[u8]) -> bool {
        if form.is_empty() || self.known.contains(form) {
            return false;
        }
        let form: Arc<[u8]> = Arc::from(form);
        self.known.insert(form.clone());
        // Copies the index only while a snapshot of it is still being searched elsewhere.
        Arc::make_mut(&mut self.anchors).add(form.clone());
        Arc::make_mut(&mut self.order).add(&form);
        self.unbuilt.push(form);
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

    /// What to search with, building nothing: the anchor index, plus the automata when they
    /// happen to cover every form already.
    pub fn snapshot(&self) -> Snapshot {
        let complete = self.unbuilt.is_empty();
        Snapshot {
            anchors: self.anchors.clone(),
            order: self.order.clone(),
            automata: if complete {
                self.automata()
            } else {
                Vec::new()
            },
            complete,
        }
    }

    /// A snapshot whose automata cover every form, for a text of `text_len` bytes: builds the
    /// forms added since the last build into a level, and merges levels when worth it.
    pub fn complete_snapshot(&mut self, text_len: usize) -> Result<Snapshot, MaskError> {
        self.build_unbuilt()?;
        if self.levels.len() > 1 {
            let total: usize = self.levels.iter().map(Level::bytes).sum();
            let smaller = total - self.levels[0].bytes();
            let extra = self.levels.len() - 1;
            if extra.saturating_mul(text_len) >= smaller.saturating_mul(REBUILD_COST) {
                let forms = self
                    .levels
                    .drain(..)
                    .flat_map(|level| level.forms)
                    .collect();
                let fast = total.saturating_mul(FAST_BUILD_COST) <= text_len;
                self.levels.push(Level::build(forms, fast)?);
            }
        } else if let Some(level) = self.levels.first_mut() {
            // Rebuilds are paid once and then serve every later search as well.
            if !level.fast && level.bytes().saturating_mul(FAST_BUILD_COST) <= text_len {
                *level = Level::build(std::mem::take(&mut level.forms), true)?;
            }
        }
        Ok(Snapshot {
            anchors: self.anchors.clone(),
            order: self.order.clone(),
            automata: self.automata(),
            complete: true,
        })
    }

    fn automata(&self) -> Vec<Arc<AhoCorasick>> {
        self.levels
            .iter()
            .filter_map(|level| level.automaton.clone())
            .collect()
    }

    fn build_unbuilt(&mut self) -> Result<(), MaskError> {
        if self.unbuilt.is_empty() {
            return Ok(());
        }
        let mut forms = std::mem::take(&mut self.unbuilt);
        while self
            .levels
            .last()
            .is_some_and(|last| last.forms.len() <= 2 * forms.len())
        {
            if let Some(last) = self.levels.pop() {
                let mut merged = last.forms;
                merged.extend(forms);
                forms = merged;
            }
        }
        self.levels.push(Level::build(forms, false)?);
        Ok(())
    }

    /// Every occurrence of every form in `text`, as byte spans sorted by (start, end).
    pub fn byte_spans(&mut self, text: &[u8]) -> Result<Vec<(usize, usize)>, MaskError> {
        if let Some(spans) = self.snapshot().byte_spans(text) {
            return Ok(spans);
        }
        self.complete_snapshot(text.len())?
            .byte_spans(text)
            .ok_or(MaskError::Build)
    }
}

/// What one search uses; searching it needs no lock on the matcher.
#[derive(Clone, Default)]
pub struct Snapshot {
    anchors: Arc<AnchorIndex>,
    order: Arc<SpanOrder>,
    automata: Vec<Arc<AhoCorasick>>,
    /// The automata cover every form.
    complete: bool,
}

impl Snapshot {
    pub fn is_empty(&self) -> bool {
        self.anchors.is_empty()
    }

    /// Every occurrence of every form in `text`, as byte spans sorted by (start, end); `None`
    /// when the text is too dense with candidates for the index and the snapshot has no
    /// complete automata (take a `complete_snapshot` and search again).
    pub fn byte_spans(&self, text: &[u8]) -> Option<Vec<(usize, usize)>> {
        let mut spans = Vec::new();
        if !self.anchors.spans(text, &mut spans) {
            spans = self.automata_spans(text)?;
        }
        // Neither search reports in start order; forms are distinct, so sorting is enough.
        spans.sort_unstable();
        spans.dedup();
        Some(spans)
    }

    /// The search by automata alone (`None` unless the snapshot is complete).
    pub fn automata_spans(&self, text: &[u8]) -> Option<Vec<(usize, usize)>> {
        if !self.complete {
            return None;
        }
        let mut spans = Vec::new();
        for automaton in &self.automata {
            spans.extend(
                automaton
                    .find_overlapping_iter(text)
                    .map(|m| (m.start(), m.end())),
            );
        }
        Some(spans)
    }

    /// Every occurrence as code-point spans (Python indices): sorted by (start, end), or with
    /// `matcher_order` in the order 2.22's matcher gives them (by start; see `SpanOrder` for
    /// spans sharing one).
    pub fn spans(
        &self,
        text: &[u8],
        ascii: bool,
        matcher_order: bool,
    ) -> Option<Vec<(usize, usize)>> {
        let mut cursor = CodePointCursor::new(text, ascii);
        let mut spans = self.byte_spans(text)?;
        if matcher_order {
            self.order.arrange(text, &mut spans);
        }
        Some(
            spans
                .into_iter()
                .map(|(start, end)| {
                    let cp_start = cursor.advance_to(start);
                    (cp_start, cp_start + cursor.length_of(start, end))
                })
                .collect(),
        )
    }

    /// `text` with every run of overlapping or touching occurrences replaced by one
    /// `placeholder` (`Some(None)` when nothing in `text` is a secret); `None` as for
    /// `byte_spans`.
    pub fn mask(&self, text: &[u8], placeholder: &[u8]) -> Option<Option<Vec<u8>>> {
        let mut out = Vec::new();
        let masked = self.mask_into(text, placeholder, &mut out)?;
        Some(masked.then_some(out))
    }

    /// `mask` writing into `out` (cleared first): `Some(false)` when nothing in `text` is a
    /// secret (and `out` is left empty).  Lets a caller reuse one buffer across calls.
    pub fn mask_into(&self, text: &[u8], placeholder: &[u8], out: &mut Vec<u8>) -> Option<bool> {
        out.clear();
        Some(replace_spans_into(
            text,
            &merge_spans(self.byte_spans(text)?),
            placeholder,
            out,
        ))
    }
}

/// `text` with each of the (merged, sorted) `spans` replaced by `placeholder`.
pub fn replace_spans(
    text: &[u8],
    merged: Vec<(usize, usize)>,
    placeholder: &[u8],
) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    replace_spans_into(text, &merged, placeholder, &mut out).then_some(out)
}

/// `replace_spans` appending to `out`; false (nothing appended) when there are no spans.
pub fn replace_spans_into(
    text: &[u8],
    merged: &[(usize, usize)],
    placeholder: &[u8],
    out: &mut Vec<u8>,
) -> bool {
    if merged.is_empty() {
        return false;
    }
    let kept: usize = text.len() - merged.iter().map(|(s, e)| e - s).sum::<usize>();
    out.reserve(kept + merged.len() * placeholder.len());
    let mut pos = 0;
    for &(start, end) in merged {
        out.extend_from_slice(&text[pos..start]);
        out.extend_from_slice(placeholder);
        pos = end;
    }
    out.extend_from_slice(&text[pos..]);
    true
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
