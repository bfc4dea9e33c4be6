//! `mask_object`'s walk over the builtin types, natively: 2.22's `_Walker` for exact `dict`,
//! `list`, `tuple`, `set`, `frozenset`, `str`, `int`, `float` and the types it leaves alone.
//! Any other value (subclasses, tagged values, other mappings and sequences) goes to the Python
//! walk (`delegate(value, depth)`), which masks that one value as 2.22 does and hands each of its
//! children back here.  So every observable step is 2.22's: what is the same object, key
//! collisions, numbers that become strings, and lines rebuilt from their masked text.
//!
//! What differs is only what cannot be observed: a derived `*_lines` list is compared with its
//! text without making the text's lines, and the lines rebuilt from a masked text reuse the
//! original line objects whose text did not change (equal `str`s, immutable).
//!
//! The walk recurses; `max_depth` bounds it (over this walk and the Python one together) so a
//! structure deep enough to make 2.22's recursive walk fail is left to the Python walk, which
//! fails as 2.22 does: `MaskTooDeep` is raised and the caller starts over in Python.

use pyo3::prelude::*;
use pyo3::types::{
    PyBool, PyByteArray, PyBytes, PyDict, PyFloat, PyFrozenSet, PyInt, PyList, PySet, PyString,
    PyTuple,
};

use super::{failure, MaskTooDeep, Source};
use crate::masking::lines::line_spans;
use crate::masking::{MaskError, Snapshot};
use crate::py::convert::text::{str_from, text_bytes};
use crate::py::cpython;

/// Texts at least this long are masked with the GIL released.
const DETACH_MIN_BYTES: usize = 64 * 1024;

pub(super) struct ObjectWalk<'a, 'py> {
    pub py: Python<'py>,
    pub source: Source<'a>,
    pub snapshot: Snapshot,
    pub placeholder: &'a [u8],
    /// `(text key, lines key)` pairs, in `lines_keys`' order.
    pub lines_items: Vec<(Bound<'py, PyAny>, Bound<'py, PyAny>)>,
    /// Every text and lines key of `lines_keys` (a frozenset).
    pub tracked_keys: &'a Bound<'py, PyAny>,
    /// The Python walk of one value the walk here does not handle: `delegate(value, depth)`.
    pub delegate: &'a Bound<'py, PyAny>,
    /// ansible-core's `AnsibleTagHelper.tag_copy`.
    pub tag_copy: &'a Bound<'py, PyAny>,
    pub depth: usize,
    pub max_depth: usize,
    pub scratch: Vec<u8>,
}

/// How a derived lines list relates to its text, for the rebuild.
struct Derived<'py> {
    lines_key: Bound<'py, PyAny>,
    text_key: Bound<'py, PyAny>,
    /// The lines are an exact list of exact `str`s (compared natively): the rebuild may reuse
    /// them, and needs no `tag_copy` (an exact list has no tags).
    plain: bool,
}

