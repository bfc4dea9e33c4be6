//! Glue for the stamps of a finder closure record on disk (`_finder_disk`): encoded once
//! when the record is left, checked straight from those bytes by every process that reads
//! it, without a Python object per path.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use super::{stamps_from_fields, StampFields};
use crate::finder::stamps::{self, StampSet};

/// `finder_stamps_encode([(path, stamp), ...]) -> bytes`: the stamps as `FinderStampsFile`
/// reads them.  A stamp that does not fit the fields raises (the record is then not left).
#[pyfunction]
fn finder_stamps_encode(py: Python<'_>, stamps: Vec<(PathBuf, StampFields)>) -> Bound<'_, PyBytes> {
    let expected = stamps_from_fields(stamps);
    PyBytes::new(py, &stamps::encode(&expected))
}

/// `FinderStampsFile(data)`: the stamps `finder_stamps_encode` gave `data` for (ValueError
/// for anything else); `unchanged()` as `FinderStamps.unchanged()`.
#[pyclass(module = "ansible_accel._native", frozen)]
struct FinderStampsFile {
    set: StampSet,
}

#[pymethods]
impl FinderStampsFile {
    #[new]
    fn new(data: &[u8]) -> PyResult<FinderStampsFile> {
        let expected = catch_unwind(|| stamps::decode(data))
            .ok()
            .flatten()
            .ok_or_else(|| PyValueError::new_err("not encoded stamps"))?;
        Ok(FinderStampsFile {
            set: StampSet::new(expected),
        })
    }

    /// True while every path has the stamp it was given (False on any doubt).
    fn unchanged(&self, py: Python<'_>) -> bool {
        let set = &self.set;
        py.detach(|| catch_unwind(AssertUnwindSafe(|| set.unchanged())).unwrap_or(false))
    }

    /// The paths, as bytes (`os.fsdecode` gives the str each was given as).
    fn paths<'py>(&self, py: Python<'py>) -> Vec<Bound<'py, PyBytes>> {
        use std::os::unix::ffi::OsStrExt;
        self.set
            .paths()
            .map(|p| PyBytes::new(py, p.as_os_str().as_bytes()))
            .collect()
    }

    fn __len__(&self) -> usize {
        self.set.len()
    }
}

pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<FinderStampsFile>()?;
    m.add_function(wrap_pyfunction!(finder_stamps_encode, m)?)
}
