//! Spotting source on which compile() would emit a warning, so that such files go through
//! ansible-core's own compile() and the warning reaches the user as it does without us.
//!
//! CPython's parser warns (SyntaxWarning from 3.12, DeprecationWarning before) about invalid
//! escape sequences and octal escapes above 0o377 in non-raw literals, and about a number
//! immediately followed by a name (`1if x else y`).  The checks here are deliberately wider:
//! a false alarm only costs a fallback.

use ruff_python_ast::token::{Token, TokenKind};
use ruff_text_size::Ranged;

/// True when compile() may warn about this token (`bytes` being the whole source).
pub fn token_may_warn(bytes: &[u8], token: &Token) -> bool {
    let range = token.range();
    let (start, end) = (range.start().to_usize(), range.end().to_usize());
    let Some(token_text) = bytes.get(start..end) else {
        return true;
    };
    match token.kind() {
        TokenKind::String | TokenKind::FStringMiddle | TokenKind::TStringMiddle => {
            let Some(flags) = token.string_flags() else {
                return true;
            };
            !flags.is_raw_string() && has_doubtful_escape(token_text, flags.is_byte_string())
        }
        TokenKind::Int | TokenKind::Float | TokenKind::Complex => bytes
            .get(end)
            .is_some_and(|&b| b == b'_' || b.is_ascii_alphabetic() || b >= 0x80),
        _ => false,
    }
}

/// Any escape CPython would warn about, or that we are not sure it would not.
fn has_doubtful_escape(literal: &[u8], is_bytes: bool) -> bool {
    let mut i = 0;
    while i < literal.len() {
        if literal[i] != b'\\' {
            i += 1;
            continue;
        }
        let Some(&next) = literal.get(i + 1) else {
            return true;
        };
        match next {
            b'\n' | b'\r' | b'\\' | b'\'' | b'"' | b'a' | b'b' | b'f' | b'n' | b'r' | b't'
            | b'v' | b'x' => {}
            b'N' | b'u' | b'U' if !is_bytes => {}
            b'0'..=b'7' => {
                let digits = literal[i + 1..]
                    .iter()
                    .take(3)
                    .take_while(|b| (b'0'..=b'7').contains(b))
                    .count();
                // Three digits starting 4-7 exceed 0o377: CPython warns.
                if digits == 3 && next >= b'4' {
                    return true;
                }
            }
            _ => return true,
        }
        i += 2;
    }
    false
}
