//! Glue for the no_log engine: the compiled no_log values, and the two structure walks (in
//! `no_log/walk.rs`).  The `str` <-> generalized UTF-8 conversions are `convert::text`'s.
//!
//! The entry points answer through [`Answer`]: their value, or where the glue failed inside
//! (a panic) the reason as a `str`, after which ansible-core's own function answers.  A
//! Python exception met on the way (ansible-core's own errors) is raised as it is.

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::PyString;
use pyo3::IntoPyObjectExt;

use super::answer::{declining_panics, Answer};
use super::convert::text::{str_from, text_bytes};
use crate::no_log::{heuristic_scan, Fallback, NoLogPatterns, Scrubbed};

mod walk;

/// `f`'s value (never a `str`) as the answer, or the decline where it panics.
pub(crate) fn answered<'py, T: IntoPyObject<'py>>(
    py: Python<'py>,
    f: impl FnOnce() -> PyResult<T>,
) -> PyResult<Bound<'py, PyAny>> {
    declining_panics(Fallback::InternalError, || {
        Ok(Answer::Done(f()?.into_bound_py_any(py)?))
    })?
    .into_python(py)
}

/// Strings above this size are scanned with the GIL released.
const DETACH_BYTES: usize = 256 * 1024;

/// The no_log values of one call, in ansible-core's order, compiled for the engine.
#[pyclass(frozen, module = "ansible_accel._native")]
pub struct NoLogMatcher {
    patterns: NoLogPatterns,
}

/// `no_log_matcher(values)`: the `NoLogMatcher` of `values` (the `str` values, already in
/// the order ansible-core applies them), or the reason (a `str`) ansible-core's code answers.
#[pyfunction]
fn no_log_matcher<'py>(
    py: Python<'py>,
    values: Vec<Bound<'py, PyString>>,
) -> PyResult<Bound<'py, PyAny>> {
    answered(py, || {
        let encoded = values
            .iter()
            .map(text_bytes)
            .collect::<PyResult<Vec<_>>>()?;
        Ok(NoLogMatcher {
            patterns: NoLogPatterns::new(encoded),
        })
    })
}

#[pymethods]
impl NoLogMatcher {
    /// The string ansible-core's chain of replacements makes of `text` (no exact-match test;
    /// for tests, which have nothing to fall back to: a panic raises `RuntimeError`).
    fn replace_all<'py>(&self, text: &Bound<'py, PyString>) -> PyResult<Bound<'py, PyString>> {
        let replaced = || {
            let bytes = text_bytes(text)?;
            match self.patterns.replace_all(&bytes) {
                Some(out) => str_from(text.py(), &out),
                None => Ok(text.clone()),
            }
        };
        super::catching_panics(replaced, || {
            PyRuntimeError::new_err("internal error in native no_log")
        })
    }
}

impl NoLogMatcher {
    pub(crate) fn patterns(&self) -> &NoLogPatterns {
        &self.patterns
    }

    /// One `str`'s scrub, releasing the GIL for large texts.
    pub(crate) fn scrub(&self, py: Python<'_>, text: &[u8]) -> Scrubbed {
        if text.len() >= DETACH_BYTES {
            py.detach(|| self.patterns.scrub(text))
        } else {
            self.patterns.scrub(text)
        }
    }
}

/// `heuristic_log_sanitize`'s scan of `data`: `(scanned,)`, `scanned` None when ansible-core
/// would return `data` unchanged (a 1-tuple, since a `str` answer is a reason).
#[pyfunction]
fn heuristic_scan_text<'py>(data: &Bound<'py, PyString>) -> PyResult<Bound<'py, PyAny>> {
    let py = data.py();
    answered(py, || {
        let bytes = text_bytes(data)?;
        let scanned = if bytes.len() >= DETACH_BYTES {
            py.detach(|| heuristic_scan(&bytes))
        } else {
            heuristic_scan(&bytes)
        };
        Ok((scanned.map(|out| str_from(py, &out)).transpose()?,))
    })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<NoLogMatcher>()?;
    m.add_function(wrap_pyfunction!(no_log_matcher, m)?)?;
    m.add_class::<walk::NoLogContext>()?;
    m.add_function(wrap_pyfunction!(heuristic_scan_text, m)?)?;
    m.add_function(wrap_pyfunction!(walk::remove_values_walk, m)?)?;
    m.add_function(wrap_pyfunction!(walk::sanitize_keys_walk, m)?)?;
    Ok(())
}
