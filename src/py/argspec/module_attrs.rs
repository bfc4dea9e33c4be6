//! A module's attribute read once and kept while the module's dict is unchanged.
//!
//! `module.name` is a lookup in the module's dict (after its type, `types.ModuleType`
//! itself, whose attributes cannot change).  Where dicts carry version tags that change on
//! every change (see `cpython::layout`), the same dict showing the same tag holds the same objects:
//! the attribute found before is the one a lookup would find now.  Anything else (a module
//! of another type, a dict changed, tags not usable) is looked up.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyModule, PyString};

use crate::py::cpython::layout::dict_version;
use crate::py::gil_cell::GilCell;

/// The dict (address, kept alive by the module the caller holds), its tag then, the module
/// (address) and the attribute found.
struct Found {
    module: usize,
    dict: usize,
    tag: u64,
    value: Py<PyAny>,
}

#[derive(Default)]
pub(super) struct ModuleAttr(GilCell<Option<Found>>);

impl ModuleAttr {
    /// `module.<name>`, as `getattr` gives it.
    pub(super) fn get<'py>(
        &self,
        module: &Bound<'py, PyAny>,
        name: &Bound<'py, PyString>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = module.py();
        let Some((dict, tag)) = plain_module_dict(module) else {
            return module.getattr(name);
        };
        let key = (module.as_ptr() as usize, dict.as_ptr() as usize, tag);
        if let Some(found) = self.0.get(py) {
            if let Some(found) = found.as_ref() {
                if (found.module, found.dict, found.tag) == key {
                    return Ok(found.value.bind(py).clone());
                }
            }
        }
        let value = module.getattr(name)?;
        // Kept only if it is the dict's own entry (not a module `__getattr__`'s answer, which
        // may differ call to call) and the lookup left the dict as it was.
        let in_dict = dict.get_item(name)?.is_some_and(|v| v.is(&value));
        let unchanged = plain_module_dict(module).is_some_and(|(d, t)| d.is(&dict) && t == tag);
        if in_dict && unchanged {
            let made = Found {
                module: key.0,
                dict: key.1,
                tag,
                value: value.clone().unbind(),
            };
            // Dropped after the borrow ends: dropping may run Python code.
            let _replaced = match self.0.get_mut(py) {
                Some(mut slot) => slot.replace(made),
                None => Some(made),
            };
        }
        Ok(value)
    }
}

/// The dict of an exact `types.ModuleType` object and its version tag, where tags are usable.
fn plain_module_dict<'py>(module: &Bound<'py, PyAny>) -> Option<(Bound<'py, PyDict>, u64)> {
    let module = module.cast_exact::<PyModule>().ok()?;
    let dict = module.dict();
    let tag = dict_version(&dict).filter(|&t| t != 0)?;
    Some((dict, tag))
}
