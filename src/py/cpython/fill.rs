//! Filling a new container from an old one in one call, and reading an exact sequence's items
//! borrowed: the no_log walk's copy of a container whose items it scrubbed without running any
//! Python code.

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};
use pyo3::Borrowed;

/// `new.update(old)` for two exact dicts (their keys and order copied, nothing hashed again).
pub(crate) fn merge_dict(new: &Bound<'_, PyDict>, old: &Bound<'_, PyDict>) -> PyResult<()> {
    // SAFETY: both are live dicts and the GIL is held; 0, or -1 with an exception set, comes
    // back.
    if unsafe { ffi::PyDict_Merge(new.as_ptr(), old.as_ptr(), 1) } != 0 {
        return Err(PyErr::fetch(new.py()));
    }
    Ok(())
}

/// An exact list or tuple whose items are read borrowed, by index.
pub(crate) struct ExactSequence<'a, 'py> {
    sequence: &'a Bound<'py, PyAny>,
    is_list: bool,
    len: usize,
}

impl<'a, 'py> ExactSequence<'a, 'py> {
    /// `sequence` if it is an exact list or tuple.
    pub(crate) fn new(sequence: &'a Bound<'py, PyAny>) -> Option<ExactSequence<'a, 'py>> {
        let is_list = sequence.is_exact_instance_of::<PyList>();
        if !is_list && !sequence.is_exact_instance_of::<PyTuple>() {
            return None;
        }
        let len = sequence.len().ok()?;
        Some(ExactSequence {
            sequence,
            is_list,
            len,
        })
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The item at `index` (below `len()`), borrowed.
    ///
    /// # Safety
    /// No Python code has run since `new` (a list could have shrunk), nor runs while the item
    /// is in use (the list could drop it).
    pub(crate) unsafe fn item(&self, index: usize) -> Borrowed<'_, 'py, PyAny> {
        debug_assert!(index < self.len);
        let py = self.sequence.py();
        let sequence = self.sequence.as_ptr();
        // SAFETY: `index < len` of a live exact list or tuple (unchanged: the caller's
        // guarantee), the GIL held; the item is borrowed from the sequence.
        unsafe {
            let item = if self.is_list {
                ffi::PyList_GetItem(sequence, index as ffi::Py_ssize_t)
            } else {
                ffi::PyTuple_GetItem(sequence, index as ffi::Py_ssize_t)
            };
            Borrowed::from_ptr(py, item)
        }
    }
}

/// Fill the empty list `new` with `old`'s items, then put each `(index, value)` of `changed`
/// at its index.
pub(crate) fn fill_list(
    new: &Bound<'_, PyList>,
    old: &ExactSequence<'_, '_>,
    changed: Vec<(usize, Bound<'_, PyAny>)>,
) -> PyResult<()> {
    let py = new.py();
    // SAFETY: `new` is a live list, `old` a live list or tuple, the GIL is held; 0, or -1 with
    // an exception set, comes back.
    if unsafe { ffi::PyList_SetSlice(new.as_ptr(), 0, 0, old.sequence.as_ptr()) } != 0 {
        return Err(PyErr::fetch(py));
    }
    for (index, value) in changed {
        new.set_item(index, value)?;
    }
    Ok(())
}
