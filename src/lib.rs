//! ansible-accel: native engines for ansible-core's hot paths.
//!
//! Each engine is plain Rust with its own `cargo test` coverage; the pyo3 glue lives in
//! `py/` behind the `python` feature and only converts and dispatches.

pub mod argspec;
pub mod finder;
pub mod masking;
pub mod nolog;
pub mod payload;
pub mod runner_proto;

#[cfg(feature = "python")]
mod py;

// Only the extension: `cargo test` keeps the system allocator.  Every allocation the crate
// makes is freed by the crate (none is handed to Python to free), so the two never mix.
#[cfg(feature = "python")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
