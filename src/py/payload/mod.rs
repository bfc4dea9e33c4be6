//! Glue for the payload engine: Python values in, the core's archive out, core errors raised
//! as the exceptions zipfile raises for the same input.  The calls that can leave the archive
//! to zipfile (`payload_build_zip`, and the writer's `add`, `add_many`, `add_block` and
//! `finish`) answer through [`Answer`]; an internal failure where nothing can be left to
//! zipfile (deflating alone, filling the cache, a kept block's data) raises
//! `PayloadInternalError`.

use std::collections::HashSet;
use std::ffi::CString;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::Arc;

use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyUserWarning, PyValueError};
use pyo3::prelude::*;
use pyo3::pybacked::{PyBackedBytes, PyBackedStr};
use pyo3::types::{PyByteArray, PyBytes, PyString, PyTuple};

mod block;

use block::PayloadBlock;

use crate::payload::{
    self, DiskCache, EntryInfo, ExtraStripStyle, Fallback, Limits, Method, WrittenEntry, ZipError,
};
use crate::py::answer::{declining_panics, Answer};

type PayloadAnswer<'py> = Answer<'py, Fallback>;

pyo3::create_exception!(
    ansible_accel._native,
    PayloadInternalError,
    PyRuntimeError,
    "An internal failure of the native zip writer where nothing can be left to zipfile."
);

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add(
        "PayloadInternalError",
        m.py().get_type::<PayloadInternalError>(),
    )?;
    m.add_function(wrap_pyfunction!(payload_build_zip, m)?)?;
    m.add_function(wrap_pyfunction!(payload_deflate, m)?)?;
    m.add_function(wrap_pyfunction!(payload_cache_stats, m)?)?;
    m.add_function(wrap_pyfunction!(payload_cache_clear, m)?)?;
    m.add_function(wrap_pyfunction!(payload_warm_cache, m)?)?;
    m.add_class::<PayloadZipWriter>()?;
    block::register(m)
}

/// Entry data as zipfile's `writestr` takes it: bytes-like, or str written as UTF-8.
enum Data {
    Bytes(PyBackedBytes),
    Text(PyBackedStr),
}

impl Data {
    fn extract(obj: &Bound<'_, PyAny>) -> PyResult<Data> {
        if obj.is_instance_of::<PyBytes>() || obj.is_instance_of::<PyByteArray>() {
            return Ok(Data::Bytes(
                obj.extract::<PyBackedBytes>().map_err(PyErr::from)?,
            ));
        }
        if obj.is_instance_of::<PyString>() {
            return Ok(Data::Text(obj.extract::<PyBackedStr>()?));
        }
        Err(PyTypeError::new_err(format!(
            "entry data must be bytes, bytearray or str, not {}",
            obj.get_type().name()?
        )))
    }

    fn as_slice(&self) -> &[u8] {
        match self {
            Data::Bytes(b) => b,
            Data::Text(s) => s.as_bytes(),
        }
    }
}

fn method_from(code: i64) -> PyResult<Method> {
    Method::from_code(code).ok_or_else(|| {
        PyValueError::new_err(format!(
            "the native zip writer has no compression method {code}"
        ))
    })
}

fn extract_date_time(obj: &Bound<'_, PyAny>) -> PyResult<[i64; 6]> {
    let len = obj.len()?;
    if len != 6 {
        return Err(PyValueError::new_err(format!(
            "date_time must have 6 items (year, month, day, hour, minute, second), not {len}"
        )));
    }
    let mut parts = [0i64; 6];
    for (i, part) in parts.iter_mut().enumerate() {
        *part = obj.get_item(i)?.extract::<i64>()?;
    }
    Ok(parts)
}

/// The exception zipfile raises for `err`.  A header field out of range is re-packed by the
/// interpreter's own `struct`, so the message is that Python's.
fn raise(py: Python<'_>, err: ZipError) -> PyErr {
    match err {
        ZipError::TimestampBefore1980 => PyValueError::new_err(err.to_string()),
        ZipError::FileTooLarge | ZipError::CompressedTooLarge => {
            PyRuntimeError::new_err(err.to_string())
        }
        ZipError::FieldOutOfRange { format, value, .. } => match struct_error(py, format, value) {
            Ok(e) | Err(e) => e,
        },
        ZipError::Deflate(_) => instantiate(py, "zlib", "error", err.to_string()),
    }
}

