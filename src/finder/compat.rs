//! Version rules ruff's own checks do not cover, found by comparing with compile().

use ruff_python_ast::token::{TokenKind, Tokens};

/// Before 3.12, CPython refuses f-strings nested more than two levels deep
/// (`f'{x:{y:{z}}}'`: "f-string: expressions nested too deeply"), which ruff accepts for a
/// 3.11 target.  Wider than CPython's rule: three levels of braces inside an f-string.
pub fn refused_before_312(python: (u8, u8), tokens: &Tokens) -> bool {
    if python >= (3, 12) {
        return false;
    }
    // Brace depth at which each open f-string started, innermost last.
    let mut fstring_starts: Vec<usize> = Vec::new();
    let mut braces = 0usize;
    for token in tokens.iter() {
        match token.kind() {
            TokenKind::FStringStart | TokenKind::TStringStart => fstring_starts.push(braces),
            TokenKind::FStringEnd | TokenKind::TStringEnd => {
                fstring_starts.pop();
            }
            TokenKind::Lbrace => {
                braces += 1;
                if fstring_starts
                    .first()
                    .is_some_and(|&start| braces - start >= 3)
                {
                    return true;
                }
            }
            TokenKind::Rbrace => braces = braces.saturating_sub(1),
            _ => {}
        }
    }
    false
}
