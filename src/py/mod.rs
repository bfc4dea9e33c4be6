//! The pyo3 glue: conversions and dispatch only, one file per engine.  Each engine's file
//! has `register(m)`, which adds its classes and functions to `ansible_accel._native`.

use std::panic::{catch_unwind, AssertUnwindSafe};

use pyo3::prelude::*;

mod argspec;
mod finder;
mod masking;
mod nolog;
mod payload;

/// The extension module `ansible_accel._native`.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    argspec::register(m)?;
    finder::register(m)?;
    masking::register(m)?;
    nolog::register(m)?;
    payload::register(m)?;
    Ok(())
}

/// Run `f`, turning a Rust panic into the ordinary exception `on_panic` makes (never a
/// `PanicException`); each engine chooses an error that carries nothing of the data.
pub(crate) fn catching_panics<T>(
    f: impl FnOnce() -> PyResult<T>,
    on_panic: impl FnOnce() -> PyErr,
) -> PyResult<T> {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|_| Err(on_panic()))
}
