//! The masking engine: a registry of secrets and the forms they take in output, and a matcher
//! that finds every occurrence of them, overlapping included, and replaces each run of
//! overlapping or touching occurrences with one placeholder in a single pass.
//!
//! Texts are Python strings in generalized UTF-8 (`text`), so lone surrogates are ordinary code
//! points here; positions handed back to Python are code-point indices.

pub mod anchors;
pub mod forms;
pub mod lines;
pub mod matcher;
pub mod order;
pub mod text;

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::Arc;

pub use matcher::{merge_spans, replace_spans, SecretMatcher, Snapshot};

/// Why masking could not be done.  Deliberately carries nothing of the text or the secrets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MaskError {
    /// An automaton could not be built (too large for the aho-corasick crate).
    Build,
    /// A text was not generalized UTF-8 (a bug in the caller's conversion).
    Encoding,
}

impl fmt::Display for MaskError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("secret masking failed")
    }
}

impl std::error::Error for MaskError {}

/// Anything that hands out snapshots to search with: the matcher, and the registry around it.
pub trait Searchable {
    /// What to search with, building nothing (see `SecretMatcher::snapshot`).
    fn snapshot(&self) -> Snapshot;
    /// A snapshot with automata for every form (see `SecretMatcher::complete_snapshot`).
    fn complete_snapshot(&mut self, text_len: usize) -> Result<Snapshot, MaskError>;

    /// The quick snapshot for `None`, a complete one for a text of `Some(len)` bytes.
    fn snapshot_for(&mut self, complete_for: Option<usize>) -> Result<Snapshot, MaskError> {
        match complete_for {
            None => Ok(self.snapshot()),
            Some(text_len) => self.complete_snapshot(text_len),
        }
    }
}

impl Searchable for SecretMatcher {
    fn snapshot(&self) -> Snapshot {
        SecretMatcher::snapshot(self)
    }

    fn complete_snapshot(&mut self, text_len: usize) -> Result<Snapshot, MaskError> {
        SecretMatcher::complete_snapshot(self, text_len)
    }
}

impl Searchable for SecretRegistry {
    fn snapshot(&self) -> Snapshot {
        self.matcher.snapshot()
    }

    fn complete_snapshot(&mut self, text_len: usize) -> Result<Snapshot, MaskError> {
        self.matcher.complete_snapshot(text_len)
    }
}

/// Registered secrets, the forms derived from them, and the matcher over all forms.
#[derive(Default)]
pub struct SecretRegistry {
    secrets: HashSet<Arc<[u8]>>,
    /// Derived (JSON-escaped) form -> the secret it encodes, for forms that differ from it.
    derived: HashMap<Arc<[u8]>, Arc<[u8]>>,
    matcher: SecretMatcher,
}

impl SecretRegistry {
    pub fn new() -> Self {
        Self::default()
    }

    /// Register one secret; `Some(stripped secret)` when it was new, `None` when it stripped to
    /// nothing or was already registered.
    pub fn register(&mut self, secret: &[u8]) -> Result<Option<Vec<u8>>, MaskError> {
        let secret = forms::strip_secret(secret);
        if secret.is_empty() || self.secrets.contains(secret) {
            return Ok(None);
        }
        let forms = forms::secret_forms(secret).ok_or(MaskError::Encoding)?;
        let secret: Arc<[u8]> = Arc::from(secret);
        self.secrets.insert(secret.clone());
        for form in forms {
            if form[..] != secret[..] {
                self.derived.insert(Arc::from(&form[..]), secret.clone());
            }
            self.matcher.add(&form);
        }
        Ok(Some(secret.to_vec()))
    }

    /// True when no secret is registered (nothing can be masked).
    pub fn is_empty(&self) -> bool {
        self.matcher.is_empty()
    }

    pub fn secret_count(&self) -> usize {
        self.secrets.len()
    }

    /// `text` with every merged run of occurrences replaced by `placeholder`; `None` when
    /// `text` contains no secret.
    pub fn mask(&mut self, text: &[u8], placeholder: &[u8]) -> Result<Option<Vec<u8>>, MaskError> {
        let spans = self.matcher.byte_spans(text)?;
        Ok(replace_spans(text, merge_spans(spans), placeholder))
    }

    /// The registered secrets present in `text` (a JSON document), as their literal values:
    /// a derived form found in the text stands for the secret it encodes.
    pub fn secrets_in_json(&mut self, text: &[u8]) -> Result<Vec<Vec<u8>>, MaskError> {
        let spans = self.matcher.byte_spans(text)?;
        let mut found: Vec<Vec<u8>> = Vec::new();
        let mut seen: HashSet<&[u8]> = HashSet::new();
        for (start, end) in spans {
            let form = &text[start..end];
            let secret = self.derived.get(form).map_or(form, |s| &s[..]);
            if seen.insert(secret) {
                found.push(secret.to_vec());
            }
        }
        Ok(found)
    }
}

#[cfg(test)]
mod proptests;
#[cfg(test)]
mod tests;
