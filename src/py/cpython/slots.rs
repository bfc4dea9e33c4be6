//! Calls of a type's slots: what `setattr()` and `cls.__new__(cls, ...)` call, without the
//! lookups on the way there.

use pyo3::ffi;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyString, PyTuple, PyType};

/// Whether `object`'s type sets attributes the generic way: its `tp_setattro` slot is
/// `object`'s (no `__setattr__` of its own or of a base, which would fill the slot).
pub(crate) fn sets_generically(object: &Bound<'_, PyAny>) -> bool {
    let generic = ffi::PyObject_GenericSetAttr as *mut std::ffi::c_void;
    // SAFETY: the GIL is held and the type is live; reading a slot through `PyType_GetSlot`
    // (stable ABI) has no side effect.
    let slot = unsafe { ffi::PyType_GetSlot(object.get_type().as_type_ptr(), ffi::Py_tp_setattro) };
    slot == generic
}

/// `setattr(object, name, value)` by the generic function `setattr` would call, for an object
/// whose type [`sets_generically`] (asked by the caller with no Python code run since).
pub(crate) fn set_attr_generic(
    object: &Bound<'_, PyAny>,
    name: &Bound<'_, PyString>,
    value: &Bound<'_, PyAny>,
) -> PyResult<()> {
    // SAFETY: the GIL is held; `name` is an exact str (interned, as `setattr` would leave
    // it), `value` a live object; 0, or -1 with an exception set, comes back.
    match unsafe { ffi::PyObject_GenericSetAttr(object.as_ptr(), name.as_ptr(), value.as_ptr()) } {
        0 => Ok(()),
        _ => Err(PyErr::fetch(object.py())),
    }
}

/// `cls.__new__(cls, *args)`, as the type's own `tp_new` slot (a Python `__new__` included)
/// makes it; by the method where the slot is not set.
pub(crate) fn new_instance_with<'py>(
    cls: &Bound<'py, PyType>,
    args: &Bound<'py, PyTuple>,
) -> PyResult<Bound<'py, PyAny>> {
    let py = cls.py();
    // SAFETY: a live type and the GIL held; reading a slot has no side effect.
    let slot = unsafe { ffi::PyType_GetSlot(cls.as_type_ptr(), ffi::Py_tp_new) };
    if slot.is_null() {
        let mut all = vec![cls.clone().into_any()];
        all.extend(args.iter());
        return cls.call_method1(intern!(py, "__new__"), PyTuple::new(py, all)?);
    }
    // SAFETY: a non-NULL `tp_new` slot holds a `newfunc`; it is called with the argument tuple
    // as `cls.__new__(cls, *args)` calls it, and gives a new reference or NULL with an
    // exception set.
    unsafe {
        let tp_new: ffi::newfunc = std::mem::transmute(slot);
        let made = tp_new(cls.as_type_ptr(), args.as_ptr(), std::ptr::null_mut());
        Bound::from_owned_ptr_or_err(py, made)
    }
}