fn struct_error(py: Python<'_>, format: char, value: i128) -> PyResult<PyErr> {
    match py
        .import("struct")?
        .call_method1("pack", (format!("<{format}"), value))
    {
        Err(e) => Ok(e),
        // Cannot happen (the core only reports values that do not fit), but never silently.
        Ok(_) => Ok(instantiate(
            py,
            "struct",
            "error",
            format!("{value} does not fit struct format {format:?}"),
        )),
    }
}

/// `module.name(message)` as an exception to raise.
fn instantiate(py: Python<'_>, module: &str, name: &str, message: String) -> PyErr {
    match py
        .import(module)
        .and_then(|m| m.getattr(name))
        .and_then(|cls| cls.call1((message,)))
    {
        Ok(exception) => PyErr::from_value(exception),
        Err(e) => e,
    }
}

/// Runs `work` without the GIL: its value, or the exception zipfile raises for its error;
/// `None` where it panicked (the panic goes no further).
fn without_gil<T: Send>(
    py: Python<'_>,
    work: impl FnOnce() -> Result<T, ZipError> + Send,
) -> PyResult<Option<T>> {
    match py.detach(|| catch_unwind(AssertUnwindSafe(work))) {
        Ok(Ok(value)) => Ok(Some(value)),
        Ok(Err(err)) => Err(raise(py, err)),
        Err(_) => Ok(None),
    }
}

/// `without_gil` where nothing can be left to zipfile: a panic raises `PayloadInternalError`.
fn without_gil_or_raise<T: Send>(
    py: Python<'_>,
    work: impl FnOnce() -> Result<T, ZipError> + Send,
) -> PyResult<T> {
    without_gil(py, work)?.ok_or_else(internal_error)
}

fn internal_error() -> PyErr {
    PayloadInternalError::new_err(
        "internal error in ansible_accel's zip writer (a bug: please report it)",
    )
}

/// The bytes `work` (run without the GIL) writes, or the decline `why` where it panicked.
fn archive_or_decline<'py>(
    py: Python<'py>,
    why: Fallback,
    work: impl FnOnce() -> Result<Vec<u8>, ZipError> + Send,
) -> PyResult<PayloadAnswer<'py>> {
    Ok(match without_gil(py, work)? {
        Some(archive) => Answer::Done(PyBytes::new(py, &archive).into_any()),
        None => Answer::Declined(Some(why)),
    })
}

fn warn_duplicate(py: Python<'_>, name: &str, stacklevel: i32) -> PyResult<()> {
    let repr = PyString::new(py, name).repr()?;
    let message = CString::new(format!("Duplicate name: {repr}")).unwrap_or_default();
    PyErr::warn(py, &py.get_type::<PyUserWarning>(), &message, stacklevel)
}

