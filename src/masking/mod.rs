//! The masking engine.
