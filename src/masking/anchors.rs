//! Every form in a hash index keyed by its first four bytes (or, for forms shorter than that,
//! its first byte), with the forms of one key grouped by length so a candidate position costs
//! one set lookup per length.  Adding a form is O(its length) however many there are, and a
//! scan costs a filter test per position.  A text dense with candidates would make the scan
//! slow, so each scan has a budget and gives up when it is spent (the matcher then uses its
//! automata, whose cost is linear whatever the text).
//!
//! The scan skips ahead the way Wu–Manber does: with `m` the length of the shortest anchored
//! form, a second filter holds every 4-byte gram found at offsets `0..=m-4` of any form.  When
//! the gram at `p + m - 4` is in none of them, no form can start at `p..=p + m - 4` (each would
//! cover those four bytes at one of those offsets), so the scan moves on `m - 3` bytes at once.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

const ANCHOR_LEN: usize = 4;
/// log2 of the filter's bits to start with (8 KiB), and at most (512 KiB).
const FILTER_BITS_MIN: u32 = 16;
const FILTER_BITS_MAX: u32 = 22;

/// A fast multiplicative hash: keys are registered secrets (trusted), texts only probe.
#[derive(Default, Clone)]
pub struct FoldHasher(u64);

impl Hasher for FoldHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
        for &b in chunks.remainder() {
            self.add(b as u64);
        }
    }

    fn write_u8(&mut self, i: u8) {
        self.add(i as u64);
    }

    fn write_u32(&mut self, i: u32) {
        self.add(i as u64);
    }

    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

impl FoldHasher {
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

type Fold = BuildHasherDefault<FoldHasher>;

/// The forms of one key and one length.
type Bucket = (usize, HashSet<Arc<[u8]>, Fold>);

#[derive(Clone)]
pub struct AnchorIndex {
    count: usize,
    anchored: HashMap<u32, Vec<Bucket>, Fold>,
    short: HashMap<u8, Vec<Bucket>, Fold>,
    filter_bits: u32,
    filter: Vec<u64>,
    short_first: [u64; 4],
    /// The skip filter: `gram_len` is the shortest anchored form's length when its grams were
    /// added (forms added since may be longer, never shorter: a shorter one lowers it, and the
    /// grams already in stay, a harmless superset).
    gram_len: usize,
    gram_bits: u32,
    grams: Vec<u64>,
    grams_set: usize,
}

impl Default for AnchorIndex {
    fn default() -> Self {
        AnchorIndex {
            count: 0,
            anchored: HashMap::default(),
            short: HashMap::default(),
            filter_bits: FILTER_BITS_MIN,
            filter: vec![0; 1 << (FILTER_BITS_MIN - 6)],
            short_first: [0; 4],
            gram_len: usize::MAX,
            gram_bits: FILTER_BITS_MIN,
            grams: vec![0; 1 << (FILTER_BITS_MIN - 6)],
            grams_set: 0,
        }
    }
}

fn anchor_at(text: &[u8], pos: usize) -> Option<u32> {
    let window = text.get(pos..pos + ANCHOR_LEN)?;
    Some(u32::from_le_bytes([
        window[0], window[1], window[2], window[3],
    ]))
}

fn filter_slot(anchor: u32, bits: u32) -> (usize, u64) {
    let hash = (anchor.wrapping_mul(0x9E37_79B1) >> (32 - bits)) as usize;
    (hash >> 6, 1u64 << (hash & 63))
}

fn add_to(buckets: &mut Vec<Bucket>, form: Arc<[u8]>) {
    match buckets.iter_mut().find(|(len, _)| *len == form.len()) {
        Some((_, set)) => {
            set.insert(form);
        }
        None => {
            let mut set = HashSet::default();
            let len = form.len();
            set.insert(form);
            buckets.push((len, set));
        }
    }
}

/// Check the buckets at `pos`; returns the work done (bytes hashed, roughly).
fn matches_at(buckets: &[Bucket], text: &[u8], pos: usize, out: &mut Vec<(usize, usize)>) -> usize {
    let mut work = 0;
    for (len, set) in buckets {
        if let Some(candidate) = text.get(pos..pos + len) {
            work += 1 + len / 8;
            if set.contains(candidate) {
                out.push((pos, pos + len));
            }
        }
    }
    work
}

impl AnchorIndex {
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Add a form (non-empty, not already present: the matcher checks both).
    pub fn add(&mut self, form: Arc<[u8]>) {
        self.count += 1;
        match anchor_at(&form, 0) {
            Some(anchor) => {
                let (word, bit) = filter_slot(anchor, self.filter_bits);
                self.filter[word] |= bit;
                self.gram_len = self.gram_len.min(form.len());
                self.add_grams(&form);
                add_to(self.anchored.entry(anchor).or_default(), form);
                if self.anchored.len() > (1 << self.filter_bits) / 16
                    && self.filter_bits < FILTER_BITS_MAX
                {
                    self.grow_filter();
                }
                if self.grams_set > (1 << self.gram_bits) / 32 && self.gram_bits < FILTER_BITS_MAX {
                    self.grow_grams();
                }
            }
            None => {
                let first = form[0];
                self.short_first[(first >> 6) as usize] |= 1u64 << (first & 63);
                add_to(self.short.entry(first).or_default(), form);
            }
        }
    }