/// `payload_build_zip(entries, date_time, compression)`: the bytes of
/// `ZipFile(BytesIO(), 'w', compression)` after `writestr(ZipInfo(name, date_time), data)`
/// for each `(name, data)` and `close()`, or the reason (a `str`) zipfile must write them.
/// `compression` is 0 or 8.  `cache_dir`: a private directory where deflated entries are
/// shared between processes.
#[pyfunction]
#[pyo3(signature = (entries, date_time, compression, cache_dir=None))]
fn payload_build_zip<'py>(
    py: Python<'py>,
    entries: &Bound<'py, PyAny>,
    date_time: &Bound<'py, PyAny>,
    compression: i64,
    cache_dir: Option<PathBuf>,
) -> PyResult<Bound<'py, PyAny>> {
    let date_time = extract_date_time(date_time)?;
    let method = method_from(compression)?;
    let mut items: Vec<(String, Data)> = Vec::new();
    let mut seen: HashSet<String> = HashSet::new();
    let mut unencodable: Option<PyErr> = None;
    for item in entries.try_iter()? {
        let item = item?;
        let pair = item
            .cast::<PyTuple>()
            .map_err(|_| PyTypeError::new_err("each entry must be a (name, data) tuple"))?;
        if pair.len() != 2 {
            return Err(PyTypeError::new_err(format!(
                "each entry must be a (name, data) tuple, not a tuple of {}",
                pair.len()
            )));
        }
        let name_obj = pair.get_item(0)?;
        // zipfile's ZipInfo refuses the date before the name is ever encoded.
        if date_time[0] < 1980 {
            return Err(raise(py, ZipError::TimestampBefore1980));
        }
        let name_str = name_obj.cast::<PyString>().map_err(|_| {
            PyTypeError::new_err(format!(
                "entry name must be str, not {}",
                name_obj
                    .get_type()
                    .name()
                    .map(|n| n.to_string())
                    .unwrap_or_default()
            ))
        })?;
        let name = match name_str.to_str() {
            Ok(name) => payload::sanitize_name(name).to_owned(),
            // ZipInfo cuts the name at its first NUL before it is encoded; what is left may
            // still not encode, which zipfile finds only once the entries before are written.
            Err(_) => match name_str
                .call_method1("partition", ("\0",))?
                .get_item(0)?
                .cast_into::<PyString>()?
                .to_str()
            {
                Ok(name) => name.to_owned(),
                Err(err) => {
                    unencodable = Some(err);
                    break;
                }
            },
        };
        if !seen.insert(name.clone()) {
            warn_duplicate(py, &name, 2)?;
        }
        items.push((name, Data::extract(&pair.get_item(1)?)?));
    }
    let answer = archive_or_decline(py, Fallback::BuildZipInternalError, || {
        let mut writer = payload::ZipWriter::new(Limits::default())
            .with_disk_cache(cache_dir.map(DiskCache::new));
        for (name, data) in &items {
            writer.add(EntryInfo::new(name, date_time, method)?, data.as_slice())?;
        }
        writer.finish(b"", ExtraStripStyle::Splitting)
    })?;
    if let (Some(err), Answer::Done(_)) = (unencodable, &answer) {
        return Err(err);
    }
    answer.into_python(py)
}

/// `payload_deflate(data) -> bytes`: the raw deflate stream zipfile would store for `data`,
/// so the Python side can check this zlib against the interpreter's once.
#[pyfunction]
fn payload_deflate(py: Python<'_>, data: PyBackedBytes) -> PyResult<Py<PyBytes>> {
    let deflated = without_gil_or_raise(py, || payload::deflate_raw(&data))?;
    Ok(PyBytes::new(py, &deflated).unbind())
}

/// What `writestr` sets on a `ZipInfo`, in the order `PayloadZipWriter.add` returns it.
pub(crate) type WrittenFields = (u64, u32, u64, u64, i64, i64, i64, i64);

/// `payload_cache_stats() -> (hits, misses, bytes, disk_hits)`: the process's deflated-entry
/// cache, and the streams taken from a shared directory.
#[pyfunction]
fn payload_cache_stats() -> (u64, u64, usize, u64) {
    let stats = payload::cache::stats();
    (
        stats.hits,
        stats.misses,
        stats.bytes,
        payload::disk_cache::hits(),
    )
}

/// `payload_cache_clear()`: forget every deflated entry (cold runs in tests and benchmarks).
#[pyfunction]
fn payload_cache_clear() {
    payload::cache::clear();
    payload::disk_cache::reset_hits();
}

/// `payload_warm_cache(datas, cache_dir=None) -> int`: deflate each bytes of `datas` into
/// the process cache (and `cache_dir`), as an archive of them would; returns how many.
#[pyfunction]
#[pyo3(signature = (datas, cache_dir=None))]
fn payload_warm_cache(
    py: Python<'_>,
    datas: Vec<PyBackedBytes>,
    cache_dir: Option<PathBuf>,
) -> PyResult<usize> {
    let disk = cache_dir.map(DiskCache::new);
    without_gil_or_raise(py, || {
        for data in &datas {
            payload::compress_entry(Method::Deflated, data, disk.as_ref())?;
        }
        Ok(datas.len())
    })
}

