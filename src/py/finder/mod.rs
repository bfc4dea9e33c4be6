//! Glue for the finder engine: `_native.scan_imports` and `_native.FinderStamps`.

use pyo3::prelude::*;
use pyo3::pybacked::{PyBackedBytes, PyBackedStr};
use pyo3::types::{PyBytes, PyFrozenSet, PyString, PyTuple};

use std::path::PathBuf;

mod record;

use crate::finder::stamps::{Stamp, StampSet};
use crate::finder::{self, Fallback, ImportScan, NameParts, Reach, ScanOptions, Source};
use crate::py::answer::Answer;

/// The source as ModuleDepFinder receives it, held so the GIL can be released.
enum OwnedSource {
    Bytes(PyBackedBytes),
    Text(PyBackedStr),
}

/// `scan_imports(source, module_fqn, is_pkg_init, reach)`: either
/// `(submodules, optional_imports, embed_import)` (frozensets of str tuples, a bool) or, where
/// ansible-core's own code must answer, the fallback reason as a str.
#[pyfunction]
#[pyo3(signature = (source, module_fqn, is_pkg_init, reach))]
fn scan_imports<'py>(
    py: Python<'py>,
    source: &Bound<'py, PyAny>,
    module_fqn: &str,
    is_pkg_init: bool,
    reach: &str,
) -> PyResult<Bound<'py, PyAny>> {
    let reach = match reach {
        "every_listed_node" => Reach::EveryListedNode,
        "positioned_nodes" => Reach::PositionedNodes,
        other => {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "reach must be 'every_listed_node' or 'positioned_nodes', not {other:?}"
            )))
        }
    };
    let owned = if source.is_instance_of::<PyBytes>() {
        OwnedSource::Bytes(source.extract()?)
    } else if let Ok(text) = source.cast::<PyString>() {
        match text.extract::<PyBackedStr>() {
            Ok(text) => OwnedSource::Text(text),
            // Lone surrogates: compile() raises its own error; let it.
            Err(_) => return Answer::Declined(Some(Fallback::InvalidUtf8)).into_python(py),
        }
    } else {
        return Err(pyo3::exceptions::PyTypeError::new_err(format!(
            "source must be bytes or str, not {}",
            source.get_type().name()?
        )));
    };
    let version = py.version_info();
    let options = ScanOptions {
        python: (version.major, version.minor),
        reach,
    };
    let fqn = module_fqn.to_owned();
    let outcome = py.detach(|| {
        let source = match &owned {
            OwnedSource::Bytes(bytes) => Source::Bytes(bytes),
            OwnedSource::Text(text) => Source::Text(text),
        };
        std::panic::catch_unwind(|| finder::scan_imports(source, &fqn, is_pkg_init, &options))
    });
    let answer = match outcome {
        Ok(Ok(scan)) => Answer::Done(scan_to_python(py, &scan)?.into_any()),
        Ok(Err(fallback)) => Answer::Declined(Some(fallback)),
        Err(_) => Answer::Declined(Some(Fallback::InternalError)),
    };
    answer.into_python(py)
}

fn scan_to_python<'py>(py: Python<'py>, scan: &ImportScan) -> PyResult<Bound<'py, PyTuple>> {
    let submodules = name_set(py, &scan.submodules)?;
    let optional = name_set(py, &scan.optional_imports)?;
    PyTuple::new(
        py,
        [
            submodules.into_any(),
            optional.into_any(),
            pyo3::types::PyBool::new(py, scan.embed_import)
                .to_owned()
                .into_any(),
        ],
    )
}

fn name_set<'py>(
    py: Python<'py>,
    names: &std::collections::BTreeSet<NameParts>,
) -> PyResult<Bound<'py, PyFrozenSet>> {
    let tuples = names
        .iter()
        .map(|parts| PyTuple::new(py, parts.iter().map(|p| PyString::new(py, p))))
        .collect::<PyResult<Vec<_>>>()?;
    PyFrozenSet::new(py, tuples.iter())
}

/// A stamp as the Python side records it: `(st_dev, st_ino, st_size, st_mtime_ns,
/// st_ctime_ns, st_mode)` or None.
pub(crate) type StampFields = Option<(u64, u64, u64, i128, i128, u32)>;

/// The paths with their stamps as the Python side gives them.
pub(crate) fn stamps_from_fields(
    stamps: Vec<(PathBuf, StampFields)>,
) -> Vec<(PathBuf, Option<Stamp>)> {
    stamps
        .into_iter()
        .map(|(path, fields)| {
            let stamp = fields.map(|(dev, ino, size, mtime_ns, ctime_ns, mode)| Stamp {
                dev,
                ino,
                size,
                mtime_ns,
                ctime_ns,
                mode,
            });
            (path, stamp)
        })
        .collect()
}

/// `FinderStamps([(path, stamp), ...])`: the stamps a remembered walk depended on;
/// `unchanged()` stats every path (without the GIL) and says whether each still has its
/// stamp.  A stamp that does not fit the fields raises at construction (the caller then
/// checks in Python).
#[pyclass(module = "ansible_accel._native", frozen)]
struct FinderStamps {
    set: StampSet,
}

#[pymethods]
impl FinderStamps {
    #[new]
    fn new(stamps: Vec<(PathBuf, StampFields)>) -> FinderStamps {
        FinderStamps {
            set: StampSet::new(stamps_from_fields(stamps)),
        }
    }

    /// True while every path has the stamp it was given (False on any doubt).
    fn unchanged(&self, py: Python<'_>) -> bool {
        let set = &self.set;
        py.detach(|| std::panic::catch_unwind(|| set.unchanged()).unwrap_or(false))
    }

    /// The stamp of `path` as this check sees it (None when it cannot be stat'ed): for
    /// tests, which compare it with `os.stat()`'s.
    #[staticmethod]
    fn stamp_of(path: PathBuf) -> StampFields {
        finder::stamps::stamp(&path).map(|s| (s.dev, s.ino, s.size, s.mtime_ns, s.ctime_ns, s.mode))
    }

    fn __len__(&self) -> usize {
        self.set.len()
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(scan_imports, m)?)?;
    m.add_class::<FinderStamps>()?;
    record::register(m)
}