    /// A larger filter keeps false positives rare as the anchors grow in number.
    fn grow_filter(&mut self) {
        self.filter_bits += 2;
        self.filter = vec![0; 1 << (self.filter_bits - 6)];
        for &anchor in self.anchored.keys() {
            let (word, bit) = filter_slot(anchor, self.filter_bits);
            self.filter[word] |= bit;
        }
    }

    fn add_grams(&mut self, form: &[u8]) {
        for offset in 0..=self.gram_len - ANCHOR_LEN {
            if let Some(gram) = anchor_at(form, offset) {
                let (word, bit) = filter_slot(gram, self.gram_bits);
                if self.grams[word] & bit == 0 {
                    self.grams[word] |= bit;
                    self.grams_set += 1;
                }
            }
        }
    }

    /// A larger skip filter, rebuilt from every anchored form (for the current `gram_len`).
    fn grow_grams(&mut self) {
        self.gram_bits += 2;
        self.grams = vec![0; 1 << (self.gram_bits - 6)];
        self.grams_set = 0;
        let forms: Vec<Arc<[u8]>> = self
            .anchored
            .values()
            .flatten()
            .flat_map(|(_, set)| set.iter().cloned())
            .collect();
        for form in forms {
            self.add_grams(&form);
        }
    }

    /// Check the anchor at `pos`; false when the budget is spent.
    #[inline]
    fn check_anchor(
        &self,
        text: &[u8],
        pos: usize,
        budget: &mut usize,
        out: &mut Vec<(usize, usize)>,
    ) -> bool {
        let Some(anchor) = anchor_at(text, pos) else {
            return true;
        };
        let (word, bit) = filter_slot(anchor, self.filter_bits);
        if self.filter[word] & bit == 0 {
            return true;
        }
        let work = match self.anchored.get(&anchor) {
            Some(buckets) => matches_at(buckets, text, pos, out),
            None => 1,
        };
        match budget.checked_sub(work) {
            Some(left) => {
                *budget = left;
                true
            }
            None => false,
        }
    }

    /// The anchored forms' occurrences, skipping where the gram filter allows.
    fn anchored_spans(
        &self,
        text: &[u8],
        budget: &mut usize,
        out: &mut Vec<(usize, usize)>,
    ) -> bool {
        let m = self.gram_len;
        if m <= ANCHOR_LEN || text.len() < m {
            // No skipping possible: every position is a candidate.
            for pos in 0..text.len().saturating_sub(ANCHOR_LEN - 1) {
                if !self.check_anchor(text, pos, budget, out) {
                    return false;
                }
            }
            return true;
        }
        let (grams, bits) = (&self.grams[..], self.gram_bits);
        let skip = m - ANCHOR_LEN + 1;
        let last = text.len() - m;
        let mut pos = 0;
        while pos <= last {
            let at = pos + m - ANCHOR_LEN;
            let window = &text[at..at + ANCHOR_LEN];
            let gram = u32::from_le_bytes([window[0], window[1], window[2], window[3]]);
            let (word, bit) = filter_slot(gram, bits);
            if grams[word] & bit == 0 {
                pos += skip;
                continue;
            }
            if !self.check_anchor(text, pos, budget, out) {
                return false;
            }
            pos += 1;
        }
        true
    }

    /// Append every occurrence of every form in `text` to `out` (unsorted); false, with `out`
    /// incomplete, when the text was too dense with candidates to finish within budget.
    pub fn spans(&self, text: &[u8], out: &mut Vec<(usize, usize)>) -> bool {
        if self.count == 0 {
            return true;
        }
        let mut budget = text.len().saturating_mul(2).saturating_add(4096);
        if !self.anchored.is_empty() && !self.anchored_spans(text, &mut budget, out) {
            return false;
        }
        if !self.short.is_empty() {
            for (pos, &byte) in text.iter().enumerate() {
                if self.short_first[(byte >> 6) as usize] & (1u64 << (byte & 63)) == 0 {
                    continue;
                }
                if let Some(buckets) = self.short.get(&byte) {
                    budget = match budget.checked_sub(matches_at(buckets, text, pos, out)) {
                        Some(left) => left,
                        None => return false,
                    };
                }
            }
        }
        true
    }
}
