//! The runner client program, `ansible-accel-run`, as the extension carries it: build.rs
//! compiles it, and the Python side writes these bytes to a file it can execute.

use pyo3::prelude::*;
use pyo3::types::PyBytes;

static CLIENT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/ansible-accel-run"));

/// The `ansible-accel-run` executable's bytes (empty where it is not built: not Linux on
/// x86_64 or aarch64).
#[pyfunction]
pub(super) fn runner_client_binary(py: Python<'_>) -> Bound<'_, PyBytes> {
    PyBytes::new(py, CLIENT)
}
