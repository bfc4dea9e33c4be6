//! The no_log engine: the string work behind ansible-core 2.19–2.21's `no_log` scrubbing.
//!
//! * [`NoLogPatterns`] reproduces `remove_values`' per-string work: the exact-match test and the
//!   chain of `str.replace(value, "********")` calls, one per no_log value in the order
//!   ansible-core applies them, in one multi-pattern pass wherever that provably gives the same
//!   result.
//! * [`heuristic_scan`] reproduces `heuristic_log_sanitize`'s search for `user:password@`.
//!
//! Text is Python `str` content in *generalized UTF-8* (see `crate::masking::text`) (what Python's
//! `str.encode("utf-8", "surrogatepass")` produces): every code point, lone surrogates included,
//! has its own byte sequence, the encoding is self-synchronizing and preserves order, so a byte
//! match of an encoded pattern is exactly a code-point match, and byte positions map one-to-one
//! onto code-point positions.

mod heuristic;
mod replace;

pub use heuristic::heuristic_scan;
pub use replace::{NoLogPatterns, Scrubbed, MASK};

/// Why a call is left to ansible-core's own function after the native side was asked (the
/// reasons found before it is asked are the Python side's).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fallback {
    /// The glue failed inside (a panic, which the extension catches).
    InternalError,
}

impl Fallback {
    /// The reason as counted under `no_log` in `status()`.
    pub fn reason(self) -> &'static str {
        match self {
            Fallback::InternalError => "internal error in the native engine",
        }
    }
}

#[cfg(test)]
mod fallback_tests {
    use super::Fallback;

    #[test]
    fn reason_is_the_text_status_counts() {
        assert_eq!(
            Fallback::InternalError.reason(),
            "internal error in the native engine"
        );
    }
}
