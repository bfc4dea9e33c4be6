//! Refusing source nested deeper than we can safely hold.
//!
//! ruff's parser grows its stack as it recurses, but walking or dropping a very deep tree
//! recurses too, on whatever stack we have.  CPython itself refuses more than 100 indentation
//! levels and 200 nested brackets; long chains of operators (`not not ... x`) it only refuses
//! far deeper.  The parser's tokens bound the tree's depth; past the bounds the file goes to
//! compile(), which gives its own answer, and the tree is dropped on a stack big enough.

use ruff_python_ast::token::{TokenKind, Tokens};

/// CPython's MAXINDENT.
const MAX_INDENT: usize = 100;
/// CPython's MAXLEVEL.
const MAX_BRACKETS: usize = 200;
/// Tokens in one logical line that can each add a level to an expression tree (a tree this
/// deep drops in well under a megabyte of stack).
const MAX_NESTING_TOKENS: usize = 1500;

pub fn too_deep(tokens: &Tokens) -> bool {
    let mut indent = 0usize;
    let mut brackets = 0usize;
    let mut nesting_tokens = 0usize;
    for token in tokens.iter() {
        match token.kind() {
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
    false
}

/// Drop a tree that may be too deep for this thread's stack: on a thread with a stack sized
/// for it (every token one level at most), or, past a gigabyte, never.
pub fn drop_deep_tree<T: Send + 'static>(tree: T, token_count: usize) {
    const LEVEL_BYTES: usize = 1024;
    const LIMIT: usize = 1 << 30;
    let size = token_count
        .saturating_mul(LEVEL_BYTES)
        .saturating_add(8 << 20);
    if size > LIMIT {
        std::mem::forget(tree); // a leak beats a crash, and only absurd input gets here
        return;
    }
    // Shared so that a failed spawn leaves the tree with us, to forget rather than drop here.
    let slot = std::sync::Arc::new(std::sync::Mutex::new(Some(tree)));
    let for_thread = std::sync::Arc::clone(&slot);
    let dropper = std::thread::Builder::new().stack_size(size).spawn(move || {
        let tree = for_thread.lock().ok().and_then(|mut guard| guard.take());
        drop(tree);
    });
    let joined = dropper.map(|handle| handle.join().is_ok()).unwrap_or(false);
    if !joined {
        if let Ok(mut guard) = slot.lock() {
            std::mem::forget(guard.take());
        }
    }
}