impl<'py> ObjectWalk<'_, 'py> {
    /// 2.22's `_Walker.mask(value)`.
    pub fn mask(&mut self, value: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        if let Ok(text) = value.cast_exact::<PyString>() {
            return Ok(self
                .mask_str(text)?
                .map_or_else(|| value.clone(), Bound::into_any));
        }
        if value.is_none()
            || value.is_exact_instance_of::<PyBool>()
            || value.is_exact_instance_of::<PyBytes>()
            || value.is_exact_instance_of::<PyByteArray>()
        {
            return Ok(value.clone());
        }
        if value.is_exact_instance_of::<PyInt>() {
            return self.mask_int(value);
        }
        if value.is_exact_instance_of::<PyFloat>() {
            let text = value.str()?;
            return Ok(self
                .mask_str(&text)?
                .map_or_else(|| value.clone(), Bound::into_any));
        }
        self.depth += 1;
        if self.depth > self.max_depth {
            return Err(MaskTooDeep::new_err(()));
        }
        let masked = if let Ok(dict) = value.cast_exact::<PyDict>() {
            self.mask_dict(dict)
        } else if let Ok(list) = value.cast_exact::<PyList>() {
            self.mask_sequence(value, list.iter())
        } else if let Ok(tuple) = value.cast_exact::<PyTuple>() {
            self.mask_sequence(value, tuple.iter())
        } else if value.is_exact_instance_of::<PySet>()
            || value.is_exact_instance_of::<PyFrozenSet>()
        {
            self.mask_set(value)
        } else {
            self.delegate.call1((value, self.depth))
        };
        self.depth -= 1;
        masked
    }

    /// The masked text, or `None` when `text` has no secret (2.22 returns the very object).
    fn mask_str(&mut self, text: &Bound<'py, PyString>) -> PyResult<Option<Bound<'py, PyString>>> {
        let bytes = text_bytes(text)?;
        if bytes.is_empty() {
            return Ok(None);
        }
        if self.mask_bytes(&bytes)? {
            str_from(self.py, &self.scratch).map(Some)
        } else {
            Ok(None)
        }
    }

    /// Mask `bytes` into the scratch buffer; false when nothing in it is a secret.
    fn mask_bytes(&mut self, bytes: &[u8]) -> PyResult<bool> {
        let placeholder = self.placeholder;
        let mut out = std::mem::take(&mut self.scratch);
        let mut found = self.search(bytes, &self.snapshot, placeholder, &mut out);
        if found.is_none() {
            self.snapshot = (self.source)(Some(bytes.len())).map_err(failure)?;
            found = self.search(bytes, &self.snapshot, placeholder, &mut out);
        }
        self.scratch = out;
        found.ok_or_else(|| failure(MaskError::Build))
    }

    fn search(
        &self,
        bytes: &[u8],
        snapshot: &Snapshot,
        placeholder: &[u8],
        out: &mut Vec<u8>,
    ) -> Option<bool> {
        if bytes.len() >= DETACH_MIN_BYTES {
            self.py
                .detach(|| snapshot.mask_into(bytes, placeholder, out))
        } else {
            snapshot.mask_into(bytes, placeholder, out)
        }
    }

    /// An exact int: its decimal text masked, or the int itself when nothing in it is a secret.
    fn mask_int(&mut self, value: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        if let Ok(number) = value.extract::<i64>() {
            let digits = number.to_string();
            return Ok(if self.mask_bytes(digits.as_bytes())? {
                str_from(self.py, &self.scratch)?.into_any()
            } else {
                value.clone()
            });
        }
        let text = value.str()?;
        Ok(self
            .mask_str(&text)?
            .map_or_else(|| value.clone(), Bound::into_any))
    }

    fn mask_sequence(
        &mut self,
        value: &Bound<'py, PyAny>,
        items: impl Iterator<Item = Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let mut out = Vec::new();
        let mut changed = false;
        for item in items {
            let masked = self.mask(&item)?;
            changed |= !masked.is(&item);
            out.push(masked);
        }
        if changed {
            Ok(PyList::new(self.py, out)?.into_any())
        } else {
            Ok(value.clone())
        }
    }

    /// 2.22 builds a new set of the masked items, changed or not.
    fn mask_set(&mut self, value: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let out = PySet::empty(self.py)?;
        for item in value.try_iter()? {
            out.add(self.mask(&item?)?)?;
        }
        Ok(out.into_any())
    }

    /// `_get_derived_lines_keys`: the lines that are exactly their text's `splitlines()`.
    fn derived_lines(&self, value: &Bound<'py, PyDict>) -> PyResult<Vec<Derived<'py>>> {
        let mut derived: Vec<Derived<'py>> = Vec::new();
        for (text_key, lines_key) in &self.lines_items {
            let Some(text) = value.get_item(text_key)? else {
                continue;
            };
            if !text.is_instance_of::<PyString>() {
                continue;
            }
            let Some(lines) = value.get_item(lines_key)? else {
                continue;
            };
            let plain = match lines_equal_natively(&text, &lines)? {
                Some(equal) => {
                    if !equal {
                        continue;
                    }
                    true
                }
                None => {
                    if !lines.eq(text.call_method0(pyo3::intern!(self.py, "splitlines"))?)? {
                        continue;
                    }
                    false
                }
            };
            // A dict in 2.22: a lines key met again keeps its place and takes the new text key.
            let mut replaced = false;
            for entry in derived.iter_mut() {
                if entry.lines_key.eq(lines_key)? {
                    entry.text_key = text_key.clone();
                    entry.plain = plain;
                    replaced = true;
                    break;
                }
            }
            if !replaced {
                derived.push(Derived {
                    lines_key: lines_key.clone(),
                    text_key: text_key.clone(),
                    plain,
                });
            }
        }
        Ok(derived)
    }

    fn mask_dict(&mut self, value: &Bound<'py, PyDict>) -> PyResult<Bound<'py, PyAny>> {
        let py = self.py;
        let derived = self.derived_lines(value)?;
        // Only needed when some lines are derived: what each tracked key became.
        let (lines_mapping, tracked) = if derived.is_empty() {
            (None, None)
        } else {
            let mapping = PyDict::new(py);
            for entry in &derived {
                mapping.set_item(&entry.lines_key, &entry.text_key)?;
            }
            (Some(mapping), Some(PyDict::new(py)))
        };
        let mut unchanged: Vec<(Bound<'py, PyAny>, Bound<'py, PyAny>)> = Vec::new();
        let mut out: Option<Bound<'py, PyDict>> = None;
        for (key, item) in value.iter() {
            let new_key = self.mask(&key)?;
            let skip = match &lines_mapping {
                Some(mapping) => mapping.contains(&key)?,
                None => false,
            };
            let new_item = if skip {
                item.clone()
            } else {
                self.mask(&item)?
            };
            let new_key = if out.is_none() && new_key.is(&key) && new_item.is(&item) {
                // Nothing changed so far: the new dict would hold exactly these pairs.
                unchanged.push((key.clone(), item));
                new_key
            } else {
                let dict = match &out {
                    Some(dict) => dict,
                    None => {
                        let dict = PyDict::new(py);
                        for (k, v) in unchanged.drain(..) {
                            dict.set_item(k, v)?;
                        }
                        out.insert(dict)
                    }
                };
                let new_key = if dict.contains(&new_key)? {
                    colliding_key(dict, &new_key)?
                } else {
                    new_key
                };
                dict.set_item(&new_key, new_item)?;
                new_key
            };
            if let Some(tracked) = &tracked {
                if self.tracked_keys.contains(&key)? {
                    tracked.set_item(&key, &new_key)?;
                }
            }
        }
        let Some(out) = out else {
            return Ok(value.clone().into_any());
        };
        if let Some(tracked) = tracked {
            for entry in &derived {
                self.rebuild_lines(value, &out, &tracked, entry)?;
            }
        }
        Ok(out.into_any())
    }

    /// Lines derived from a text that was masked are the masked text's lines.
    fn rebuild_lines(
        &mut self,
        value: &Bound<'py, PyDict>,
        out: &Bound<'py, PyDict>,
        tracked: &Bound<'py, PyDict>,
        entry: &Derived<'py>,
    ) -> PyResult<()> {
        let masked_text = out
            .as_any()
            .get_item(tracked.as_any().get_item(&entry.text_key)?)?;
        let original_text = value.as_any().get_item(&entry.text_key)?;
        if masked_text.is(&original_text) {
            return Ok(());
        }
        let original_lines = value.as_any().get_item(&entry.lines_key)?;
        let new_lines = match (entry.plain, masked_text.cast_exact::<PyString>()) {
            (true, Ok(masked)) => {
                split_reusing(masked, original_lines.cast::<PyList>()?)?.into_any()
            }
            _ => {
                let lines = masked_text.call_method0(pyo3::intern!(self.py, "splitlines"))?;
                if entry.plain {
                    lines
                } else {
                    self.tag_copy.call1((&original_lines, lines))?
                }
            }
        };
        out.set_item(tracked.as_any().get_item(&entry.lines_key)?, new_lines)
    }
}

/// `f"{new_key} ({n})"` for the first `n` from 2 that is not a key of `out` yet.
fn colliding_key<'py>(
    out: &Bound<'py, PyDict>,
    new_key: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let py = out.py();
    let text = cpython::text::format(new_key)?;
    let mut suffix = 2u64;
    loop {
        // Concatenated as str (not through UTF-8): the key may hold lone surrogates.
        let tail = PyString::new(py, &format!(" ({suffix})"));
        let candidate = cpython::text::concat(&text, &tail)?;
        if !out.contains(&candidate)? {
            return Ok(candidate);
        }
        suffix += 1;
    }
}

/// The UTF-8 of `list[index]` when it is an exact `str` without lone surrogates (which have
/// none); `None` otherwise.  Borrowed: no Python code may run while it is in use.
fn borrowed_line<'a>(list: &'a Bound<'_, PyList>, index: usize) -> Option<&'a [u8]> {
    cpython::text::list_str_utf8(list, index)
}

/// `lines == text.splitlines()` without making the text's lines, when `text` is an exact `str`
/// and `lines` an exact list of exact `str`s; `None` when the comparison is left to Python.
fn lines_equal_natively(
    text: &Bound<'_, PyAny>,
    lines: &Bound<'_, PyAny>,
) -> PyResult<Option<bool>> {
    let (Ok(text), Ok(lines)) = (text.cast_exact::<PyString>(), lines.cast_exact::<PyList>())
    else {
        return Ok(None);
    };
    let bytes = text_bytes(text)?;
    let mut spans = line_spans(&bytes);
    let mut equal = true;
    for index in 0..lines.len() {
        let Some(line) = borrowed_line(lines, index) else {
            return Ok(None);
        };
        // Every item is checked for exactness even once the answer is known: that is what
        // makes the rebuild free to reuse them.
        if equal {
            equal = spans
                .next()
                .is_some_and(|(start, end)| *line == bytes[start..end]);
        }
    }
    Ok(Some(equal && spans.next().is_none()))
}

/// How far ahead in the original lines a line of the masked text is looked for.
const RESYNC_LINES: usize = 4;

/// `masked.splitlines()`, with each line that equals an original line (looked for near where
/// the previous one was found) being that original `str`.
fn split_reusing<'py>(
    masked: &Bound<'py, PyString>,
    original: &Bound<'py, PyList>,
) -> PyResult<Bound<'py, PyList>> {
    let py = masked.py();
    let bytes = text_bytes(masked)?;
    let count = original.len();
    let mut next = 0;
    let mut out = Vec::new();
    for (start, end) in line_spans(&bytes) {
        let line = &bytes[start..end];
        let reused = (next..count.min(next + RESYNC_LINES)).find(|&candidate| {
            borrowed_line(original, candidate).is_some_and(|known| known == line)
        });
        match reused {
            Some(index) => {
                out.push(original.get_item(index)?);
                next = index + 1;
            }
            None => {
                out.push(str_from(py, line)?.into_any());
                next += 1;
            }
        }
    }
    PyList::new(py, out)
}
