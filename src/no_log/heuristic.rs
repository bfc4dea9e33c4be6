//! `heuristic_log_sanitize`'s scan for `user:password@host` and `scheme://user:password@host`.
//!
//! ansible-core walks the text backwards: from each `@` it looks for the nearest `://` before it
//! (or the start of the text), then for the first `:` from three characters past that point up
//! to the `@`; the text between that `:` and the `@` becomes `********`, and the search goes on
//! before the `://` (or stops at the start).  With no `:` it tries the `://` before that one;
//! having tried the start of the text, it keeps everything before the last point reached.

use memchr::{memchr, memmem, memrchr};

use super::replace::MASK;
use crate::masking::text::advance_chars;

/// The scanned text, or `None` when no password was found (ansible-core returns it unchanged).
pub fn heuristic_scan(data: &[u8]) -> Option<Vec<u8>> {
    // (start, end) pieces kept from `data`, last first; `None` stands for the mask.
    let mut pieces: Vec<Option<(usize, usize)>> = Vec::new();
    let mut begin = data.len();
    let mut prev_begin = begin;
    loop {
        let Some(at) = memrchr(b'@', &data[..begin]) else {
            pieces.push(Some((0, begin)));
            break;
        };
        let Some((found_begin, sep)) = find_separator(data, at) else {
            pieces.push(Some((0, prev_begin)));
            break;
        };
        pieces.push(Some((at, prev_begin)));
        pieces.push(None);
        pieces.push(Some((found_begin, sep + 1)));
        begin = found_begin;
        prev_begin = found_begin;
    }
    if pieces.len() == 1 {
        return None;
    }
    let mut out = Vec::with_capacity(data.len());
    for piece in pieces.iter().rev() {
        match piece {
            Some((start, end)) => out.extend_from_slice(&data[*start..*end]),
            None => out.extend_from_slice(MASK),
        }
    }
    Some(out)
}

/// The start of the credentials before the `@` at `at`, and the `:` after the user name.
fn find_separator(data: &[u8], at: usize) -> Option<(usize, usize)> {
    let mut search_end = at;
    loop {
        let begin = memmem::rfind(&data[..search_end], b"://").unwrap_or(0);
        // `begin + 3` counts characters; past a `://` (ASCII) bytes and characters agree.
        let from = if begin == 0 {
            advance_chars(data, 0, 3)
        } else {
            begin + 3
        };
        if from < at {
            if let Some(offset) = memchr(b':', &data[from..at]) {
                return Some((begin, from + offset));
            }
        }
        if begin == 0 {
            return None;
        }
        search_end = begin;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::masking::text::encode as encode_code_points;

    /// The documented search, over code points, with Python's `rindex`/`index` bounds.
    fn reference(data: &[u32]) -> Vec<u32> {
        let rfind = |needle: &[u32], end: usize| {
            (0..=end.saturating_sub(needle.len()))
                .rev()
                .find(|&i| i + needle.len() <= end && data[i..i + needle.len()] == *needle)
        };
        let colon = ':' as u32;
        let mut kept: Vec<Vec<u32>> = Vec::new();
        let (mut begin, mut prev_begin) = (data.len(), data.len());
        loop {
            let Some(at) = rfind(&['@' as u32], begin) else {
                kept.push(data[..begin].to_vec());
                break;
            };
            let mut search_end = at;
            let found = loop {
                let start = rfind(&[':' as u32, '/' as u32, '/' as u32], search_end).unwrap_or(0);
                let sep = (start + 3..at).find(|&i| data[i] == colon);
                match sep {
                    Some(sep) => break Some((start, sep)),
                    None if start == 0 => break None,
                    None => search_end = start,
                }
            };
            let Some((start, sep)) = found else {
                kept.push(data[..prev_begin].to_vec());
                break;
            };
            kept.push(data[at..prev_begin].to_vec());
            kept.push(MASK.iter().map(|&b| b as u32).collect());
            kept.push(data[start..=sep].to_vec());
            begin = start;
            prev_begin = start;
        }
        kept.into_iter().rev().flatten().collect()
    }

    #[test]
    fn random_texts_agree_with_the_reference() {
        let alphabet = [0x61, 0x3A, 0x2F, 0x40, 0x20, 0xE9, 0xD800, 0x1F600];
        let mut state: u64 = 0x2545_F491_4F6C_DD1D;
        for _ in 0..50_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let len = (state % 16) as usize;
            let text: Vec<u32> = (0..len)
                .map(|i| alphabet[((state >> (4 + 3 * i)) % 8) as usize])
                .collect();
            let bytes = encode_code_points(&text);
            let got = heuristic_scan(&bytes).unwrap_or_else(|| bytes.clone());
            assert_eq!(got, encode_code_points(&reference(&text)), "text {text:?}");
        }
    }

    fn scan(text: &str) -> String {
        match heuristic_scan(text.as_bytes()) {
            Some(out) => String::from_utf8(out).unwrap(),
            None => text.to_string(),
        }
    }

    #[test]
    fn url_and_ssh_styles() {
        assert_eq!(
            scan("http://user:pass@host/x"),
            "http://user:********@host/x"
        );
        assert_eq!(scan("user:pass@host"), "user:********@host");
        assert_eq!(scan("no password here"), "no password here");
        assert_eq!(
            scan("a://b:c@d e://f:g@h"),
            "a://b:********@d e://f:********@h"
        );
    }

    #[test]
    fn begin_plus_three_counts_characters_not_bytes() {
        // Python: no ':' from index 3 on, so nothing is masked.
        assert_eq!(scan("éé:x@y"), "éé:x@y");
        assert_eq!(scan("ééé:x@y"), "ééé:********@y");
    }

    #[test]
    fn no_separator_keeps_the_text_before_the_last_point_reached() {
        assert_eq!(scan("x@y ftp://u:p@h"), "x@y ftp://u:********@h");
        assert_eq!(scan("@@@"), "@@@");
        assert_eq!(scan("://@"), "://@");
    }
}
