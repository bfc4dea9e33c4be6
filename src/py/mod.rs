//! The extension module `ansible_accel._native`: the layer between Python objects and the
//! plain Rust engines (`crate::{finder, payload, argspec, masking, no_log}`).
//!
//! Three kinds of module live here:
//! - `convert`: Python objects to the engines' values and back (text as generalized UTF-8,
//!   the argspec engine's values, ansible-core's tagged types).  No engine logic.
//! - one module per engine (`finder`, `payload`, `argspec`, `masking`, `no_log`), each behind
//!   its `mod.rs`, with `register(m)` adding its classes and functions.  Most only convert and
//!   dispatch.  Three are engines over Python objects in their own right, because the work
//!   they save is the Python objects' own: the argspec fast path (`argspec/fast.rs`: a
//!   compiled spec reused while unchanged, ansible-core's result objects built directly), the
//!   no_log structure walks (`no_log/walk`) and `mask_object` (`masking/object.rs`).  They are
//!   tested through Python (their tests compare with ansible-core's own code).
//! - `cpython`: every read of a CPython object's layout, every slot call and every C-API call
//!   on borrowed references, each with its SAFETY note and the probe that guards it.  No other
//!   module here reads an object's fields or calls a slot.
//!
//! Beside them, `answer`: the one shape of an entry point's answer when it may leave a call
//! to ansible-core (done, declined, or given up with what it hands over).

use std::panic::{catch_unwind, AssertUnwindSafe};

use pyo3::prelude::*;

mod answer;
mod argspec;
mod convert;
mod cpython;
mod finder;
mod gil_cell;
mod masking;
mod no_log;
mod payload;
mod runner_client;

/// The extension module `ansible_accel._native`.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    argspec::register(m)?;
    finder::register(m)?;
    masking::register(m)?;
    no_log::register(m)?;
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
