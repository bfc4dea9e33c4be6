//! `remove_values`' queue step for the common case, where no Python code can run: an exact
//! dict, list or tuple whose every value is of a type the walk handles itself (so nothing is
//! handed to ansible-core's helper and no user code can change the container meanwhile).
//!
//! The values are scrubbed in ansible-core's order (so the queue grows in its order), and the
//! new container is then filled in one go: the dict by merging the old one (its keys and their
//! order, copied without hashing anything again) and setting only the values that changed; the
//! list by copying the old items and replacing only the changed ones.  The result is the dict or
//! list ansible-core builds item by item.

use pyo3::prelude::*;
use pyo3::types::{
    PyBool, PyBytes, PyDict, PyFloat, PyFrozenSet, PyInt, PyList, PySet, PyString, PyTuple,
};

use super::Walk;
use crate::py::cpython::fill::{self, ExactSequence};

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
            fill::merge_dict(new, old)?;
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
        let Some(old) = ExactSequence::new(old) else {
            return Ok(false);
        };
        let len = old.len();
        // Borrowed items: the sequence cannot change while no Python code runs, and the walk
        // below runs none (every item is of a type handled here).
        let all_handled = (0..len).all(|index| {
            // SAFETY: nothing has run since `ExactSequence::new`; `handled_here` runs no
            // Python code.
            let item = unsafe { old.item(index) };
            handled_here(&item)
        });
        if !new.is_empty() || !all_handled {
            return Ok(false);
        }
        // Signals are checked once, before: a handler (Python code) must not run in the loop.
        self.ticks(len)?;
        let mut changed = Vec::new();
        for index in 0..len {
            // SAFETY: no Python code runs in this loop: every item is of a type the walk
            // scrubs itself (checked above), and signals were checked before it.
            let item = unsafe { old.item(index) };
            let scrubbed = self.value_scrubbed_unticked(&item)?;
            if !scrubbed.is(&*item) {
                changed.push((index, scrubbed));
            }
        }
        fill::fill_list(new, &old, changed)?;
        Ok(true)
    }
}
