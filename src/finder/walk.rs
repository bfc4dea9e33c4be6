//! The walk over statement lists, reaching exactly where ModuleDepFinder reaches.
//!
//! Imports are statements, and statements only live in statement lists, so following every
//! statement list reaches every import Python's `ast` holds.  Depth only matters as "top
//! level or not": anything nested in a compound statement is an optional import.

use ruff_python_ast::{ExceptHandler, Stmt, StmtImport, StmtImportFrom};

use super::resolve::{self, Context};
use super::{Fallback, ImportScan, Reach};

struct Walker<'a> {
    context: &'a Context<'a>,
    reach: Reach,
    scan: ImportScan,
}

pub fn collect(body: &[Stmt], context: &Context<'_>, reach: Reach) -> Result<ImportScan, Fallback> {
    let mut walker = Walker {
        context,
        reach,
        scan: ImportScan::default(),
    };
    walker.suite(body, true)?;
    Ok(walker.scan)
}

impl Walker<'_> {
    fn suite(&mut self, body: &[Stmt], top_level: bool) -> Result<(), Fallback> {
        for stmt in body {
            self.stmt(stmt, top_level)?;
        }
        Ok(())
    }

    fn stmt(&mut self, stmt: &Stmt, top_level: bool) -> Result<(), Fallback> {
        match stmt {
            Stmt::Import(node) => self.import(node, top_level),
            Stmt::ImportFrom(node) => self.import_from(node, top_level),
            Stmt::FunctionDef(node) => self.suite(&node.body, false),
            Stmt::ClassDef(node) => self.suite(&node.body, false),
            Stmt::For(node) => {
                self.suite(&node.body, false)?;
                self.suite(&node.orelse, false)
            }
            Stmt::While(node) => {
                self.suite(&node.body, false)?;
                self.suite(&node.orelse, false)
            }
            Stmt::If(node) => {
                self.suite(&node.body, false)?;
                // `elif`/`else` are the `orelse` list in Python's tree: still nested.
                for clause in &node.elif_else_clauses {
                    self.suite(&clause.body, false)?;
                }
                Ok(())
            }
            Stmt::With(node) => self.suite(&node.body, false),
            Stmt::Try(node) => {
                self.suite(&node.body, false)?;
                for handler in &node.handlers {
                    let ExceptHandler::ExceptHandler(handler) = handler;
                    self.suite(&handler.body, false)?;
                }
                self.suite(&node.orelse, false)?;
                self.suite(&node.finalbody, false)
            }
            Stmt::Match(node) => match self.reach {
                Reach::EveryListedNode => {
                    for case in &node.cases {
                        self.suite(&case.body, false)?;
                    }
                    Ok(())
                }
                Reach::PositionedNodes => Ok(()),
            },
            // Simple statements hold expressions only, and expressions hold no statements.
            Stmt::Return(_)
            | Stmt::Delete(_)
            | Stmt::TypeAlias(_)
            | Stmt::Assign(_)
            | Stmt::AugAssign(_)
            | Stmt::AnnAssign(_)
            | Stmt::Raise(_)
            | Stmt::Assert(_)
            | Stmt::Global(_)
            | Stmt::Nonlocal(_)
            | Stmt::Expr(_)
            | Stmt::Pass(_)
            | Stmt::Break(_)
            | Stmt::Continue(_) => Ok(()),
            // IPython syntax never parses in Module mode; refuse rather than guess.
            Stmt::IpyEscapeCommand(_) => Err(Fallback::SyntaxError),
        }
    }

    fn import(&mut self, node: &StmtImport, top_level: bool) -> Result<(), Fallback> {
        if node.is_lazy {
            return Err(Fallback::UnsupportedSyntax);
        }
        for alias in &node.names {
            if let Some(parts) = resolve::import_name(alias.name.as_str()) {
                self.add(parts, top_level);
            }
        }
        Ok(())
    }

    fn import_from(&mut self, node: &StmtImportFrom, top_level: bool) -> Result<(), Fallback> {
        if node.is_lazy {
            return Err(Fallback::UnsupportedSyntax);
        }
        let Some(first) = node.names.first() else {
            return Err(Fallback::SyntaxError);
        };
        let module = node.module.as_ref().map(|m| m.as_str());
        let node_module = resolve::from_module(self.context, node.level, module);
        if first.name.as_str() == "_six" {
            // ModuleDepFinder's six special case: the bare name, never optional.
            self.scan.submodules.insert(vec!["_six".to_owned()]);
            return Ok(());
        }
        let Some(prefix) = resolve::from_prefix(node_module.as_deref())? else {
            return Ok(());
        };
        for alias in &node.names {
            let name = alias.name.as_str();
            let mut parts = prefix.clone();
            parts.push(name.to_owned());
            self.add(parts, top_level);
            if top_level {
                if let Some(node_module) = node_module.as_deref() {
                    if resolve::is_embed_import(node_module, name) {
                        self.scan.embed_import = true;
                    }
                }
            }
        }
        Ok(())
    }

    fn add(&mut self, parts: Vec<String>, top_level: bool) {
        if !top_level {
            self.scan.optional_imports.insert(parts.clone());
        }
        self.scan.submodules.insert(parts);
    }
}
