//! Generalized UTF-8 helpers: code-point boundaries in Python-`str`-as-bytes.

/// Is `byte` the first byte of a code point (not a continuation byte)?
#[inline]
pub fn is_char_start(byte: u8) -> bool {
    byte & 0xC0 != 0x80
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

/// Encode code points (surrogates included) the way `str.encode("utf-8", "surrogatepass")` does;
/// values above U+10FFFF are not code points and are skipped.
pub fn encode_code_points(points: &[u32]) -> Vec<u8> {
    let mut out = Vec::with_capacity(points.len());
    for &cp in points {
        match cp {
            0..=0x7F => out.push(cp as u8),
            0x80..=0x7FF => out.extend([0xC0 | (cp >> 6) as u8, 0x80 | (cp & 0x3F) as u8]),
            0x800..=0xFFFF => out.extend([
                0xE0 | (cp >> 12) as u8,
                0x80 | ((cp >> 6) & 0x3F) as u8,
                0x80 | (cp & 0x3F) as u8,
            ]),
            0x10000..=0x10FFFF => out.extend([
                0xF0 | (cp >> 18) as u8,
                0x80 | ((cp >> 12) & 0x3F) as u8,
                0x80 | ((cp >> 6) & 0x3F) as u8,
                0x80 | (cp & 0x3F) as u8,
            ]),
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn surrogates_and_astral_have_distinct_encodings() {
        let pair = encode_code_points(&[0xD83D, 0xDE00]);
        let astral = encode_code_points(&[0x1F600]);
        assert_eq!(pair, vec![0xED, 0xA0, 0xBD, 0xED, 0xB8, 0x80]);
        assert_eq!(astral, "😀".as_bytes());
        assert_eq!(char_starts(&pair).collect::<Vec<_>>(), vec![0, 3]);
    }

    #[test]
    fn advance_counts_code_points() {
        let text = "é😀a:b".as_bytes();
        assert_eq!(advance_chars(text, 0, 3), 2 + 4 + 1);
        assert_eq!(advance_chars(text, 0, 99), text.len());
        assert_eq!(advance_chars(b"", 0, 3), 0);
    }
}
