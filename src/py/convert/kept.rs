//! Parameters' lists and dicts kept aside as Python objects (`Value::Kept`) rather than
//! converted to Rust values and back.

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString};

use super::containers::{SeenContainers, MAX_DEPTH, SHARED};
use crate::argspec::{TypeKind, Unhandled, Value};

/// Lists and dicts kept aside while converting parameters (`Value::Kept`), by slot: each as the
/// copy ansible-core's deep copy makes of it (new lists and dicts holding the same str, int,
/// float, bool and None objects).  The core needs only their type and length (see
/// `OptionSpec::keeps`), and the result holds the copy: neither is converted to Rust values
/// and back.
#[derive(Default)]
pub(crate) struct KeptAside(pub(crate) Vec<Py<PyAny>>);

/// How many lists and dicts were kept aside in this process (for tests: proof the way is used).
pub(crate) static KEPT_COUNT: crate::py::gil_cell::GilCell<u64> =
    crate::py::gil_cell::GilCell::new(0);

#[pyfunction]
pub(crate) fn argspec_kept_count(py: Python<'_>) -> u64 {
    KEPT_COUNT.get(py).map_or(0, |count| *count)
}

impl KeptAside {
    /// `obj`, given for `option` (which `keeps`), kept aside if it is a list or dict of the
    /// option's type (its elements of the option's `elements` type) made of plain builtin data
    /// only, no container in it twice, nested no deeper than `MAX_DEPTH`; `None` otherwise
    /// (converted the usual way).  With `seen` (sub-options validated in place elsewhere), a
    /// container met there too is refused as the usual conversion refuses it.
    pub(crate) fn keep(
        &mut self,
        obj: &Bound<'_, PyAny>,
        option: &crate::argspec::OptionSpec,
        seen: &mut Option<SeenContainers>,
    ) -> Result<Option<Value>, Unhandled> {
        let dict = obj.is_exact_instance_of::<PyDict>();
        let list = !dict && obj.is_exact_instance_of::<PyList>();
        let fits = match option.kind {
            TypeKind::Dict => dict,
            TypeKind::List => list,
            TypeKind::Raw => dict || list,
            _ => false,
        };
        if !fits {
            return Ok(None);
        }
        if let (Some(kind), Ok(list)) = (option.elements, obj.cast_exact::<PyList>()) {
            let each = |item: Bound<'_, PyAny>| match kind {
                TypeKind::Str => item.is_exact_instance_of::<PyString>(),
                TypeKind::Dict => item.is_exact_instance_of::<PyDict>(),
                _ => false,
            };
            if !list.iter().all(each) {
                return Ok(None);
            }
        }
        let mut met = SeenContainers::default();
        let Some(copy) = plain_copy(obj, 0, &mut met) else {
            return Ok(None);
        };
        if let Some(seen) = seen {
            for address in met.addresses() {
                if !seen.insert(address) {
                    return Err(SHARED);
                }
            }
        }
        let len = obj.len().map_err(|_| Unhandled::ContainerWithoutLength)?;
        let slot = self.0.len();
        if let Some(mut count) = KEPT_COUNT.get_mut(obj.py()) {
            *count += 1;
        }
        self.0.push(copy.unbind());
        Ok(Some(Value::Kept(crate::argspec::Kept { dict, len, slot })))
    }
}

/// Whether `obj` is an object `copy.deepcopy` returns as it is among plain data.
pub(crate) fn plain_scalar(obj: &Bound<'_, PyAny>) -> bool {
    obj.is_exact_instance_of::<PyString>()
        || obj.is_none()
        || obj.is_exact_instance_of::<PyBool>()
        || obj.is_exact_instance_of::<PyInt>()
        || obj.is_exact_instance_of::<PyFloat>()
}

/// `copy.deepcopy(obj)` for an exact list or dict of plain builtin data (dict keys exact str):
/// new lists and dicts, in the same order, holding the same scalar objects.  `None` for
/// anything else, a container met twice (`met`), or nesting deeper than `MAX_DEPTH`.
pub(crate) fn plain_copy<'py>(
    obj: &Bound<'py, PyAny>,
    depth: usize,
    met: &mut SeenContainers,
) -> Option<Bound<'py, PyAny>> {
    if depth > MAX_DEPTH || !met.insert(obj.as_ptr() as usize) {
        return None;
    }
    if let Ok(dict) = obj.cast_exact::<PyDict>() {
        let mut nested = false;
        for (key, value) in dict.iter() {
            if !key.is_exact_instance_of::<PyString>() {
                return None;
            }
            nested |= !plain_scalar(&value);
        }
        let copy = dict.copy().ok()?;
        if nested {
            for (key, value) in dict.iter() {
                if !plain_scalar(&value) {
                    copy.set_item(key, plain_copy(&value, depth + 1, met)?)
                        .ok()?;
                }
            }
        }
        return Some(copy.into_any());
    }
    let list = obj.cast_exact::<PyList>().ok()?;
    if list.iter().all(|item| plain_scalar(&item)) {
        return Some(list.get_slice(0, list.len()).into_any());
    }
    let mut items = Vec::with_capacity(list.len());
    for item in list.iter() {
        items.push(match plain_scalar(&item) {
            true => item,
            false => plain_copy(&item, depth + 1, met)?,
        });
    }
    PyList::new(obj.py(), items).ok().map(Bound::into_any)
}
