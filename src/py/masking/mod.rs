//! Glue for the masking engine: Python `str` <-> generalized UTF-8, locking, and dispatch.
//!
//! The engines sit behind a `Mutex` that is only ever held while the GIL is held and never
//! across a GIL release, so it is never contended and a fork cannot inherit it locked.  Long
//! scans run on a snapshot of the automata with the GIL released.

use std::borrow::Cow;
use std::sync::{Mutex, MutexGuard};

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyString, PyTuple};

use super::convert::text::{str_from, text_bytes};
use crate::masking::{MaskError, Searchable, SecretMatcher, SecretRegistry, Snapshot};

mod object;

pyo3::create_exception!(
    ansible_accel._native,
    MaskTooDeep,
    pyo3::exceptions::PyException,
    "The structure given to the native mask_object walk is deeper than it was allowed to go."
);

/// Texts at least this long are scanned with the GIL released.
const DETACH_MIN_BYTES: usize = 64 * 1024;

/// The error every engine failure becomes; the Python side turns it into
/// `AnsibleSecretMaskError("secret masking failed")` without cause or context.
pub(crate) fn failure(_: MaskError) -> PyErr {
    PyRuntimeError::new_err("secret masking failed")
}

/// Run `f`, turning a Rust panic into an ordinary exception that carries nothing of the data.
fn guarded<T>(f: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    super::catching_panics(f, || PyRuntimeError::new_err("secret masking failed"))
}

fn locked<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A Python `str` as generalized UTF-8, and whether it is ASCII (byte offsets = indices).
struct Text<'a> {
    bytes: Cow<'a, [u8]>,
    ascii: bool,
}

fn text_of<'a>(s: &'a Bound<'_, PyString>) -> PyResult<Text<'a>> {
    let bytes = text_bytes(s)?;
    let ascii = bytes.len() == s.code_point_len()?;
    Ok(Text { bytes, ascii })
}

fn scan<T: Send>(py: Python<'_>, text: &Text<'_>, f: impl Send + FnOnce(&[u8]) -> T) -> T {
    let bytes: &[u8] = &text.bytes;
    if bytes.len() >= DETACH_MIN_BYTES {
        py.detach(|| f(bytes))
    } else {
        f(bytes)
    }
}

/// Where snapshots come from: `None` for the quick one (builds nothing), `Some(text_len)` for
/// one with automata for every form.
pub(crate) type Source<'a> = &'a dyn Fn(Option<usize>) -> Result<Snapshot, MaskError>;

/// The snapshots of the engine behind `engine` (a matcher or a registry), each taken under its
/// lock: what either Python class searches with.
fn snapshots_of<E: Searchable>(
    engine: &Mutex<E>,
) -> impl Fn(Option<usize>) -> Result<Snapshot, MaskError> + '_ {
    move |len| locked(engine).snapshot_for(len)
}

/// Run `search` on a quick snapshot, and again on a complete one if the quick one could not
/// answer; `None` when nothing is registered.
fn search<T: Send>(
    py: Python<'_>,
    text: &Text<'_>,
    source: Source<'_>,
    mut search: impl Send + FnMut(&Snapshot, &[u8]) -> Option<T>,
) -> PyResult<Option<T>> {
    let quick = source(None).map_err(failure)?;
    if quick.is_empty() {
        return Ok(None);
    }
    if let Some(found) = scan(py, text, |bytes| search(&quick, bytes)) {
        return Ok(Some(found));
    }
    let complete = source(Some(text.bytes.len())).map_err(failure)?;
    match scan(py, text, |bytes| search(&complete, bytes)) {
        Some(found) => Ok(Some(found)),
        None => Err(failure(MaskError::Build)),
    }
}

/// Masked texts up to this size are built in a buffer kept for the next call of the thread:
/// a fresh one would be fresh memory to fault in each time, as much work as the search.
const SCRATCH_KEEP_BYTES: usize = 4 << 20;

