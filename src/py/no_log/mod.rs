//! Glue for the no_log engine: the compiled no_log values, and the two structure walks (in
//! `no_log/walk.rs`).  The `str` <-> generalized UTF-8 conversions are `convert::text`'s.

use pyo3::prelude::*;
use pyo3::types::PyString;

use super::convert::text::{str_from, text_bytes};
use crate::no_log::{heuristic_scan, NoLogPatterns, Scrubbed};

mod walk;

pyo3::create_exception!(
    ansible_accel._native,
    NoLogInternalError,
    pyo3::exceptions::PyException,
    "An internal failure of the native no_log engine: the caller runs ansible-core's own code."
);

/// Run `f`, turning a Rust panic into `NoLogInternalError` (never a `PanicException`).
pub(crate) fn guarded<T>(f: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    super::catching_panics(f, || {
        NoLogInternalError::new_err("internal error in native no_log")
    })
}

/// Strings above this size are scanned with the GIL released.
const DETACH_BYTES: usize = 256 * 1024;

/// The no_log values of one call, in ansible-core's order, compiled for the engine.
#[pyclass(frozen, module = "ansible_accel._native")]
pub struct NoLogMatcher {
    patterns: NoLogPatterns,
}

#[pymethods]
impl NoLogMatcher {
    /// `values`: the `str` values, already in the order ansible-core applies them.
    #[new]
    fn new(values: Vec<Bound<'_, PyString>>) -> PyResult<Self> {
        guarded(|| {
            let encoded = values
                .iter()
                .map(text_bytes)
                .collect::<PyResult<Vec<_>>>()?;
            Ok(NoLogMatcher {
                patterns: NoLogPatterns::new(encoded),
            })
        })
    }

    /// The string ansible-core's chain of replacements makes of `text` (no exact-match test).
    fn replace_all<'py>(&self, text: &Bound<'py, PyString>) -> PyResult<Bound<'py, PyString>> {
        guarded(|| {
            let bytes = text_bytes(text)?;
            match self.patterns.replace_all(&bytes) {
                Some(out) => str_from(text.py(), &out),
                None => Ok(text.clone()),
            }
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

/// `heuristic_log_sanitize`'s scan of `data`; `None` when ansible-core would return it unchanged.
#[pyfunction]
fn heuristic_scan_text<'py>(data: &Bound<'py, PyString>) -> PyResult<Option<Bound<'py, PyString>>> {
    guarded(|| {
        let bytes = text_bytes(data)?;
        let scanned = if bytes.len() >= DETACH_BYTES {
            data.py().detach(|| heuristic_scan(&bytes))
        } else {
            heuristic_scan(&bytes)
        };
        scanned.map(|out| str_from(data.py(), &out)).transpose()
    })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add(
        "NoLogInternalError",
        m.py().get_type::<NoLogInternalError>(),
    )?;
    m.add_class::<NoLogMatcher>()?;
    m.add_class::<walk::NoLogContext>()?;
    m.add_function(wrap_pyfunction!(heuristic_scan_text, m)?)?;
    m.add_function(wrap_pyfunction!(walk::remove_values_walk, m)?)?;
    m.add_function(wrap_pyfunction!(walk::sanitize_keys_walk, m)?)?;
    Ok(())
}
