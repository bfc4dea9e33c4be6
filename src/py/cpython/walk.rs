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
    let mut walk = Walk {
        py: root.py(),
        visit,
        max_depth,
    };
    // SAFETY: `root` is live and the GIL is held (a Bound exists).
    unsafe { walk.object(root.as_ptr(), 0) }
}

/// One walk under way: its visitor and how deep it may go.
struct Walk<'py, 'v, V> {
    py: Python<'py>,
    visit: &'v mut V,
    max_depth: usize,
}

impl<V: Visit> Walk<'_, '_, V> {
    /// Visits `obj` at `depth`, then what it holds one level down.
    ///
    /// # Safety
    /// `obj` is a live object, held by the walk's root or by a container the walk does not
    /// let change, and the GIL is held.
    unsafe fn object(&mut self, obj: *mut ffi::PyObject, depth: usize) -> bool {
        // SAFETY: the caller's guarantee: a live object, borrowed for the visit.
        if depth > self.max_depth
            || !self
                .visit
                .object(unsafe { Borrowed::from_ptr(self.py, obj) })
        {
            return false;
        }
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
            let below = depth + 1;
            if flags & (ffi::Py_TPFLAGS_UNICODE_SUBCLASS | ffi::Py_TPFLAGS_LONG_SUBCLASS) != 0 {
                true // immutable, by far the most common: nothing inside to walk
            } else if flags & ffi::Py_TPFLAGS_DICT_SUBCLASS != 0 {
                self.dict(obj, below)
            } else if flags & (ffi::Py_TPFLAGS_LIST_SUBCLASS | ffi::Py_TPFLAGS_TUPLE_SUBCLASS) != 0
            {
                self.sequence(obj, flags & ffi::Py_TPFLAGS_LIST_SUBCLASS != 0, below)
            } else if ffi::PyAnySet_Check(obj) != 0 {
                self.set(obj, below)
            } else {
                true
            }
        }
    }

    /// A dict's length, then its keys and values in order, at `depth`.
    ///
    /// # Safety
    /// `obj` is a live dict (or subclass) and the GIL is held.
    unsafe fn dict(&mut self, obj: *mut ffi::PyObject, depth: usize) -> bool {
        // SAFETY (whole block): the caller's guarantee; borrowed references only, each held by
        // the dict, which nothing here lets change (no Python code runs).
        unsafe {
            if !self.visit.length(ffi::PyDict_Size(obj)) {
                return false;
            }
            let mut position: ffi::Py_ssize_t = 0;
            let mut key: *mut ffi::PyObject = std::ptr::null_mut();
            let mut value: *mut ffi::PyObject = std::ptr::null_mut();
            while ffi::PyDict_Next(obj, &mut position, &mut key, &mut value) != 0 {
                if !self.object(key, depth) || !self.object(value, depth) {
                    return false;
                }
            }
            true
        }
    }

    /// A list's (`is_list`) or tuple's length, then its items in order, at `depth`.
    ///
    /// # Safety
    /// `obj` is a live list (`is_list`) or tuple (or subclass) and the GIL is held.
    unsafe fn sequence(&mut self, obj: *mut ffi::PyObject, is_list: bool, depth: usize) -> bool {
        // SAFETY (whole block): the caller's guarantee; borrowed references only, each held by
        // the sequence, which the walk does not let change.
        unsafe {
            let len = if is_list {
                ffi::PyList_Size(obj)
            } else {
                ffi::PyTuple_Size(obj)
            };
            if !self.visit.length(len) {
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
                if !self.object(item, depth) {
                    return false;
                }
            }
            true
        }
    }

    /// A set's or frozenset's length, then its items in iteration order, at `depth`.
    ///
    /// # Safety
    /// `obj` is a live set or frozenset (or subclass) and the GIL is held.
    unsafe fn set(&mut self, obj: *mut ffi::PyObject, depth: usize) -> bool {
        // SAFETY (whole block): the caller's guarantee; the iterator's references are dropped
        // once visited (the set holds each item, which stays alive past that reference).
        unsafe {
            if !self.visit.length(ffi::PySet_Size(obj)) {
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
                let went_on = self.object(item, depth);
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
}
