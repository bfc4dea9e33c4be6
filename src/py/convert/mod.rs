//! Conversion between Python objects and the engines' Rust values: text (`str` as the
//! generalized UTF-8 the text engines read), the argspec engine's values, and ansible-core's
//! tagged types.  No engine logic: what an engine does with the values is the engine's.

pub(crate) mod containers;
pub(crate) mod kept;
pub(crate) mod tagged;
pub(crate) mod text;
pub(crate) mod values;
