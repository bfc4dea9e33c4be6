//! The newest forms, searchable without building anything: a hash index keyed by each form's
//! first four bytes (or, for forms shorter than that, its first byte), with the forms of one
//! key grouped by length so a candidate position costs one set lookup per length.  Adding a
//! form is O(its length), so registering one more secret costs the same however many there
//! are; searching costs a filter test per position, which suits the short texts (log lines,
//! messages) that come between registrations.  Long texts are searched with automata instead.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// log2 of the bits in the anchor filter: 64 Ki bits, 8 KiB, fits in L1.
const FILTER_BITS: u32 = 16;
const ANCHOR_LEN: usize = 4;

/// The forms of one key and one length.
type Bucket = (usize, HashSet<Arc<[u8]>>);

#[derive(Clone)]
pub struct FreshIndex {
    forms: Vec<Arc<[u8]>>,
    anchored: HashMap<u32, Vec<Bucket>>,
    short: HashMap<u8, Vec<Bucket>>,
    filter: Vec<u64>,
    short_first: [u64; 4],
}

impl Default for FreshIndex {
    fn default() -> Self {
        FreshIndex {
            forms: Vec::new(),
            anchored: HashMap::new(),
            short: HashMap::new(),
            filter: vec![0; 1 << (FILTER_BITS - 6)],
            short_first: [0; 4],
        }
    }
}

fn anchor_at(text: &[u8], pos: usize) -> Option<u32> {
    let window = text.get(pos..pos + ANCHOR_LEN)?;
    Some(u32::from_le_bytes([
        window[0], window[1], window[2], window[3],
    ]))
}

fn filter_slot(anchor: u32) -> (usize, u64) {
    let hash = (anchor.wrapping_mul(0x9E37_79B1) >> (32 - FILTER_BITS)) as usize;
    (hash >> 6, 1u64 << (hash & 63))
}

fn add_to(buckets: &mut Vec<Bucket>, form: Arc<[u8]>) {
    match buckets.iter_mut().find(|(len, _)| *len == form.len()) {
        Some((_, set)) => {
            set.insert(form);
        }
        None => buckets.push((form.len(), HashSet::from([form]))),
    }
}

fn matches_at(buckets: &[Bucket], text: &[u8], pos: usize, out: &mut Vec<(usize, usize)>) {
    for (len, set) in buckets {
        if let Some(candidate) = text.get(pos..pos + len) {
            if set.contains(candidate) {
                out.push((pos, pos + len));
            }
        }
    }
}

impl FreshIndex {
    pub fn is_empty(&self) -> bool {
        self.forms.is_empty()
    }

    /// Add a form (non-empty, not already present: the matcher checks both).
    pub fn add(&mut self, form: Arc<[u8]>) {
        self.forms.push(form.clone());
        match anchor_at(&form, 0) {
            Some(anchor) => {
                let (word, bit) = filter_slot(anchor);
                self.filter[word] |= bit;
                add_to(self.anchored.entry(anchor).or_default(), form);
            }
            None => {
                let first = form[0];
                self.short_first[(first >> 6) as usize] |= 1u64 << (first & 63);
                add_to(self.short.entry(first).or_default(), form);
            }
        }
    }

    /// The forms of an index being retired (to be built into an automaton).
    pub fn into_forms(index: Arc<FreshIndex>) -> Vec<Arc<[u8]>> {
        match Arc::try_unwrap(index) {
            Ok(index) => index.forms,
            Err(shared) => shared.forms.clone(),
        }
    }

    /// Append every occurrence of every form in `text` to `out` (unsorted).
    pub fn spans(&self, text: &[u8], out: &mut Vec<(usize, usize)>) {
        if self.forms.is_empty() {
            return;
        }
        if !self.anchored.is_empty() {
            for pos in 0..text.len().saturating_sub(ANCHOR_LEN - 1) {
                let Some(anchor) = anchor_at(text, pos) else {
                    break;
                };
                let (word, bit) = filter_slot(anchor);
                if self.filter[word] & bit != 0 {
                    if let Some(buckets) = self.anchored.get(&anchor) {
                        matches_at(buckets, text, pos, out);
                    }
                }
            }
        }
        if !self.short.is_empty() {
            for (pos, &byte) in text.iter().enumerate() {
                if self.short_first[(byte >> 6) as usize] & (1u64 << (byte & 63)) != 0 {
                    if let Some(buckets) = self.short.get(&byte) {
                        matches_at(buckets, text, pos, out);
                    }
                }
            }
        }
    }
}
