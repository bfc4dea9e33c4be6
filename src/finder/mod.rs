//! The finder engine: which `module_utils` a Python source file imports, exactly as
//! ansible-core's `ModuleDepFinder` reports them.
//!
//! The answer is two sets of dotted-name tuples (`submodules`, and the subset found below
//! the module's top level, `optional_imports`), plus whether the file imports ansible-core's
//! `embed` support at its top level (ansible-core 2.21+ then inspects assignments, which we
//! leave to it).  Source that `compile()` would not treat exactly as we do is not answered:
//! the caller gets a [`Fallback`] with the reason and runs ansible-core's own code, so every
//! error message stays ansible-core's.

mod compat;
mod depth;
mod resolve;
mod source;
pub mod stamps;
mod tokens;
mod walk;
mod warnings;

#[cfg(test)]
mod proptests;
#[cfg(test)]
mod tests;

use std::collections::BTreeSet;

use ruff_python_ast::PythonVersion;
use ruff_python_parser::{Mode, ParseOptions};

pub use source::Source;

/// A dotted module name split on dots, as ModuleDepFinder stores it.
pub type NameParts = Vec<String>;

/// How far ModuleDepFinder's walk reaches into the tree; it changed between releases.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reach {
    /// ansible-core 2.19/2.20: every AST node held in a list field, `match` cases included.
    EveryListedNode,
    /// ansible-core 2.21+: only listed nodes that carry a source position, so the bodies of
    /// `match` cases (whose `match_case` node has none) are never seen.
    PositionedNodes,
}

/// What the scanner needs to know besides the source.
#[derive(Clone, Copy, Debug)]
pub struct ScanOptions {
    /// The running interpreter's (major, minor): syntax newer than it is not accepted.
    pub python: (u8, u8),
    pub reach: Reach,
}

/// ModuleDepFinder's findings for one file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ImportScan {
    pub submodules: BTreeSet<NameParts>,
    pub optional_imports: BTreeSet<NameParts>,
    /// A top-level `from ansible.module_utils import embed` or
    /// `from ansible.module_utils.embed import EmbedManager` (after relative resolution).
    pub embed_import: bool,
}

/// Why a file is left to ansible-core's own code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fallback {
    /// A NUL byte: CPython's error differs by version (ValueError or SyntaxError).
    NulByte,
    /// Bytes that are not UTF-8, or text that cannot be encoded as UTF-8.
    InvalidUtf8,
    /// A coding declaration other than UTF-8: CPython would decode with another codec.
    CodingDeclaration,
    /// A U+FEFF (BOM) that compile() would not skip: in text input, or after the first in bytes.
    TextBom,
    /// The parser found a syntax error.
    SyntaxError,
    /// Syntax the running Python does not have.
    UnsupportedSyntax,
    /// Nesting deeper than we hold safely (CPython refuses most of it anyway).
    TooDeep,
    /// compile() would emit a warning (invalid escape sequence, number followed by a name).
    CompileWarning,
    /// ModuleDepFinder itself raises on this file (a relative import it cannot resolve).
    FinderError,
    /// The scan failed inside (a panic, which the extension catches); never returned here.
    InternalError,
}

impl Fallback {
    /// The reason as counted under `finder` in `status()`.
    pub fn reason(self) -> &'static str {
        match self {
            Fallback::NulByte => "nul_byte",
            Fallback::InvalidUtf8 => "invalid_utf8",
            Fallback::CodingDeclaration => "coding_declaration",
            Fallback::TextBom => "text_bom",
            Fallback::SyntaxError => "syntax_error",
            Fallback::UnsupportedSyntax => "unsupported_syntax",
            Fallback::TooDeep => "too_deep",
            Fallback::CompileWarning => "compile_warning",
            Fallback::FinderError => "finder_error",
            Fallback::InternalError => "internal_error",
        }
    }
}

/// Scan one file the way `ModuleDepFinder(module_fqn, source, is_pkg_init)` would.
pub fn scan_imports(
    source: Source<'_>,
    module_fqn: &str,
    is_pkg_init: bool,
    options: &ScanOptions,
) -> Result<ImportScan, Fallback> {
    // Callers may run us on a thread with a small stack; make sure two megabytes are free.
    stacker::maybe_grow(2 * 1024 * 1024, 8 * 1024 * 1024, || {
        scan(source, module_fqn, is_pkg_init, options)
    })
}

fn scan(
    source: Source<'_>,
    module_fqn: &str,
    is_pkg_init: bool,
    options: &ScanOptions,
) -> Result<ImportScan, Fallback> {
    let text = source.decode()?;
    let target = PythonVersion {
        major: options.python.0,
        minor: options.python.1,
    };
    let parsed = match parse_module_for(text, target) {
        Some(parsed) => parsed,
        None => return Err(Fallback::SyntaxError),
    };
    let verdict = tokens::check(text, parsed.tokens(), options.python);
    if verdict.too_deep {
        let token_count = parsed.tokens().len();
        depth::drop_deep_tree(parsed, token_count);
        return Err(Fallback::TooDeep);
    }
    if !parsed.errors().is_empty() {
        return Err(Fallback::SyntaxError);
    }
    if !parsed.unsupported_syntax_errors().is_empty() || verdict.refused_by_python {
        return Err(Fallback::UnsupportedSyntax);
    }
    if verdict.may_warn {
        return Err(Fallback::CompileWarning);
    }
    let context = resolve::Context {
        module_fqn,
        is_pkg_init,
    };
    walk::collect(&parsed.syntax().body, &context, options.reach)
}

fn parse_module_for(
    text: &str,
    target: PythonVersion,
) -> Option<ruff_python_parser::Parsed<ruff_python_ast::ModModule>> {
    let options = ParseOptions::from(Mode::Module).with_target_version(target);
    // parse_unchecked keeps the tree and both error lists, so one parse answers every check.
    ruff_python_parser::parse_unchecked(text, options).try_into_module()
}