thread_local! {
    static SCRATCH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// `value` with every merged run of occurrences replaced by `placeholder`; `value` itself
/// (the very object) when it contains no secret.
fn mask_with<'py>(
    source: Source<'_>,
    value: &Bound<'py, PyString>,
    placeholder: &Bound<'py, PyString>,
) -> PyResult<Bound<'py, PyString>> {
    let py = value.py();
    let text = text_of(value)?;
    let placeholder = text_of(placeholder)?;
    let placeholder_bytes: &[u8] = &placeholder.bytes;
    let mut out = take_scratch();
    let masked = search(py, &text, source, |snapshot, bytes| {
        snapshot.mask_into(bytes, placeholder_bytes, &mut out)
    });
    let result = match masked {
        Ok(Some(true)) => str_from(py, &out),
        Ok(_) => Ok(value.clone()),
        Err(err) => Err(err),
    };
    keep_scratch(out);
    result
}

/// The thread's scratch buffer, taken out of its slot for the call (a re-entrant call simply
/// gets a new one).
fn take_scratch() -> Vec<u8> {
    SCRATCH.with(|scratch| std::mem::take(&mut *scratch.borrow_mut()))
}

fn keep_scratch(out: Vec<u8>) {
    if out.capacity() <= SCRATCH_KEEP_BYTES {
        SCRATCH.with(|scratch| {
            let mut slot = scratch.borrow_mut();
            if out.capacity() > slot.capacity() {
                *slot = out;
            }
        });
    }
}

/// Every occurrence as code-point spans: sorted, or with `matcher_order` in 2.22's order.
fn spans_with<'py>(
    source: Source<'_>,
    value: &Bound<'py, PyString>,
    matcher_order: bool,
) -> PyResult<Bound<'py, PyList>> {
    let py = value.py();
    let text = text_of(value)?;
    let ascii = text.ascii;
    let spans = search(py, &text, source, |snapshot, bytes| {
        snapshot.spans(bytes, ascii, matcher_order)
    })?
    .unwrap_or_default();
    let items = spans
        .into_iter()
        .map(|(s, e)| PyTuple::new(py, [s, e]))
        .collect::<PyResult<Vec<_>>>()?;
    PyList::new(py, items)
}

/// 2.22's matcher interface (`add`, `spans`) over the native engine, plus `mask`, which does
/// the search, the merge and the replacement in one call.
#[pyclass(module = "ansible_accel._native", name = "SecretMatcher", frozen)]
pub struct PySecretMatcher {
    inner: Mutex<SecretMatcher>,
}

#[pymethods]
impl PySecretMatcher {
    #[new]
    fn new() -> Self {
        PySecretMatcher {
            inner: Mutex::new(SecretMatcher::new()),
        }
    }

    /// Add one form to match; registering it again changes nothing.
    fn add(&self, word: &Bound<'_, PyString>) -> PyResult<()> {
        guarded(|| {
            let text = text_of(word)?;
            if text.bytes.is_empty() {
                return Err(PyValueError::new_err("an empty word cannot be matched"));
            }
            locked(&self.inner).add(&text.bytes);
            Ok(())
        })
    }

    /// Every occurrence as `(start, end)` code-point spans, overlapping ones included, in the
    /// order 2.22's matcher gives them.
    fn spans<'py>(&self, value: &Bound<'py, PyString>) -> PyResult<Bound<'py, PyList>> {
        guarded(|| spans_with(&snapshots_of(&self.inner), value, true))
    }

    fn mask<'py>(
        &self,
        value: &Bound<'py, PyString>,
        placeholder: &Bound<'py, PyString>,
    ) -> PyResult<Bound<'py, PyString>> {
        guarded(|| mask_with(&snapshots_of(&self.inner), value, placeholder))
    }

    fn __contains__(&self, word: &Bound<'_, PyString>) -> PyResult<bool> {
        let text = text_of(word)?;
        Ok(locked(&self.inner).contains(&text.bytes))
    }

    fn __len__(&self) -> usize {
        locked(&self.inner).len()
    }
}

/// A registry of secrets (stripping, de-duplication, JSON forms) with its matcher.
#[pyclass(module = "ansible_accel._native", name = "SecretRegistry", frozen)]
pub struct PySecretRegistry {
    inner: Mutex<SecretRegistry>,
}

#[pymethods]
impl PySecretRegistry {
    #[new]
    fn new() -> Self {
        PySecretRegistry {
            inner: Mutex::new(SecretRegistry::new()),
        }
    }

