//! Glue for [`crate::payload::Block`]: the entries a `PayloadZipWriter` was given, kept
//! (as a `PayloadBlock`) to be written again into the next empty archive of the same kind,
//! in this process or (through a file) in another.

use std::fs;
use std::io::Write;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::payload::{Block, WrittenEntry};

use super::PayloadInternalError;

static TEMP_NAMES: AtomicU64 = AtomicU64::new(0);

/// Entries kept from an archive (`PayloadZipWriter.block()`), for `add_block`.
#[pyclass(module = "ansible_accel._native", frozen)]
pub(super) struct PayloadBlock {
    pub(super) block: Block,
}

/// One entry's `ZipInfo` fields besides its date and what writing sets: (filename,
/// compress_type, create_system, reserved, internal_attr, extra, comment).
type KeptFields<'py> = (
    String,
    i64,
    i64,
    i64,
    i64,
    Bound<'py, PyBytes>,
    Bound<'py, PyBytes>,
);

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

    /// Each entry's `ZipInfo` fields as `KeptEntries.fields` holds them.
    fn fields<'py>(&self, py: Python<'py>) -> Vec<KeptFields<'py>> {
        self.block
            .infos()
            .map(|i| {
                (
                    i.name.clone(),
                    i64::from(i.method.code()),
                    i.create_system,
                    i.reserved,
                    i.internal_attr,
                    PyBytes::new(py, &i.extra),
                    PyBytes::new(py, &i.comment),
                )
            })
            .collect()
    }

    /// Each entry's data, in order (inflated from what the block stores, checked against
    /// its CRC and size).
    fn datas<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyBytes>>> {
        let datas = py
            .detach(|| catch_unwind(AssertUnwindSafe(|| self.block.datas())))
            .map_err(|_| PayloadInternalError::new_err("internal error reading a kept block"))?
            .map_err(|bad| {
                PayloadInternalError::new_err(format!("a kept block's data is bad: {}", bad.0))
            })?;
        Ok(datas.iter().map(|d| PyBytes::new(py, d)).collect())
    }

    /// Leave the block in `directory` as the file `name` (written aside, then renamed into
    /// place, so a reader finds a whole file or none).  False where it could not be.
    fn save(&self, py: Python<'_>, directory: PathBuf, name: &str) -> bool {
        if name.contains('/') || name.starts_with('.') {
            return false;
        }
        let work = || {
            let temp = directory.join(format!(
                ".{name}.{}.{}.part",
                std::process::id(),
                TEMP_NAMES.fetch_add(1, Ordering::Relaxed)
            ));
            let bytes = self.block.to_file_bytes();
            let written = fs::File::create(&temp)
                .and_then(|mut f| f.write_all(&bytes))
                .and_then(|()| fs::rename(&temp, directory.join(name)));
            if written.is_err() {
                let _ = fs::remove_file(&temp);
            }
            written.is_ok()
        };
        py.detach(|| catch_unwind(AssertUnwindSafe(work)).unwrap_or(false))
    }
}

/// `payload_block_load(path) -> PayloadBlock | None`: the block a file left by
/// `PayloadBlock.save` holds; None when there is none, or it is damaged.
#[pyfunction]
fn payload_block_load(py: Python<'_>, path: PathBuf) -> Option<PayloadBlock> {
    let block = py.detach(|| {
        catch_unwind(|| {
            let file = fs::read(&path).ok()?;
            Block::from_file_bytes(&file).ok()
        })
        .ok()
        .flatten()
    })?;
    Some(PayloadBlock { block })
}

pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PayloadBlock>()?;
    m.add_function(wrap_pyfunction!(payload_block_load, m)?)
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
