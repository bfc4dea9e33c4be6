//! ansible-core's tagged types: the str, int, float, list and dict subclasses controller data
//! carries origin tags on (2.19+), registered once by the Python side; a tagged object stands
//! for its builtin base (the Python side puts the tagged objects back into the result).

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyFloat, PyInt, PyList, PyString};

/// The builtin type an object stands for: its exact type, or the builtin base of one of
/// ansible-core's tagged types (controller data carries origin tags on str, int, float,
/// list and dict subclasses; the Python side puts the tagged objects back into the result).
#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Base {
    Str,
    Int,
    Float,
    List,
    Dict,
}

/// ansible-core's tagged str, int, float, list and dict types (in that order), registered
/// once by the Python side when they exist (2.19+).
pub(crate) static TAGGED_TYPES: std::sync::OnceLock<Vec<(usize, Base, Py<PyAny>)>> =
    std::sync::OnceLock::new();

thread_local! {
    /// Whether a conversion since the last reset met a tagged object.
    pub(crate) static SAW_TAGGED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Registers ansible-core's tagged types (str, int, float, list, dict); the first call wins.
#[pyfunction]
pub(crate) fn argspec_tagged_types(types: Vec<Bound<'_, PyAny>>) -> bool {
    let bases = [Base::Str, Base::Int, Base::Float, Base::List, Base::Dict];
    let entries = types
        .into_iter()
        .zip(bases)
        .map(|(t, base)| (t.as_ptr() as usize, base, t.unbind()))
        .collect();
    TAGGED_TYPES.set(entries).is_ok()
}

pub(crate) fn tagged_base(obj: &Bound<'_, PyAny>) -> Option<Base> {
    let ty = obj.get_type().as_ptr() as usize;
    let base = TAGGED_TYPES
        .get()?
        .iter()
        .find(|(t, _, _)| *t == ty)
        .map(|(_, base, _)| *base)?;
    SAW_TAGGED.with(|saw| saw.set(true));
    Some(base)
}

pub(crate) fn is_exact_or_tagged(obj: &Bound<'_, PyAny>, base: Base) -> bool {
    let exact = match base {
        Base::Str => obj.is_exact_instance_of::<PyString>(),
        Base::Int => obj.is_exact_instance_of::<PyInt>(),
        Base::Float => obj.is_exact_instance_of::<PyFloat>(),
        Base::List => obj.is_exact_instance_of::<PyList>(),
        Base::Dict => obj.is_exact_instance_of::<PyDict>(),
    };
    exact || tagged_base(obj) == Some(base)
}

/// Resets the tagged-object flag; returns whether anything tagged was met since the last reset.
pub(crate) fn take_saw_tagged() -> bool {
    SAW_TAGGED.with(|saw| saw.replace(false))
}
