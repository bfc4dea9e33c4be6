//! The pyo3 glue: conversions and dispatch only, one file per engine.  Each engine's file
//! has `register(m)`, which adds its classes and functions to `ansible_accel._native`.

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
