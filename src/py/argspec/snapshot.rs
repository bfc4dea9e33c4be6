//! Noticing a spec changed in place since it was compiled.
//!
//! ansible-core reads the spec afresh on every `validate()`, so a dict or list of it changed in
//! place must be seen.  A [`Snapshot`] holds every object reachable from a spec and its checks,
//! in walk order, with each container's length: walking the same objects again and meeting the
//! same objects (by identity; the snapshot's references keep their addresses from being reused)
//! and the same lengths means nothing changed.  Scalars are immutable, so their identity is
//! enough; a replaced scalar of equal value is only a needless recompile.

use pyo3::ffi;
use pyo3::prelude::*;

/// Deeper than this is refused (and stops reference cycles): the spec is then not compiled.
const MAX_DEPTH: usize = 64;

pub(super) struct Snapshot {
    objects: Vec<Py<PyAny>>,
    lengths: Vec<ffi::Py_ssize_t>,
}

impl Snapshot {
    /// The objects reachable from `roots`, or `None` for a structure too deep to walk.
    pub(super) fn take(py: Python<'_>, roots: &[&Bound<'_, PyAny>]) -> Option<Snapshot> {
        let mut taker = Taker {
            py,
            snapshot: Snapshot {
                objects: Vec::new(),
                lengths: Vec::new(),
            },
        };
        for root in roots {
            // SAFETY: the GIL is held (`py`) and `root` is a live object.
            if !unsafe { walk(root.as_ptr(), &mut taker, 0) } {
                return None;
            }
        }
        Some(taker.snapshot)
    }

    /// Whether `roots` still hold exactly the objects and lengths this snapshot saw.
    pub(super) fn matches(&self, roots: &[&Bound<'_, PyAny>]) -> bool {
        let mut checker = Checker {
            snapshot: self,
            object: 0,
            length: 0,
            same: true,
        };
        for root in roots {
            // SAFETY: the GIL is held (a Bound exists) and `root` is a live object.
            if !unsafe { walk(root.as_ptr(), &mut checker, 0) } || !checker.same {
                return false;
            }
        }
        checker.object == self.objects.len() && checker.length == self.lengths.len()
    }
}

/// What a walk does with each object and container length it meets; `false` stops it.
trait Visit {
    /// # Safety
    /// `obj` is a live object and the GIL is held.
    unsafe fn object(&mut self, obj: *mut ffi::PyObject) -> bool;
    fn length(&mut self, len: ffi::Py_ssize_t) -> bool;
}

struct Taker<'py> {
    py: Python<'py>,
    snapshot: Snapshot,
}

impl Visit for Taker<'_> {
    unsafe fn object(&mut self, obj: *mut ffi::PyObject) -> bool {
        // SAFETY: the caller's guarantee; a new strong reference is taken.
        self.snapshot
            .objects
            .push(unsafe { Bound::from_borrowed_ptr(self.py, obj) }.unbind());
        true
    }

    fn length(&mut self, len: ffi::Py_ssize_t) -> bool {
        self.snapshot.lengths.push(len);
        true
    }
}

struct Checker<'a> {
    snapshot: &'a Snapshot,
    object: usize,
    length: usize,
    same: bool,
}

impl Visit for Checker<'_> {
    unsafe fn object(&mut self, obj: *mut ffi::PyObject) -> bool {
        let seen = self.snapshot.objects.get(self.object).map(Py::as_ptr);
        self.object += 1;
        self.same = seen == Some(obj);
        self.same
    }

    fn length(&mut self, len: ffi::Py_ssize_t) -> bool {
        let seen = self.snapshot.lengths.get(self.length).copied();
        self.length += 1;
        self.same = seen == Some(len);
        self.same
    }
}

/// Visits `obj`, then (for a dict, list, tuple, set or frozenset, subclasses included) its
/// length and its items in iteration order.  `false`: stopped by the visitor, too deep, or a
/// set whose iteration failed.
///
/// # Safety
/// `obj` is a live object and the GIL is held.
unsafe fn walk(obj: *mut ffi::PyObject, visit: &mut impl Visit, depth: usize) -> bool {
    if depth > MAX_DEPTH || !unsafe { visit.object(obj) } {
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
        if flags & (ffi::Py_TPFLAGS_UNICODE_SUBCLASS | ffi::Py_TPFLAGS_LONG_SUBCLASS) != 0 {
            true // immutable, by far the most common: nothing inside to walk
        } else if flags & ffi::Py_TPFLAGS_DICT_SUBCLASS != 0 {
            if !visit.length(ffi::PyDict_Size(obj)) {
                return false;
            }
            let mut position: ffi::Py_ssize_t = 0;
            let mut key: *mut ffi::PyObject = std::ptr::null_mut();
            let mut value: *mut ffi::PyObject = std::ptr::null_mut();
            // Nothing here runs Python code that could change the dict.
            while ffi::PyDict_Next(obj, &mut position, &mut key, &mut value) != 0 {
                if !walk(key, visit, depth + 1) || !walk(value, visit, depth + 1) {
                    return false;
                }
            }
            true
        } else if flags & (ffi::Py_TPFLAGS_LIST_SUBCLASS | ffi::Py_TPFLAGS_TUPLE_SUBCLASS) != 0 {
            let is_list = flags & ffi::Py_TPFLAGS_LIST_SUBCLASS != 0;
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
                if !walk(item, visit, depth + 1) {
                    return false;
                }
            }
            true
        } else if ffi::PyAnySet_Check(obj) != 0 {
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
                // The set holds the item, which stays alive past this reference.
                let went_on = walk(item, visit, depth + 1);
                ffi::Py_DecRef(item);
                if !went_on {
                    fine = false;
                    break;
                }
            }
            ffi::Py_DecRef(iterator);
            fine
        } else {
            true
        }
    }
}
