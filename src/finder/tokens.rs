//! The checks made on the parser's tokens, in one pass over them (a token list is as long as
//! the file: walking it three times showed in profiles).

use ruff_python_ast::token::Tokens;

use super::compat::NestedFStrings;
use super::depth::DepthCheck;
use super::warnings;

/// What the tokens say about a file that parsed.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct TokenVerdict {
    /// Nested past what we hold safely (see `depth`); the other answers are then partial.
    pub too_deep: bool,
    /// Syntax ruff accepts for the target but CPython before 3.12 refuses (see `compat`).
    pub refused_by_python: bool,
    /// compile() may emit a warning (see `warnings`).
    pub may_warn: bool,
}

pub fn check(text: &str, tokens: &Tokens, python: (u8, u8)) -> TokenVerdict {
    let bytes = text.as_bytes();
    let mut depth = DepthCheck::default();
    let mut fstrings = (python < (3, 12)).then(NestedFStrings::default);
    let mut verdict = TokenVerdict::default();
    for token in tokens.iter() {
        let kind = token.kind();
        if depth.too_deep_after(kind) {
            verdict.too_deep = true;
            break;
        }
        if let Some(check) = fstrings.as_mut() {
            if check.refused_before_312(kind) {
                verdict.refused_by_python = true;
                fstrings = None;
            }
        }
        if !verdict.may_warn && warnings::token_may_warn(bytes, token) {
            verdict.may_warn = true;
        }
    }
    verdict
}
