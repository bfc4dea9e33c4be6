//! Glue for [`crate::payload::Block`]: the entries a `PayloadZipWriter` was given, kept
//! (as a `PayloadBlock`) to be written again into the next empty archive of the same kind.

use pyo3::prelude::*;

use crate::payload::{Block, WrittenEntry};

/// Entries kept from an archive (`PayloadZipWriter.block()`), for `add_block`.
#[pyclass(module = "ansible_accel._native", frozen)]
pub(super) struct PayloadBlock {
    pub(super) block: Block,
}

#[pymethods]
impl PayloadBlock {
    fn __len__(&self) -> usize {
        self.block.len()
    }

    /// The bytes of headers and data it holds.
    #[getter]
    fn nbytes(&self) -> usize {
        self.block.nbytes()
    }
}

pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PayloadBlock>()
}

pub(super) fn fields(w: &WrittenEntry) -> super::WrittenFields {
    (
        w.header_offset,
        w.crc,
        w.compress_size,
        w.file_size,
        w.flag_bits,
        w.external_attr,
        w.create_version,
        w.extract_version,
    )
}
