//! The pyo3 glue: conversions and dispatch only, one file per engine.  Each engine's file
//! has `register(m)`, which adds its classes and functions to `ansible_accel._native`.

use std::panic::{catch_unwind, AssertUnwindSafe};

use pyo3::prelude::*;

mod argspec;
mod cpython;
mod finder;
mod finder_record;
mod gil_cell;
mod masking;
mod nolog;
mod payload;
mod runner_client;

/// The extension module `ansible_accel._native`.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    argspec::register(m)?;
    finder::register(m)?;
    finder_record::register(m)?;
    masking::register(m)?;
    nolog::register(m)?;
    payload::register(m)?;
    m.add_function(wrap_pyfunction!(release_free_memory, m)?)?;
    m.add_function(wrap_pyfunction!(runner_client::runner_client_binary, m)?)?;
    Ok(())
}

/// Hand the memory this thread's allocator (mimalloc) holds freed back to the system now,
/// rather than when it next gets round to it: the memory tests read the resident size after
/// it, so that it counts what is in use, not what happens to be awaiting release.
#[pyfunction]
fn release_free_memory() {
    // SAFETY: mi_collect frees only memory mimalloc holds that no allocation uses.
    unsafe { libmimalloc_sys::mi_collect(true) }
}

/// Run `f`, turning a Rust panic into the ordinary exception `on_panic` makes (never a
/// `PanicException`); each engine chooses an error that carries nothing of the data.
pub(crate) fn catching_panics<T>(
    f: impl FnOnce() -> PyResult<T>,
    on_panic: impl FnOnce() -> PyErr,
) -> PyResult<T> {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|_| Err(on_panic()))
}
