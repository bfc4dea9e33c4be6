//! The finder engine.