    /// Register every `str` in `secrets`; returns the stripped secrets that were new, in order.
    fn register<'py>(&self, secrets: &Bound<'py, PyList>) -> PyResult<Bound<'py, PyList>> {
        let py = secrets.py();
        guarded(|| {
            let texts = secrets
                .iter()
                .map(|s| s.cast_into::<PyString>().map_err(PyErr::from))
                .collect::<PyResult<Vec<_>>>()?;
            let mut new = Vec::new();
            {
                let mut registry = locked(&self.inner);
                for secret in &texts {
                    if let Some(stripped) = registry
                        .register(&text_of(secret)?.bytes)
                        .map_err(failure)?
                    {
                        new.push(stripped);
                    }
                }
            }
            let items = new
                .iter()
                .map(|b| str_from(py, b))
                .collect::<PyResult<Vec<_>>>()?;
            PyList::new(py, items)
        })
    }

    fn mask<'py>(
        &self,
        value: &Bound<'py, PyString>,
        placeholder: &Bound<'py, PyString>,
    ) -> PyResult<Bound<'py, PyString>> {
        guarded(|| mask_with(&snapshots_of(&self.inner), value, placeholder))
    }

    /// Every occurrence as sorted `(start, end)` code-point spans.
    fn spans<'py>(&self, value: &Bound<'py, PyString>) -> PyResult<Bound<'py, PyList>> {
        guarded(|| spans_with(&snapshots_of(&self.inner), value, false))
    }

    /// The registered secrets present in a JSON document, as their literal values.
    fn secrets_in_json<'py>(&self, value: &Bound<'py, PyString>) -> PyResult<Bound<'py, PyList>> {
        let py = value.py();
        guarded(|| {
            let text = text_of(value)?;
            let found = locked(&self.inner)
                .secrets_in_json(&text.bytes)
                .map_err(failure)?;
            let items = found
                .iter()
                .map(|b| str_from(py, b))
                .collect::<PyResult<Vec<_>>>()?;
            PyList::new(py, items)
        })
    }

    /// True when no secret is registered.
    fn is_empty(&self) -> bool {
        locked(&self.inner).is_empty()
    }

    fn __len__(&self) -> usize {
        locked(&self.inner).secret_count()
    }
}

/// 2.22's `mask_object` walk of `value` at `depth` (see `object`), on the snapshots of `engine`
/// (a `SecretRegistry` or a `SecretMatcher`).
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn mask_object_walk<'py>(
    engine: &Bound<'py, PyAny>,
    placeholder: &Bound<'py, PyString>,
    lines_items: &Bound<'py, PyTuple>,
    tracked_keys: &Bound<'py, PyAny>,
    delegate: &Bound<'py, PyAny>,
    tag_copy: &Bound<'py, PyAny>,
    max_depth: usize,
    value: &Bound<'py, PyAny>,
    depth: usize,
) -> PyResult<Bound<'py, PyAny>> {
    guarded(|| {
        let placeholder = text_bytes(placeholder)?;
        let lines_items = lines_items
            .iter()
            .map(|pair| pair.extract())
            .collect::<PyResult<Vec<(Bound<'py, PyAny>, Bound<'py, PyAny>)>>>()?;
        let run = |source: Source<'_>| -> PyResult<Bound<'py, PyAny>> {
            let mut walk = object::ObjectWalk {
                py: value.py(),
                source,
                snapshot: source(None).map_err(failure)?,
                placeholder: &placeholder,
                lines_items,
                tracked_keys,
                delegate,
                tag_copy,
                depth,
                max_depth,
                scratch: take_scratch(),
            };
            let masked = walk.mask(value);
            keep_scratch(walk.scratch);
            masked
        };
        if let Ok(registry) = engine.cast::<PySecretRegistry>() {
            run(&snapshots_of(&registry.get().inner))
        } else {
            run(&snapshots_of(
                &engine.cast::<PySecretMatcher>()?.get().inner,
            ))
        }
    })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("MaskTooDeep", m.py().get_type::<MaskTooDeep>())?;
    m.add_function(wrap_pyfunction!(mask_object_walk, m)?)?;
    m.add("SecretMatcher", m.py().get_type::<PySecretMatcher>())?;
    m.add("SecretRegistry", m.py().get_type::<PySecretRegistry>())?;
    Ok(())
}
