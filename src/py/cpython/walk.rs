//! A depth-first walk of the containers reachable from an object, through borrowed references
//! (no reference count touched per item): what noticing a spec changed in place walks when
//! dicts' version tags cannot be trusted, and what taking its snapshot walks always.

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::Borrowed;

/// What a walk does with each object and container length it meets; `false` stops it.  The
/// object is borrowed from its container, which the walk's root keeps alive; a visitor runs
/// no Python code (the containers must not change under the walk).
pub(crate) trait Visit {
    fn object(&mut self, obj: Borrowed<'_, '_, PyAny>) -> bool;
    fn length(&mut self, len: isize) -> bool;
}

/// Visits `root`, then (for a dict, list, tuple, set or frozenset, subclasses included) its
/// length and its items in iteration order, to `max_depth`.  `false`: stopped by the visitor,
/// too deep, or a set whose iteration failed.
pub(crate) fn walk(root: &Bound<'_, PyAny>, visit: &mut impl Visit, max_depth: usize) -> bool {
    // SAFETY: `root` is live and the GIL is held (a Bound exists).
    unsafe { walk_from(root.py(), root.as_ptr(), visit, 0, max_depth) }
}

/// # Safety
/// `obj` is a live object and the GIL is held.
unsafe fn walk_from<V: Visit>(
    py: Python<'_>,
    obj: *mut ffi::PyObject,
    visit: &mut V,
    depth: usize,
    max_depth: usize,
) -> bool {
    // SAFETY: the caller's guarantee: a live object, borrowed for the visit.
    if depth > max_depth || !visit.object(unsafe { Borrowed::from_ptr(py, obj) }) {
        return false;
    }
    let items = |item: *mut ffi::PyObject, visit: &mut V| {
        // SAFETY: `item` is held by `obj`, which the walk does not let change.
        unsafe { walk_from(py, item, visit, depth + 1, max_depth) }
    };
    // SAFETY (whole block): `obj` is live and the GIL is held; borrowed references only.
    unsafe {
        let kind = ffi::Py_TYPE(obj);
        // The exact scalar types first, by address (no call): most of a spec is str and int.
        if kind == std::ptr::addr_of_mut!(ffi::PyUnicode_Type)
            || kind == std::ptr::addr_of_mut!(ffi::PyLong_Type)
            || kind == std::ptr::addr_of_mut!(ffi::PyBool_Type)
            || obj == ffi::Py_None()
        {
            return true;
        }
        // Then the exact containers by address, the rest by the type's flags (a call).
        let flags = if kind == std::ptr::addr_of_mut!(ffi::PyDict_Type) {
            ffi::Py_TPFLAGS_DICT_SUBCLASS
        } else if kind == std::ptr::addr_of_mut!(ffi::PyList_Type) {
            ffi::Py_TPFLAGS_LIST_SUBCLASS
        } else if kind == std::ptr::addr_of_mut!(ffi::PyTuple_Type) {
            ffi::Py_TPFLAGS_TUPLE_SUBCLASS
        } else {
            ffi::PyType_GetFlags(kind)
        };
        if flags & (ffi::Py_TPFLAGS_UNICODE_SUBCLASS | ffi::Py_TPFLAGS_LONG_SUBCLASS) != 0 {
            true // immutable, by far the most common: nothing inside to walk
        } else if flags & ffi::Py_TPFLAGS_DICT_SUBCLASS != 0 {
            walk_dict(obj, visit, items)
        } else if flags & (ffi::Py_TPFLAGS_LIST_SUBCLASS | ffi::Py_TPFLAGS_TUPLE_SUBCLASS) != 0 {
            walk_sequence(
                obj,
                flags & ffi::Py_TPFLAGS_LIST_SUBCLASS != 0,
                visit,
                items,
            )
        } else if ffi::PyAnySet_Check(obj) != 0 {
            walk_set(obj, visit, items)
        } else {
            true
        }
    }
}

/// # Safety
/// `obj` is a live dict (or subclass) and the GIL is held.
unsafe fn walk_dict<V: Visit>(
    obj: *mut ffi::PyObject,
    visit: &mut V,
    mut items: impl FnMut(*mut ffi::PyObject, &mut V) -> bool,
) -> bool {
    // SAFETY (whole block): the caller's guarantee; borrowed references only.
    unsafe {
        if !visit.length(ffi::PyDict_Size(obj)) {
            return false;
        }
        let mut position: ffi::Py_ssize_t = 0;
        let mut key: *mut ffi::PyObject = std::ptr::null_mut();
        let mut value: *mut ffi::PyObject = std::ptr::null_mut();
        // Nothing here runs Python code that could change the dict.
        while ffi::PyDict_Next(obj, &mut position, &mut key, &mut value) != 0 {
            if !items(key, visit) || !items(value, visit) {
                return false;
            }
        }
        true
    }
}

/// # Safety
/// `obj` is a live list (`is_list`) or tuple (or subclass) and the GIL is held.
unsafe fn walk_sequence<V: Visit>(
    obj: *mut ffi::PyObject,
    is_list: bool,
    visit: &mut V,
    mut items: impl FnMut(*mut ffi::PyObject, &mut V) -> bool,
) -> bool {
    // SAFETY (whole block): the caller's guarantee; borrowed references only.
    unsafe {
        let len = if is_list {
            ffi::PyList_Size(obj)
        } else {
            ffi::PyTuple_Size(obj)
        };
        if !visit.length(len) {
            return false;
        }
        for index in 0..len {
            let item = if is_list {
                ffi::PyList_GetItem(obj, index)
            } else {
                ffi::PyTuple_GetItem(obj, index)
            };
            if item.is_null() {
                ffi::PyErr_Clear();
                return false;
            }
            if !items(item, visit) {
                return false;
            }
        }
        true
    }
}

/// # Safety
/// `obj` is a live set or frozenset (or subclass) and the GIL is held.
unsafe fn walk_set<V: Visit>(
    obj: *mut ffi::PyObject,
    visit: &mut V,
    mut items: impl FnMut(*mut ffi::PyObject, &mut V) -> bool,
) -> bool {
    // SAFETY (whole block): the caller's guarantee; the iterator's references are dropped
    // once visited (the set holds each item, which stays alive past that reference).
    unsafe {
        if !visit.length(ffi::PySet_Size(obj)) {
            return false;
        }
        let iterator = ffi::PyObject_GetIter(obj);
        if iterator.is_null() {
            ffi::PyErr_Clear();
            return false;
        }
        let mut fine = true;
        loop {
            let item = ffi::PyIter_Next(iterator);
            if item.is_null() {
                if !ffi::PyErr_Occurred().is_null() {
                    ffi::PyErr_Clear();
                    fine = false;
                }
                break;
            }
            let went_on = items(item, visit);
            ffi::Py_DecRef(item);
            if !went_on {
                fine = false;
                break;
            }
        }
        ffi::Py_DecRef(iterator);
        fine
    }
}
