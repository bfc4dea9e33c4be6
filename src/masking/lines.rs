//! Python's `str.splitlines()` (without `keepends`) over generalized UTF-8, as byte spans, so a
//! text's lines can be compared with a list of lines, or cut out of a masked text, without
//! making a Python string for each.
//!
//! The line boundaries are Python's: LF, CR, CR LF (one boundary), VT, FF, the file, group and
//! record separators (0x1C-0x1E), NEL (U+0085) and the line and paragraph separators
//! (U+2028, U+2029).  A boundary at the very end makes no empty last line; "" has no lines.

/// The content span `(start, end)` of each line of `text`, in order.
pub fn line_spans(text: &[u8]) -> LineSpans<'_> {
    LineSpans { text, pos: 0 }
}

pub struct LineSpans<'a> {
    text: &'a [u8],
    pos: usize,
}

/// The length of the line boundary starting at `pos` (0 when there is none).
#[inline]
fn boundary_at(text: &[u8], pos: usize) -> usize {
    match text[pos] {
        b'\r' => {
            if text.get(pos + 1) == Some(&b'\n') {
                2
            } else {
                1
            }
        }
        b'\n' | 0x0B | 0x0C | 0x1C..=0x1E => 1,
        0xC2 if text.get(pos + 1) == Some(&0x85) => 2,
        0xE2 if text.get(pos + 1) == Some(&0x80)
            && matches!(text.get(pos + 2), Some(0xA8 | 0xA9)) =>
        {
            3
        }
        _ => 0,
    }
}

/// Could a line boundary start with this byte?
#[inline]
fn may_start_boundary(byte: u8) -> bool {
    matches!(
        byte,
        b'\n' | 0x0B | 0x0C | b'\r' | 0x1C..=0x1E | 0xC2 | 0xE2
    )
}

/// Eight bytes at a time, the offset of the first byte that may start a boundary: a control
/// character or a non-ASCII byte (both rare in text, so almost every word is skipped whole).
#[inline]
fn next_candidate(text: &[u8], mut pos: usize) -> usize {
    const LOW: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    while pos + 8 <= text.len() {
        let mut word = [0u8; 8];
        word.copy_from_slice(&text[pos..pos + 8]);
        let word = u64::from_le_bytes(word);
        // High bit of each byte below 0x20 (exact for bytes below 0x80) or at 0x80 and above.
        let flagged = (word.wrapping_sub(LOW * 0x20) & !word & HIGH) | (word & HIGH);
        if flagged != 0 {
            return pos + (flagged.trailing_zeros() / 8) as usize;
        }
        pos += 8;
    }
    pos
}

impl Iterator for LineSpans<'_> {
    type Item = (usize, usize);

    fn next(&mut self) -> Option<(usize, usize)> {
        let text = self.text;
        let start = self.pos;
        if start >= text.len() {
            return None;
        }
        let mut pos = start;
        while pos < text.len() {
            pos = next_candidate(text, pos);
            if pos >= text.len() {
                break;
            }
            if may_start_boundary(text[pos]) {
                let len = boundary_at(text, pos);
                if len > 0 {
                    self.pos = pos + len;
                    return Some((start, pos));
                }
            }
            pos += 1;
        }
        self.pos = text.len();
        Some((start, text.len()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<&str> {
        line_spans(text.as_bytes())
            .map(|(s, e)| &text[s..e])
            .collect()
    }

    #[test]
    fn like_python_splitlines() {
        assert_eq!(lines(""), Vec::<&str>::new());
        assert_eq!(lines("\n"), vec![""]);
        assert_eq!(lines("a\nb"), vec!["a", "b"]);
        assert_eq!(lines("a\nb\n"), vec!["a", "b"]);
        assert_eq!(lines("a\r\nb\rc\n\nd"), vec!["a", "b", "c", "", "d"]);
        assert_eq!(lines("a\r\r\nb"), vec!["a", "", "b"]);
        assert_eq!(
            lines("a\x0bb\x0cc\x1cd\x1de\x1ef\u{85}g\u{2028}h\u{2029}i"),
            vec!["a", "b", "c", "d", "e", "f", "g", "h", "i"]
        );
        assert_eq!(lines("é\u{2027}€\u{80}x"), vec!["é\u{2027}€\u{80}x"]);
        assert_eq!(lines("\u{2028}"), vec![""]);
        assert_eq!(
            lines("0123456789abcdef\n0123456789\x1d0123456789abcdefé\u{2029}"),
            vec!["0123456789abcdef", "0123456789", "0123456789abcdefé"]
        );
    }

    /// Every byte value at every offset of a word, against a byte-at-a-time reference.
    #[test]
    fn word_skipping_misses_nothing() {
        for byte in 0u8..=255 {
            for at in 0..20 {
                let mut text = vec![b'a'; 24];
                text[at] = byte;
                let reference: Vec<usize> = (0..text.len())
                    .filter(|&i| may_start_boundary(text[i]))
                    .collect();
                let mut found = Vec::new();
                let mut pos = 0;
                while pos < text.len() {
                    pos = next_candidate(&text, pos);
                    if pos < text.len() {
                        if may_start_boundary(text[pos]) {
                            found.push(pos);
                        }
                        pos += 1;
                    }
                }
                assert_eq!(found, reference, "byte {byte:#x} at {at}");
            }
        }
    }
}
