//! How a native entry point answers Python when it may leave a call to ansible-core's own
//! code: done, declined before any user code ran, or given up after user code ran, with what
//! it hands over.  An engine's reasons are a typed enum ([`Reason`]); Python receives the
//! reason's text, which the Python side counts under the path in `status()`.
//!
//! An internal failure (a panic) of an entry point that can leave its call to ansible-core or
//! zipfile is a decline like any other ([`declining_panics`]).  Masking has no such answer: a
//! masking failure is an error that carries nothing of the value (fail closed), never a call
//! left to another masker.

use std::panic::{catch_unwind, AssertUnwindSafe};

use pyo3::prelude::*;
use pyo3::types::PyString;

use crate::argspec::Unhandled;
use crate::{finder, no_log, payload};

/// An engine's typed reason for leaving a call to ansible-core.
pub(crate) trait Reason: Copy {
    /// The text counted in `status()`.
    fn text(self) -> &'static str;
}

/// The engines' reasons, each already naming its text `reason()`.
macro_rules! reasons {
    ($($why:ty),*) => {$(
        impl Reason for $why {
            fn text(self) -> &'static str {
                self.reason()
            }
        }
    )*};
}

reasons!(
    finder::Fallback,
    Unhandled,
    payload::Fallback,
    no_log::Fallback
);

/// One call's answer, made a Python value by [`Answer::into_python`].
pub(crate) enum Answer<'py, Why> {
    /// Answered natively: Python receives this value (never a `str`).
    Done(Bound<'py, PyAny>),
    /// Not taken, before any user code ran or with nothing of it kept (an internal failure
    /// of a walk that called ansible-core's helpers: they run again in ansible-core's own
    /// function): Python receives the reason as a `str`, or `None` where the caller finds
    /// the reason itself (or, for the zip writer's `add_block`, where nothing was written).
    Declined(Option<Why>),
    /// Given up after user code may have run: Python receives `(reason, *handed)`, what
    /// ansible-core's own code is handed so that the user code does not run twice.
    GaveUp(Why, [Bound<'py, PyAny>; 2]),
}

impl<'py, Why: Reason> Answer<'py, Why> {
    pub(crate) fn into_python(self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        match self {
            Answer::Done(value) => Ok(value),
            Answer::Declined(Some(why)) => Ok(PyString::new(py, why.text()).into_any()),
            Answer::Declined(None) => Ok(py.None().into_bound(py)),
            Answer::GaveUp(why, [first, second]) => {
                let reason = PyString::new(py, why.text());
                Ok((reason, first, second).into_pyobject(py)?.into_any())
            }
        }
    }
}

/// `f`'s answer, or `Declined(why)` where it panics: an internal failure, after which the
/// caller has ansible-core (or zipfile) answer, and the panic carries nothing to Python.
pub(crate) fn declining_panics<'py, Why>(
    why: Why,
    f: impl FnOnce() -> PyResult<Answer<'py, Why>>,
) -> PyResult<Answer<'py, Why>> {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or(Ok(Answer::Declined(Some(why))))
}
