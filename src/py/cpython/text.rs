//! Text through the C API where pyo3's safe API would go another way: a `str`'s own cached
//! UTF-8 borrowed, `surrogatepass` in both directions, `format()` and `str` concatenation.

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyString};

/// The UTF-8 a `str` keeps of itself, borrowed; `None` for a str with lone surrogates (which
/// has none).  The caller keeps the str alive while the bytes are in use (the borrow says so).
pub(crate) fn cached_utf8<'a>(text: &'a Bound<'_, PyString>) -> Option<&'a [u8]> {
    // SAFETY: `text` is a live str (a Bound) and the GIL is held.
    unsafe { cached_utf8_of(text.as_ptr()) }
}

/// # Safety
/// `text` is a live str and the GIL is held; the bytes are used while it stays alive.
unsafe fn cached_utf8_of<'a>(text: *mut ffi::PyObject) -> Option<&'a [u8]> {
    let mut size: ffi::Py_ssize_t = 0;
    // SAFETY (whole block): the caller's guarantee; the UTF-8 buffer is cached by the object
    // and lives as long as it does; the error a surrogate raises is cleared.
    unsafe {
        let data = ffi::PyUnicode_AsUTF8AndSize(text, &mut size);
        if data.is_null() {
            ffi::PyErr_Clear();
            return None;
        }
        let len = usize::try_from(size).ok()?;
        Some(std::slice::from_raw_parts(data.cast::<u8>(), len))
    }
}

/// The UTF-8 of `list[index]` when it is an exact `str` without lone surrogates; `None`
/// otherwise.  Borrowed from the list: no Python code may run while it is in use (the list
/// must not change).
pub(crate) fn list_str_utf8<'a>(list: &'a Bound<'_, PyList>, index: usize) -> Option<&'a [u8]> {
    // SAFETY (whole block): the GIL is held and `list` is live; the item is borrowed from the
    // list, which the caller keeps and does not let change while the bytes are in use, and the
    // UTF-8 buffer lives as long as the str.
    unsafe {
        let item = ffi::PyList_GetItem(list.as_ptr(), index as ffi::Py_ssize_t);
        if item.is_null() {
            ffi::PyErr_Clear();
            return None;
        }
        if ffi::Py_TYPE(item) != std::ptr::addr_of_mut!(ffi::PyUnicode_Type) {
            return None;
        }
        cached_utf8_of(item)
    }
}

/// `text.encode("utf-8", "surrogatepass")`.
pub(crate) fn encode_surrogatepass<'py>(
    text: &Bound<'py, PyString>,
) -> PyResult<Bound<'py, PyBytes>> {
    // SAFETY: a live str, the GIL held, NUL-terminated constant names; a new reference or NULL
    // with an exception set comes back.
    let encoded = unsafe {
        Bound::from_owned_ptr_or_err(
            text.py(),
            ffi::PyUnicode_AsEncodedString(
                text.as_ptr(),
                c"utf-8".as_ptr(),
                c"surrogatepass".as_ptr(),
            ),
        )?
    };
    encoded.cast_into::<PyBytes>().map_err(PyErr::from)
}

/// `bytes.decode("utf-8", "surrogatepass")`, from a Rust slice.
pub(crate) fn decode_surrogatepass<'py>(
    py: Python<'py>,
    bytes: &[u8],
) -> PyResult<Bound<'py, PyString>> {
    let len = ffi::Py_ssize_t::try_from(bytes.len())
        .map_err(|_| pyo3::exceptions::PyValueError::new_err("text too long"))?;
    // SAFETY: `bytes` is `len` readable bytes, the GIL is held; a new reference or NULL with
    // an exception set comes back.
    let decoded = unsafe {
        Bound::from_owned_ptr_or_err(
            py,
            ffi::PyUnicode_DecodeUTF8(bytes.as_ptr().cast(), len, c"surrogatepass".as_ptr()),
        )?
    };
    decoded.cast_into::<PyString>().map_err(PyErr::from)
}

/// `format(value)` (an f-string's `{value}`): the type's `__format__` with an empty spec.
pub(crate) fn format<'py>(value: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyString>> {
    // SAFETY: a live object, the GIL held, NULL for the empty format spec; a new reference
    // or NULL with an exception set comes back.
    let text = unsafe {
        Bound::from_owned_ptr_or_err(
            value.py(),
            ffi::PyObject_Format(value.as_ptr(), std::ptr::null_mut()),
        )?
    };
    text.cast_into::<PyString>().map_err(PyErr::from)
}

/// `left + right` for two `str`s, as str (lone surrogates kept, nothing through UTF-8).
pub(crate) fn concat<'py>(
    left: &Bound<'py, PyString>,
    right: &Bound<'py, PyString>,
) -> PyResult<Bound<'py, PyAny>> {
    // SAFETY: both are live str objects and the GIL is held; a new reference or NULL with an
    // exception set comes back.
    unsafe {
        Bound::from_owned_ptr_or_err(
            left.py(),
            ffi::PyUnicode_Concat(left.as_ptr(), right.as_ptr()),
        )
    }
}
