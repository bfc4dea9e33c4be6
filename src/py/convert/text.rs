//! `str` to and from generalized UTF-8 (UTF-8 with lone surrogates encoded as 3 bytes each,
//! as `surrogatepass` makes them): the form the text engines (masking, no_log) read and write.

use std::borrow::Cow;

use pyo3::prelude::*;
use pyo3::types::PyString;

use crate::py::cpython;

/// A Python `str` as generalized UTF-8: its own UTF-8 (borrowed) unless it has lone
/// surrogates, which have none (then encoded with surrogatepass, each as 3 bytes).
pub(crate) fn text_bytes<'a>(s: &'a Bound<'_, PyString>) -> PyResult<Cow<'a, [u8]>> {
    match s.to_str() {
        Ok(utf8) => Ok(Cow::Borrowed(utf8.as_bytes())),
        Err(_) => {
            let bytes = cpython::text::encode_surrogatepass(s)?;
            Ok(Cow::Owned(bytes.as_bytes().to_vec()))
        }
    }
}

/// The `str` whose generalized UTF-8 form is `bytes`.
pub(crate) fn str_from<'py>(py: Python<'py>, bytes: &[u8]) -> PyResult<Bound<'py, PyString>> {
    cpython::text::decode_surrogatepass(py, bytes)
}
