//! ansible-accel: native engines for ansible-core's hot paths.
//!
//! Each engine (`finder`, `payload`, `argspec`, `masking`, `no_log`) is plain Rust with its own
//! `cargo test` coverage and no Python in it.  The extension module (`py/`, behind the
//! `python` feature) converts Python objects to the engines' values and back, holds the
//! engines that work on Python objects themselves (the argspec fast path, the no_log walks,
//! `mask_object`), and keeps every reliance on CPython's internals in one module (`py/cpython`).
//! `runner_proto` is the protocol the module runner's client (`runner_client/`, built by
//! `build.rs`) speaks.

pub mod argspec;
pub mod finder;
pub mod masking;
pub mod no_log;
pub mod payload;
pub mod runner_proto;

#[cfg(test)]
mod source_checks;

#[cfg(feature = "python")]
mod py;

// Only the extension: `cargo test` keeps the system allocator.  Every allocation the crate
// makes is freed by the crate (none is handed to Python to free), so the two never mix.
#[cfg(feature = "python")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
