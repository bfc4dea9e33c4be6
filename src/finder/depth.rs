//! Refusing source nested deeper than we can safely hold.
//!
//! ruff's parser grows its stack as it recurses, but dropping a very deep tree recurses too,
//! on whatever stack we have.  CPython itself refuses more than 100 indentation levels and
//! 200 nested brackets; long chains of prefix operators (`not not ... x`) it only refuses far
//! deeper.  A lexer pass (iterative, cheap next to parsing) bounds the tree's depth first;
//! anything past the bounds goes to compile(), which gives its own answer.

use ruff_python_ast::token::TokenKind;
use ruff_python_parser::{lexer, Mode};

/// CPython's MAXINDENT.
const MAX_INDENT: usize = 100;
/// CPython's MAXLEVEL.
const MAX_BRACKETS: usize = 200;
/// Tokens in one logical line that can each add a level to an expression tree (a tree this
/// deep drops in well under a megabyte of stack).
const MAX_NESTING_TOKENS: usize = 1500;

pub fn too_deep(text: &str) -> bool {
    let mut lexer = lexer::lex(text, Mode::Module);
    let mut indent = 0usize;
    let mut brackets = 0usize;
    let mut nesting_tokens = 0usize;
    loop {
        match lexer.next_token() {
            TokenKind::EndOfFile => return false,
            TokenKind::Indent => indent += 1,
            TokenKind::Dedent => indent = indent.saturating_sub(1),
            TokenKind::Newline => nesting_tokens = 0,
            TokenKind::Lpar | TokenKind::Lsqb | TokenKind::Lbrace => {
                brackets += 1;
                nesting_tokens += 1;
            }
            TokenKind::Rpar | TokenKind::Rsqb | TokenKind::Rbrace => {
                brackets = brackets.saturating_sub(1)
            }
            // Literals, names and separators sit side by side; every other token (operators,
            // dots, keywords) may open one more level of the tree.
            TokenKind::Name
            | TokenKind::Int
            | TokenKind::Float
            | TokenKind::Complex
            | TokenKind::String
            | TokenKind::FStringMiddle
            | TokenKind::FStringEnd
            | TokenKind::TStringMiddle
            | TokenKind::TStringEnd
            | TokenKind::Comma
            | TokenKind::Colon
            | TokenKind::NonLogicalNewline
            | TokenKind::Comment => {}
            _ => nesting_tokens += 1,
        }
        if indent > MAX_INDENT || brackets > MAX_BRACKETS || nesting_tokens > MAX_NESTING_TOKENS {
            return true;
        }
    }
}