/// The archive behind `ansible_accel.payload.PayloadZipFile`: one `add` per `writestr`, with
/// the `ZipInfo` fields read by the Python side; `finish` for `close()`.
#[pyclass(module = "ansible_accel._native")]
struct PayloadZipWriter {
    writer: Option<payload::ZipWriter>,
    strip_style: ExtraStripStyle,
}

#[pymethods]
impl PayloadZipWriter {
    /// `zip64_limit`/`file_count_limit`: zipfile's `ZIP64_LIMIT` and `ZIP_FILECOUNT_LIMIT`
    /// as the running interpreter has them; `splitting_extra`: True on Python 3.13+;
    /// `cache_dir`: as for `payload_build_zip`.
    #[new]
    #[pyo3(signature = (zip64_limit, file_count_limit, splitting_extra, cache_dir=None))]
    fn new(
        zip64_limit: u64,
        file_count_limit: u64,
        splitting_extra: bool,
        cache_dir: Option<PathBuf>,
    ) -> PayloadZipWriter {
        let limits = Limits {
            zip64: zip64_limit,
            file_count: file_count_limit,
        };
        let strip_style = if splitting_extra {
            ExtraStripStyle::Splitting
        } else {
            ExtraStripStyle::Skipping
        };
        let writer = payload::ZipWriter::new(limits).with_disk_cache(cache_dir.map(DiskCache::new));
        PayloadZipWriter {
            writer: Some(writer),
            strip_style,
        }
    }

