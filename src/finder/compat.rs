//! Version rules ruff's own checks do not cover, found by comparing with compile().

use ruff_python_ast::token::TokenKind;

/// Before 3.12, CPython refuses f-strings nested more than two levels deep
/// (`f'{x:{y:{z}}}'`: "f-string: expressions nested too deeply"), which ruff accepts for a
/// 3.11 target.  Wider than CPython's rule: three levels of braces inside an f-string.
/// Fed one token at a time (see `tokens::check`).
#[derive(Default)]
pub struct NestedFStrings {
    /// Brace depth at which each open f-string started, innermost last.
    fstring_starts: Vec<usize>,
    braces: usize,
}

impl NestedFStrings {
    /// True when this token nests braces too deeply for a Python before 3.12.
    pub fn refused_before_312(&mut self, kind: TokenKind) -> bool {
        match kind {
            TokenKind::FStringStart | TokenKind::TStringStart => {
                self.fstring_starts.push(self.braces)
            }
            TokenKind::FStringEnd | TokenKind::TStringEnd => {
                self.fstring_starts.pop();
            }
            TokenKind::Lbrace => {
                self.braces += 1;
                let braces = self.braces;
                return self
                    .fstring_starts
                    .first()
                    .is_some_and(|&start| braces - start >= 3);
            }
            TokenKind::Rbrace => self.braces = self.braces.saturating_sub(1),
            _ => {}
        }
        false
    }
}
