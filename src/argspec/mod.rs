//! The argspec engine.
