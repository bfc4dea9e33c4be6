//! Python strings as bytes: every `str` is handled in "generalized UTF-8", the bytes Python's
//! `str.encode("utf-8", "surrogatepass")` gives.  Each code point, a lone surrogate included,
//! becomes its own 1–4 byte sequence, so the encoding is one-to-one and self-synchronising: a
//! pattern's bytes found in a text's bytes always start and end on code-point boundaries, and a
//! byte match is exactly a code-point match.  Positions are turned back into code-point indices
//! (Python's) only for the spans that are reported.
//!
//! Shared by both engines (the no_log engine's scrubbing works on the same form).

/// Append the generalized UTF-8 form of code point `cp`; a value above U+10FFFF is not a
/// code point and appends nothing.
pub fn push_code_point(out: &mut Vec<u8>, cp: u32) {
    match cp {
        0..=0x7F => out.push(cp as u8),
        0x80..=0x7FF => out.extend_from_slice(&[0xC0 | (cp >> 6) as u8, 0x80 | (cp & 0x3F) as u8]),
        0x800..=0xFFFF => out.extend_from_slice(&[
            0xE0 | (cp >> 12) as u8,
            0x80 | ((cp >> 6) & 0x3F) as u8,
            0x80 | (cp & 0x3F) as u8,
        ]),
        0x10000..=0x10FFFF => out.extend_from_slice(&[
            0xF0 | (cp >> 18) as u8,
            0x80 | ((cp >> 12) & 0x3F) as u8,
            0x80 | ((cp >> 6) & 0x3F) as u8,
            0x80 | (cp & 0x3F) as u8,
        ]),
        _ => {}
    }
}

/// The generalized UTF-8 form of a sequence of code points (a Python `str` as UCS-4).
pub fn encode(code_points: &[u32]) -> Vec<u8> {
    let mut out = Vec::with_capacity(code_points.len());
    for &cp in code_points {
        push_code_point(&mut out, cp);
    }
    out
}

/// The code points of generalized UTF-8 `bytes`; `None` when the bytes are not such a form.
pub fn decode(bytes: &[u8]) -> Option<Vec<u32>> {
    let mut out = Vec::with_capacity(bytes.len());
    let mut rest = bytes;
    while let Some((cp, len)) = next_code_point(rest) {
        out.push(cp);
        rest = &rest[len..];
    }
    rest.is_empty().then_some(out)
}

/// The first code point of `bytes` and its length in bytes.
pub fn next_code_point(bytes: &[u8]) -> Option<(u32, usize)> {
    let first = *bytes.first()?;
    let (len, initial) = match first {
        0x00..=0x7F => return Some((first as u32, 1)),
        0xC0..=0xDF => (2, (first & 0x1F) as u32),
        0xE0..=0xEF => (3, (first & 0x0F) as u32),
        0xF0..=0xF7 => (4, (first & 0x07) as u32),
        _ => return None,
    };
    let tail = bytes.get(1..len)?;
    let mut cp = initial;
    for &b in tail {
        if b & 0xC0 != 0x80 {
            return None;
        }
        cp = (cp << 6) | (b & 0x3F) as u32;
    }
    Some((cp, len))
}

/// Is `byte` the first byte of a code point (not a continuation byte)?
#[inline]
pub fn is_char_start(byte: u8) -> bool {
    byte & 0xC0 != 0x80
}

/// How many code points `bytes` holds: the bytes that are not continuation bytes.
pub fn count_code_points(bytes: &[u8]) -> usize {
    bytes.iter().filter(|&&b| is_char_start(b)).count()
}

/// The byte offset `n` code points after `from` (clamped to the end of `text`).
pub fn advance_chars(text: &[u8], from: usize, n: usize) -> usize {
    let mut pos = from;
    for _ in 0..n {
        if pos >= text.len() {
            return text.len();
        }
        pos += 1;
        while pos < text.len() && !is_char_start(text[pos]) {
            pos += 1;
        }
    }
    pos.min(text.len())
}

/// The byte offsets where each code point of `text` starts, in order.
pub fn char_starts(text: &[u8]) -> impl Iterator<Item = usize> + '_ {
    text.iter()
        .enumerate()
        .filter(|(_, b)| is_char_start(**b))
        .map(|(i, _)| i)
}

/// Turns byte offsets into code-point offsets, for offsets given in non-decreasing order.
pub struct CodePointCursor<'a> {
    text: &'a [u8],
    ascii: bool,
    byte_pos: usize,
    cp_pos: usize,
}

impl<'a> CodePointCursor<'a> {
    /// `ascii` says every byte is one code point (the text is ASCII), so offsets map to themselves.
    pub fn new(text: &'a [u8], ascii: bool) -> Self {
        CodePointCursor {
            text,
            ascii,
            byte_pos: 0,
            cp_pos: 0,
        }
    }

    /// The code-point index of byte offset `pos` (`pos` >= every earlier call's).
    pub fn advance_to(&mut self, pos: usize) -> usize {
        if self.ascii {
            return pos;
        }
        let pos = pos.min(self.text.len());
        if pos >= self.byte_pos {
            self.cp_pos += count_code_points(&self.text[self.byte_pos..pos]);
        } else {
            self.cp_pos -= count_code_points(&self.text[pos..self.byte_pos]);
        }
        self.byte_pos = pos;
        self.cp_pos
    }

    /// The code-point length of `text[start..end]`.
    pub fn length_of(&self, start: usize, end: usize) -> usize {
        if self.ascii {
            end - start
        } else {
            count_code_points(&self.text[start.min(end)..end.min(self.text.len())])
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_every_kind_of_code_point() {
        let cps = vec![
            0x41, 0xE9, 0x20AC, 0x1F600, 0xD83D, 0xDE00, 0xDC00, 0x0, 0x7F, 0x10FFFF,
        ];
        let bytes = encode(&cps);
        assert_eq!(decode(&bytes), Some(cps));
    }

    #[test]
    fn lone_surrogates_are_three_bytes_each() {
        assert_eq!(
            encode(&[0xD83D, 0xDE00]),
            vec![0xED, 0xA0, 0xBD, 0xED, 0xB8, 0x80]
        );
        assert_eq!(encode(&[0x1F600]), "😀".as_bytes());
    }

    #[test]
    fn advance_counts_code_points() {
        let text = "é😀a:b".as_bytes();
        assert_eq!(advance_chars(text, 0, 3), 2 + 4 + 1);
        assert_eq!(advance_chars(text, 0, 99), text.len());
        assert_eq!(advance_chars(b"", 0, 3), 0);
        assert_eq!(
            char_starts(&encode(&[0xD83D, 0xDE00])).collect::<Vec<_>>(),
            vec![0, 3]
        );
    }

    #[test]
    fn values_above_the_last_code_point_are_skipped() {
        assert_eq!(encode(&[0x61, 0x110000, 0x62]), b"ab");
    }

    #[test]
    fn cursor_maps_byte_offsets() {
        let text = encode(&[0x61, 0xE9, 0x1F600, 0xD800, 0x62]);
        let mut cursor = CodePointCursor::new(&text, false);
        assert_eq!(cursor.advance_to(1), 1);
        assert_eq!(cursor.advance_to(3), 2);
        assert_eq!(cursor.advance_to(10), 4);
        assert_eq!(cursor.advance_to(11), 5);
        assert_eq!(cursor.length_of(3, 10), 2);
    }
}
