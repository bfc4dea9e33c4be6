//! A reused spec's validated-parameter dicts have the same keys in the same order call after
//! call while the callers give the same options (the keys given, then defaults, then the
//! options left None, all in an order fixed by the spec and the keys given).  The dict of one
//! such "shape" is kept with every value None; a result of that shape is its copy (a copy of a
//! compact dict is one block copy, where inserting key after key grows and rehashes the table
//! several times) with the values that are not None put in place.  The dict is equal, with the
//! same key objects in the same order, to the one built key by key.

use std::sync::{Arc, Mutex};

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

/// The shape (option indexes in the dict's key order) last met, and once it was met twice in
/// a row, its dict with every value None.
pub(super) struct Template {
    shape: Box<[u32]>,
    dict: Option<Py<PyDict>>,
    /// By position: the object the dict holds there in place of None (see `reuse::lasting`).
    held: Box<[Option<Py<PyAny>>]>,
}

impl Template {
    /// What the template dict holds at `position` if not None.
    pub(super) fn held(&self, position: usize) -> Option<&Py<PyAny>> {
        self.held.get(position).and_then(Option::as_ref)
    }
}

/// One slot per compiled spec (a spec's callers mostly give the same options).
#[derive(Default)]
pub(super) struct TemplateSlot(Mutex<Option<Arc<Template>>>);

impl TemplateSlot {
    /// A new dict of `shape` (every value None but those the template holds), and the
    /// template, if the slot holds one for it.
    pub(super) fn copy_for<'py>(
        &self,
        py: Python<'py>,
        shape: &[u32],
    ) -> PyResult<Option<(Bound<'py, PyDict>, Arc<Template>)>> {
        // Only the Arc is cloned under the lock: no Python code runs while it is held.
        let held = self.0.lock().unwrap_or_else(|p| p.into_inner()).clone();
        match held {
            Some(t) if &*t.shape == shape => match &t.dict {
                Some(dict) => Ok(Some((dict.bind(py).copy()?, t.clone()))),
                None => Ok(None),
            },
            _ => Ok(None),
        }
    }

    /// Notes that a result of `shape` was built key by key: the second time in a row, its
    /// template is made (with the key objects `names` gives for the indexes).
    pub(super) fn record(
        &self,
        py: Python<'_>,
        shape: Vec<u32>,
        names: &[Py<PyString>],
        mut objects: Vec<Option<Py<PyAny>>>,
    ) -> PyResult<()> {
        // `objects`: by position, an object the template may hold in place of None.
        objects.resize_with(shape.len(), || None);
        let held = self.0.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let seen_before = held.is_some_and(|t| *t.shape == *shape && t.dict.is_none());
        let dict = match seen_before {
            true => {
                let dict = PyDict::new(py);
                let none = py.None();
                for (&index, object) in shape.iter().zip(&objects) {
                    let Some(name) = names.get(index as usize) else {
                        return Ok(());
                    };
                    dict.set_item(name.bind(py), object.as_ref().unwrap_or(&none))?;
                }
                Some(dict.unbind())
            }
            false => None,
        };
        if dict.is_none() {
            objects.clear(); // only a template with its dict holds objects
        }
        let made = Arc::new(Template {
            shape: shape.into_boxed_slice(),
            dict,
            held: objects.into_boxed_slice(),
        });
        // The one it replaces is dropped after the lock is released.
        let _replaced = self
            .0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .replace(made);
        Ok(())
    }
}
