//! The nolog engine.
