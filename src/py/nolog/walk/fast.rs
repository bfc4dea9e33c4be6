//! `remove_values`' queue step for the common case, where no Python code can run: an exact
//! dict, list or tuple whose every value is of a type the walk handles itself (so nothing is
//! handed to ansible-core's helper and no user code can change the container meanwhile).
//!
//! The values are scrubbed in ansible-core's order (so the queue grows in its order), and the
//! new container is then filled in one go: the dict by merging the old one (its keys and their
//! order, copied without hashing anything again) and setting only the values that changed; the
//! list by copying the old items and replacing only the changed ones.  The result is the dict or
//! list ansible-core builds item by item.

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{
    PyBool, PyBytes, PyDict, PyFloat, PyFrozenSet, PyInt, PyList, PySet, PyString, PyTuple,
};
use pyo3::Borrowed;

use super::Walk;

/// Types the walk scrubs without calling any Python code.
fn handled_here(value: &Bound<'_, PyAny>) -> bool {
    value.is_exact_instance_of::<PyString>()
        || value.is_none()
        || value.is_exact_instance_of::<PyBool>()
        || value.is_exact_instance_of::<PyInt>()
        || value.is_exact_instance_of::<PyDict>()
        || value.is_exact_instance_of::<PyList>()
        || value.is_exact_instance_of::<PyFloat>()
        || value.is_exact_instance_of::<PyTuple>()
        || value.is_exact_instance_of::<PyBytes>()
        || value.is_exact_instance_of::<PySet>()
        || value.is_exact_instance_of::<PyFrozenSet>()
}

impl<'py> Walk<'_, 'py> {
    /// Fill `new` from `old` when both are of the kinds above; false (nothing done) otherwise.
    pub(super) fn fill_scrubbed_fast(
        &mut self,
        old: &Bound<'py, PyAny>,
        new: &Bound<'py, PyAny>,
    ) -> PyResult<bool> {
        if let (Ok(old), Ok(new)) = (old.cast_exact::<PyDict>(), new.cast_exact::<PyDict>()) {
            return self.fill_dict_fast(old, new);
        }
        let Ok(new) = new.cast_exact::<PyList>() else {
            return Ok(false);
        };
        if old.is_exact_instance_of::<PyList>() || old.is_exact_instance_of::<PyTuple>() {
            return self.fill_list_fast(old, new);
        }
        Ok(false)
    }

    fn fill_dict_fast(
        &mut self,
        old: &Bound<'py, PyDict>,
        new: &Bound<'py, PyDict>,
    ) -> PyResult<bool> {
        if !new.is_empty() {
            return Ok(false);
        }
        let mut items = Vec::with_capacity(old.len());
        let mut keys_are_str = true;
        for (key, value) in old.iter() {
            if !handled_here(&value) {
                return Ok(false);
            }
            keys_are_str &= key.is_exact_instance_of::<PyString>();
            items.push((key, value));
        }
        let mut scrubbed = Vec::with_capacity(items.len());
        for (_, value) in &items {
            scrubbed.push(self.value_scrubbed(value)?);
        }
        if keys_are_str {
            // SAFETY: both are live dicts and the GIL is held.
            if unsafe { ffi::PyDict_Merge(new.as_ptr(), old.as_ptr(), 1) } != 0 {
                return Err(PyErr::fetch(self.py));
            }
            for ((key, value), new_value) in items.iter().zip(scrubbed) {
                if !new_value.is(value) {
                    new.set_item(key, new_value)?;
                }
            }
        } else {
            for ((key, _), new_value) in items.iter().zip(scrubbed) {
                new.set_item(key, new_value)?;
            }
        }
        Ok(true)
    }

    fn fill_list_fast(
        &mut self,
        old: &Bound<'py, PyAny>,
        new: &Bound<'py, PyList>,
    ) -> PyResult<bool> {
        let py = self.py;
        let is_list = old.is_exact_instance_of::<PyList>();
        let len = old.len()?;
        // Borrowed items: the sequence cannot change while no Python code runs, and the walk
        // below runs none (every item is of a type handled here).
        let item_at = |index: usize| -> Borrowed<'_, 'py, PyAny> {
            // SAFETY: `index < len` of a live exact list or tuple, the GIL held.
            unsafe {
                let ptr = if is_list {
                    ffi::PyList_GetItem(old.as_ptr(), index as ffi::Py_ssize_t)
                } else {
                    ffi::PyTuple_GetItem(old.as_ptr(), index as ffi::Py_ssize_t)
                };
                Borrowed::from_ptr(py, ptr)
            }
        };
        if !new.is_empty() || !(0..len).all(|index| handled_here(&item_at(index))) {
            return Ok(false);
        }
        // Signals are checked once, before: a handler (Python code) must not run in the loop.
        self.ticks(len)?;
        let mut changed = Vec::new();
        for index in 0..len {
            let item = item_at(index);
            let scrubbed = self.value_scrubbed_unticked(&item)?;
            if !scrubbed.is(&*item) {
                changed.push((index, scrubbed));
            }
        }
        // SAFETY: `new` is a live, empty list, `old` a live list or tuple, the GIL is held;
        // PyList_SetItem steals the reference it is given (and drops the item it replaces).
        unsafe {
            if ffi::PyList_SetSlice(new.as_ptr(), 0, 0, old.as_ptr()) != 0 {
                return Err(PyErr::fetch(py));
            }
            for (index, value) in changed {
                if ffi::PyList_SetItem(new.as_ptr(), index as ffi::Py_ssize_t, value.into_ptr())
                    != 0
                {
                    return Err(PyErr::fetch(py));
                }
            }
        }
        Ok(true)
    }
}
