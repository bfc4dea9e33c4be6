//! Refusing source nested deeper than we can safely hold.
//!
//! ruff's parser grows its stack as it recurses, but walking or dropping a very deep tree
//! recurses too, on whatever stack we have.  CPython itself refuses more than 100 indentation
//! levels and 200 nested brackets; long chains of operators (`not not ... x`) it only refuses
//! far deeper.  The parser's tokens bound the tree's depth; past the bounds the file goes to
//! compile(), which gives its own answer, and the tree is dropped on a stack big enough.

use ruff_python_ast::token::TokenKind;

/// CPython's MAXINDENT.
const MAX_INDENT: usize = 100;
/// CPython's MAXLEVEL.
const MAX_BRACKETS: usize = 200;
/// Bound on the estimated depth of one logical line's expression tree (a tree this deep drops
/// in well under the megabytes of stack `scan_imports` makes sure of).
const MAX_ESTIMATED_DEPTH: usize = 1500;

/// One bracket level of a logical line.
#[derive(Default)]
struct Level {
    /// Tokens since the last comma at this level that may each add a tree level.
    chain: usize,
    /// Lambdas whose parameter list (where commas do not separate siblings) is still open.
    open_lambda_parameters: usize,
}

/// An upper bound, up to a small factor, on each logical line's tree depth: a comma starts a
/// sibling (list items, arguments), so only the chain since the last comma at each open
/// bracket level counts, plus one per open bracket.
#[derive(Default)]
struct LineDepth {
    levels: Vec<Level>,
    estimate: usize,
}

impl LineDepth {
    fn top(&mut self) -> &mut Level {
        if self.levels.is_empty() {
            self.levels.push(Level::default());
        }
        let last = self.levels.len() - 1;
        &mut self.levels[last]
    }

    /// A new logical line: no open brackets (the levels' storage kept for the next line).
    fn reset(&mut self) {
        self.levels.clear();
        self.estimate = 0;
    }

    fn deepen(&mut self) {
        self.top().chain += 1;
        self.estimate += 1;
    }

    fn open_bracket(&mut self) {
        self.deepen();
        self.levels.push(Level::default());
    }

    fn close_bracket(&mut self) {
        if self.levels.len() > 1 {
            if let Some(level) = self.levels.pop() {
                self.estimate -= level.chain;
            }
        }
    }

    fn comma(&mut self) {
        let level = self.top();
        if level.open_lambda_parameters == 0 {
            let chain = std::mem::take(&mut level.chain);
            self.estimate -= chain;
        }
    }

    fn lambda(&mut self) {
        self.deepen();
        self.top().open_lambda_parameters += 1;
    }

    fn colon(&mut self) {
        let level = self.top();
        level.open_lambda_parameters = level.open_lambda_parameters.saturating_sub(1);
    }
}

/// The depth bounds, fed one token at a time (see `tokens::check`).
#[derive(Default)]
pub struct DepthCheck {
    indent: usize,
    brackets: usize,
    line: LineDepth,
}

impl DepthCheck {
    /// True once the tokens so far are nested past a bound.
    pub fn too_deep_after(&mut self, kind: TokenKind) -> bool {
        let line = &mut self.line;
        match kind {
            TokenKind::Indent => self.indent += 1,
            TokenKind::Dedent => self.indent = self.indent.saturating_sub(1),
            TokenKind::Newline => line.reset(),
            TokenKind::Lpar | TokenKind::Lsqb | TokenKind::Lbrace => {
                self.brackets += 1;
                line.open_bracket();
            }
            TokenKind::Rpar | TokenKind::Rsqb | TokenKind::Rbrace => {
                self.brackets = self.brackets.saturating_sub(1);
                line.close_bracket();
            }
            TokenKind::Comma => line.comma(),
            TokenKind::Colon => line.colon(),
            TokenKind::Lambda => line.lambda(),
            // Names and literals sit side by side; every other token (operators, dots,
            // keywords) may open one more level of the tree.
            TokenKind::Name
            | TokenKind::Int
            | TokenKind::Float
            | TokenKind::Complex
            | TokenKind::String
            | TokenKind::FStringMiddle
            | TokenKind::FStringEnd
            | TokenKind::TStringMiddle
            | TokenKind::TStringEnd
            | TokenKind::NonLogicalNewline
            | TokenKind::Comment => {}
            _ => line.deepen(),
        }
        self.indent > MAX_INDENT
            || self.brackets > MAX_BRACKETS
            || self.line.estimate > MAX_ESTIMATED_DEPTH
    }
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
