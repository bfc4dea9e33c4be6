//! The order ansible-core 2.22's matcher reports spans in, so `spans()` returns the very same
//! list.  2.22's matcher scans start positions in order; at one start it tries the buckets of
//! the anchor found there (the text's next four code points) in the order they were created,
//! one bucket per code-point length, created by the first word of that anchor and length.  So
//! spans sharing a start come by bucket age, not by end.  A word shorter than the anchor goes
//! to a second index, and once any such word was ever added the whole list is sorted by
//! `(start, end)` instead.

use std::collections::HashMap;

use super::text::next_code_point;

/// 2.22's anchor length, in code points.
const ANCHOR_CODE_POINTS: usize = 4;

#[derive(Clone, Default)]
pub struct SpanOrder {
    /// A word shorter than the anchor was added: spans are simply sorted.
    sorted: bool,
    /// (first four code points, length in code points) -> when its bucket was created.
    buckets: HashMap<(Box<[u8]>, usize), u32>,
}

/// The bytes of the first four code points of `bytes` and its length in code points; `None`
/// when it is shorter than four code points (or not generalized UTF-8).
fn bucket_key(bytes: &[u8]) -> Option<(&[u8], usize)> {
    let mut pos = 0;
    let mut count = 0;
    let mut anchor_end = 0;
    while pos < bytes.len() {
        let (_, len) = next_code_point(&bytes[pos..])?;
        pos += len;
        count += 1;
        if count == ANCHOR_CODE_POINTS {
            anchor_end = pos;
        }
    }
    (count >= ANCHOR_CODE_POINTS).then(|| (&bytes[..anchor_end], count))
}

impl SpanOrder {
    /// Note a new word (generalized UTF-8, not added before).
    pub fn add(&mut self, word: &[u8]) {
        if self.sorted {
            return;
        }
        match bucket_key(word) {
            Some((anchor, length)) => {
                let next = self.buckets.len() as u32;
                self.buckets
                    .entry((Box::from(anchor), length))
                    .or_insert(next);
            }
            None => {
                // From now on 2.22 sorts; the bucket ages are never needed again.
                self.sorted = true;
                self.buckets = HashMap::new();
            }
        }
    }

    /// Put `spans` (byte spans of `text`, sorted by `(start, end)`) in 2.22's order.
    pub fn arrange(&self, text: &[u8], spans: &mut [(usize, usize)]) {
        if self.sorted {
            return;
        }
        for group in spans.chunk_by_mut(|a, b| a.0 == b.0) {
            if group.len() > 1 {
                group.sort_by_cached_key(|&(start, end)| {
                    bucket_key(&text[start..end])
                        .and_then(|(anchor, length)| {
                            self.buckets.get(&(Box::from(anchor), length)).copied()
                        })
                        .unwrap_or(u32::MAX)
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_start_spans_come_by_bucket_age() {
        let mut order = SpanOrder::default();
        for word in [&b"abcdef"[..], b"abcd", b"abcde", b"abcdeX"] {
            order.add(word);
        }
        let mut spans = vec![(0, 4), (0, 5), (0, 6)];
        order.arrange(b"abcdef", &mut spans);
        assert_eq!(spans, vec![(0, 6), (0, 4), (0, 5)]);
    }

    #[test]
    fn a_short_word_makes_the_order_sorted() {
        let mut order = SpanOrder::default();
        for word in [&b"abcdef"[..], b"abcd", "xé".as_bytes()] {
            order.add(word);
        }
        let mut spans = vec![(0, 4), (0, 6)];
        order.arrange(b"abcdef", &mut spans);
        assert_eq!(spans, vec![(0, 4), (0, 6)]);
    }

    #[test]
    fn anchors_and_lengths_are_code_points() {
        // Four code points of 2 bytes each: anchored (not short) though 8 bytes long.
        let mut order = SpanOrder::default();
        order.add("éééé".as_bytes());
        order.add("ééééa".as_bytes());
        assert!(!order.sorted);
        assert_eq!(order.buckets.len(), 2);
    }
}
