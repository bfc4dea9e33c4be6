//! A reused spec's validated-parameter dicts have the same keys in the same order call after
//! call while the callers give the same options (the keys given, then defaults, then the
//! options left None, all in an order fixed by the spec and the keys given).  The dict of one
//! such "shape" is kept with every value None; a result of that shape is its copy (a copy of a
//! compact dict is one block copy, where inserting key after key grows and rehashes the table
//! several times) with the values that are not None put in place.  The dict is equal, with the
//! same key objects in the same order, to the one built key by key.

use std::cell::Ref;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

use crate::argspec::{Key, Params};
use crate::py::gil_cell::GilCell;

/// The shape (option indexes in the dict's key order) last met, and once it was met twice in
/// a row, its dict with every value None.
pub(super) struct Template {
    shape: Box<[u32]>,
    dict: Option<Py<PyDict>>,
    /// By position: the object the dict holds there in place of None (see `reuse::lasting`).
    held: Box<[Option<Py<PyAny>>]>,
    /// The position from which on the dict holds only None.
    held_end: usize,
}

impl Template {
    /// What the template dict holds at `position` if not None.
    pub(super) fn held(&self, position: usize) -> Option<&Py<PyAny>> {
        self.held.get(position).and_then(Option::as_ref)
    }

    /// The position from which on the template holds only None.
    pub(super) fn held_end(&self) -> usize {
        self.held_end
    }
}

/// One slot per compiled spec (a spec's callers mostly give the same options).
#[derive(Default)]
pub(super) struct TemplateSlot(GilCell<Option<Template>>);

impl TemplateSlot {
    /// A new dict of `shape` (every value None but those the template holds), and the
    /// template, if the slot holds one for it.
    pub(super) fn copy_for<'a, 'py: 'a>(
        &'a self,
        py: Python<'py>,
        shape: &[u32],
    ) -> PyResult<Option<(Bound<'py, PyDict>, Ref<'a, Template>)>> {
        // Read while the result is made (a call that finds it being replaced goes without).
        let Some(held) = self.0.get(py) else {
            return Ok(None);
        };
        let Ok(template) = Ref::filter_map(held, |t| {
            t.as_ref()
                .filter(|t| &*t.shape == shape && t.dict.is_some())
        }) else {
            return Ok(None);
        };
        match &template.dict {
            Some(dict) => Ok(Some((dict.bind(py).copy()?, template))),
            None => Ok(None),
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
        let seen_before = self.0.get(py).is_some_and(|held| {
            held.as_ref()
                .is_some_and(|t| *t.shape == *shape && t.dict.is_none())
        });
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
        let held_end = objects
            .iter()
            .rposition(Option::is_some)
            .map_or(0, |last| last + 1);
        let made = Template {
            shape: shape.into_boxed_slice(),
            dict,
            held: objects.into_boxed_slice(),
            held_end,
        };
        // The one it replaces is dropped after the borrow ends (dropping may run Python code).
        let _replaced = self.0.get_mut(py).map(|mut slot| slot.replace(made));
        Ok(())
    }
}

/// The dicts of one sub-spec's sub-parameters, kept by shape as `Template` keeps the top
/// level's: a dict of the same keys in the same order is the kept one's copy with the values
/// that differ put in place.  Its keys are the sub-spec's own name objects, used where the
/// caller gave exact str keys of the same text (the keys the core added are the spec's own in
/// ansible-core's result too).
pub(super) struct SubTemplate {
    /// By position: the option's name as the core's map holds it, and its index.
    names: Box<[Key]>,
    indexes: Box<[u32]>,
    /// By position: the key object (the sub-spec's own name) and the object held in place of
    /// None, if any (see `reuse::lasting_below`).
    keys: Box<[Py<PyString>]>,
    held: Box<[Option<Py<PyAny>>]>,
    dict: Py<PyDict>,
}

impl SubTemplate {
    /// A template of the shape `indexes` (the sub-spec's option index of each key in order,
    /// with the names as the core's map holds them) holding `held` in place of None.
    pub(super) fn new(
        py: Python<'_>,
        names: Vec<Key>,
        indexes: Vec<u32>,
        sub_names: &[Py<PyString>],
        held: Vec<Option<Py<PyAny>>>,
    ) -> PyResult<Option<SubTemplate>> {
        let dict = PyDict::new(py);
        let mut keys = Vec::with_capacity(indexes.len());
        for (&index, object) in indexes.iter().zip(&held) {
            let Some(key) = sub_names.get(index as usize) else {
                return Ok(None);
            };
            match object {
                Some(object) => dict.set_item(key.bind(py), object.bind(py))?,
                None => dict.set_item(key.bind(py), py.None())?,
            }
            keys.push(key.clone_ref(py));
        }
        if dict.len() != indexes.len() || names.len() != indexes.len() {
            return Ok(None); // a name twice: not a shape the core makes
        }
        Ok(Some(SubTemplate {
            names: names.into_boxed_slice(),
            indexes: indexes.into_boxed_slice(),
            keys: keys.into_boxed_slice(),
            held: held.into_boxed_slice(),
            dict: dict.unbind(),
        }))
    }

    /// Whether the core's map has this template's keys in its order.
    fn matches(&self, map: &Params) -> bool {
        self.names.len() == map.len()
            && self
                .names
                .iter()
                .zip(map.keys())
                .all(|(name, key)| name == key)
    }

    pub(super) fn len(&self) -> usize {
        self.names.len()
    }

    pub(super) fn key<'py>(&self, py: Python<'py>, position: usize) -> &Bound<'py, PyString> {
        self.keys[position].bind(py)
    }

    /// The text of the key at `position`.
    pub(super) fn name(&self, position: usize) -> &str {
        &self.names[position]
    }

    pub(super) fn index(&self, position: usize) -> usize {
        self.indexes[position] as usize
    }

    pub(super) fn held(&self, position: usize) -> Option<&Py<PyAny>> {
        self.held.get(position).and_then(Option::as_ref)
    }

    /// A new dict equal to the template's.
    pub(super) fn copy<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        self.dict.bind(py).copy()
    }
}

/// A sub-spec's templates: the few shapes met last.
#[derive(Default)]
pub(super) struct SubTemplateSlot(GilCell<Vec<SubTemplate>>);

impl SubTemplateSlot {
    const SHAPES: usize = 4;

    /// The template of the core's map's keys, if one is kept.
    /// (Read while the dict is made: a call that finds the templates being changed goes
    /// without.)
    pub(super) fn find<'a, 'py: 'a>(
        &'a self,
        py: Python<'py>,
        map: &Params,
    ) -> Option<Ref<'a, SubTemplate>> {
        let kept = self.0.get(py)?;
        Ref::filter_map(kept, |kept| kept.iter().find(|t| t.matches(map))).ok()
    }

    /// Keeps `template`, in place of the oldest one kept if there are enough.
    pub(super) fn add(&self, py: Python<'_>, template: SubTemplate) {
        // The one it replaces (or this one, if the templates are being read) is dropped after
        // the borrow ends: dropping may run Python code.
        let _replaced = match self.0.get_mut(py) {
            Some(mut kept) => {
                let replaced = match kept.len() >= Self::SHAPES {
                    true => Some(kept.remove(0)),
                    false => None,
                };
                kept.push(template);
                replaced
            }
            None => Some(template),
        };
    }
}
