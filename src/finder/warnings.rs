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
    // Most tokens are neither literals nor numbers: decided on the kind alone.
    let kind = token.kind();
    let is_literal = matches!(
        kind,
        TokenKind::String | TokenKind::FStringMiddle | TokenKind::TStringMiddle
    );
    if !is_literal && !matches!(kind, TokenKind::Int | TokenKind::Float | TokenKind::Complex) {
        return false;
    }
    let range = token.range();
    let (start, end) = (range.start().to_usize(), range.end().to_usize());
    let Some(token_text) = bytes.get(start..end) else {
        return true;
    };
    if is_literal {
        let Some(flags) = token.string_flags() else {
            return true;
        };
        !flags.is_raw_string() && has_doubtful_escape(token_text, flags.is_byte_string())
    } else {
        bytes
            .get(end)
            .is_some_and(|&b| b == b'_' || b.is_ascii_alphabetic() || b >= 0x80)
    }
}

/// Any escape CPython would warn about, or that we are not sure it would not.
fn has_doubtful_escape(literal: &[u8], is_bytes: bool) -> bool {
    let mut from = 0;
    while let Some(offset) = memchr::memchr(b'\\', &literal[from..]) {
        let i = from + offset;
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
        from = i + 2;
    }
    false
}
