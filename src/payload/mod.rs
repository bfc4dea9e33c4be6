//! The payload engine.