    /// One entry from a `ZipInfo`'s fields; returns what `writestr` sets on the `ZipInfo`:
    /// (header_offset, CRC, compress_size, file_size, flag_bits, external_attr,
    /// create_version, extract_version), or the reason (a `str`) zipfile must carry on.
    /// `precompressed` is (crc, deflated bytes) when the caller compressed the data itself
    /// (a compression level zlib must apply).
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (filename, date_time, compress_type, create_system, create_version, extract_version, reserved, internal_attr, external_attr, extra, comment, data, precompressed=None))]
    fn add<'py>(
        &mut self,
        py: Python<'py>,
        filename: String,
        date_time: &Bound<'py, PyAny>,
        compress_type: i64,
        create_system: i64,
        create_version: i64,
        extract_version: i64,
        reserved: i64,
        internal_attr: i64,
        external_attr: i64,
        extra: Vec<u8>,
        comment: Vec<u8>,
        data: &Bound<'py, PyAny>,
        precompressed: Option<(u32, PyBackedBytes)>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let date_time = extract_date_time(date_time)?;
        let info = EntryInfo {
            name: filename,
            date_time,
            method: method_from(compress_type)?,
            create_system,
            create_version,
            extract_version,
            reserved,
            internal_attr,
            external_attr,
            extra,
            comment,
        };
        let data = Data::extract(data)?;
        let writer = self.writer.as_mut().ok_or_else(|| {
            PyValueError::new_err("Attempt to write to ZIP archive that was already closed")
        })?;
        let written: Option<WrittenEntry> = without_gil(py, || {
            let bytes = data.as_slice();
            match precompressed {
                Some((crc, deflated)) => {
                    let compressed = payload::Compressed {
                        crc,
                        file_size: bytes.len() as u64,
                        deflated: Some(Arc::new(deflated.to_vec())),
                    };
                    writer.add_compressed(info, bytes, &compressed)
                }
                None => writer.add(info, bytes),
            }
        })?;
        let answer = match written {
            Some(written) => Answer::Done(block::fields(&written).into_pyobject(py)?.into_any()),
            None => Answer::Declined(Some(Fallback::WriterInternalError)),
        };
        answer.into_python(py)
    }

    /// Many `add`s in one call, the GIL released once: `entries` is a list of tuples of
    /// `add`'s arguments (without `precompressed`).  Returns what each written entry's
    /// `ZipInfo` gets, in order, and the exception that stopped the batch (or None): the
    /// entries before it stay written, as a loop of `writestr` would leave them.  The reason
    /// (a `str`) zipfile must write the archive where the writer failed inside.
    fn add_many<'py>(
        &mut self,
        py: Python<'py>,
        entries: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        type Fields<'py> = (
            String,
            Bound<'py, PyAny>,
            i64,
            i64,
            i64,
            i64,
            i64,
            i64,
            i64,
            Vec<u8>,
            Vec<u8>,
            Bound<'py, PyAny>,
        );
        let mut batch: Vec<(EntryInfo, Data)> = Vec::new();
        for item in entries.try_iter()? {
            let fields: Fields<'_> = item?.extract()?;
            let (
                name,
                date_time,
                method,
                system,
                create,
                extract,
                reserved,
                internal,
                external,
                extra,
                comment,
                data,
            ) = fields;
            batch.push((
                EntryInfo {
                    name,
                    date_time: extract_date_time(&date_time)?,
                    method: method_from(method)?,
                    create_system: system,
                    create_version: create,
                    extract_version: extract,
                    reserved,
                    internal_attr: internal,
                    external_attr: external,
                    extra,
                    comment,
                },
                Data::extract(&data)?,
            ));
        }
        let writer = self.writer.as_mut().ok_or_else(|| {
            PyValueError::new_err("Attempt to write to ZIP archive that was already closed")
        })?;
        // The error that stops the batch is part of the answer, not the call's own error.
        let outcome: Option<(Vec<WrittenEntry>, Option<ZipError>)> = without_gil(py, || {
            let mut written = Vec::with_capacity(batch.len());
            for (info, data) in batch {
                match writer.add(info, data.as_slice()) {
                    Ok(entry) => written.push(entry),
                    Err(err) => return Ok((written, Some(err))),
                }
            }
            Ok((written, None))
        })?;
        let answer = match outcome {
            Some((written, error)) => {
                let fields: Vec<WrittenFields> = written.iter().map(block::fields).collect();
                let error = error.map(|e| raise(py, e).into_value(py));
                Answer::Done((fields, error).into_pyobject(py)?.into_any())
            }
            None => Answer::Declined(Some(Fallback::WriterInternalError)),
        };
        answer.into_python(py)
    }

    /// The entries written so far, kept to be written again (None unless the archive holds
    /// whole entries from its start, or once finished).
    fn block(&self) -> Option<PayloadBlock> {
        let block = self.writer.as_ref()?.block()?;
        Some(PayloadBlock { block })
    }

    /// `block`'s entries, dated `date_time`, written into this empty archive: what each
    /// entry's `ZipInfo` gets, in order; None (nothing written) where they cannot be; the
    /// reason (a `str`) zipfile must write the archive where the writer failed inside.
    fn add_block<'py>(
        &mut self,
        py: Python<'py>,
        block: &PayloadBlock,
        date_time: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let date_time = extract_date_time(date_time)?;
        let answer = declining_panics(Fallback::WriterInternalError, || {
            let written = match self.writer.as_mut() {
                Some(writer) => writer.add_block(&block.block, date_time),
                None => None,
            };
            Ok(match written {
                Some(w) => {
                    let fields: Vec<WrittenFields> = w.iter().map(block::fields).collect();
                    Answer::Done(fields.into_pyobject(py)?.into_any())
                }
                None => Answer::Declined(None),
            })
        })?;
        answer.into_python(py)
    }

    /// `close()`: the whole archive (what the BytesIO holds), or the reason (a `str`)
    /// zipfile must write it.  The writer is spent.
    fn finish<'py>(&mut self, py: Python<'py>, comment: Vec<u8>) -> PyResult<Bound<'py, PyAny>> {
        let writer = self
            .writer
            .take()
            .ok_or_else(|| PyValueError::new_err("the archive was already finished"))?;
        let strip_style = self.strip_style;
        archive_or_decline(py, Fallback::WriterInternalError, move || {
            writer.finish(&comment, strip_style)
        })?
        .into_python(py)
    }
}
