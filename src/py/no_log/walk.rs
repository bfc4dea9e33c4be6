//! The structure walks of `remove_values` and `sanitize_keys`.
//!
//! ansible-core walks breadth first: each container met becomes a new empty container at once,
//! and the pair (old, new) joins a queue that is filled in order.  The walks here keep that exact
//! order (so the first error raised, the calls into user types and cycles behave the same) and
//! have no recursion, like ansible-core's.  Builtin types of exactly known type are handled here;
//! anything else (subclasses, tagged values, dates, unknown types) is handed to ansible-core's own
//! per-value helper, whose `deferred_removals` list is then moved into the queue.

use std::collections::VecDeque;

use pyo3::exceptions::{PyMemoryError, PyTypeError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{
    PyBool, PyBytes, PyDict, PyFloat, PyFrozenSet, PyInt, PyList, PySet, PyString, PyTuple,
};

use super::{answered, NoLogMatcher};

mod fast;
use crate::no_log::Scrubbed;
use crate::py::convert::text::{str_from, text_bytes};

const PLACEHOLDER: &str = "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER";
const REMOVE_VALUES_CONTAINER_ERROR: &str =
    "Unknown container type encountered when removing private values from output";
const SANITIZE_KEYS_CONTAINER_ERROR: &str =
    "Unknown container type encountered when removing private values from keys";
/// Pending signals (Ctrl-C) are checked this often, as Python's own loop would notice them.
const SIGNAL_CHECK_STEPS: usize = 4096;

/// ansible-core's helpers and ABCs the walks need, looked up once by the Python side.
#[pyclass(frozen, module = "ansible_accel._native")]
pub struct NoLogContext {
    remove_values_conditions: Py<PyAny>,
    sanitize_keys_conditions: Py<PyAny>,
    mapping: Py<PyAny>,
    mutable_sequence: Py<PyAny>,
    mutable_set: Py<PyAny>,
    /// `lambda item: tuple(item)` written as `a, b = item`, for items() that are not 2-tuples.
    unpack_pair: Py<PyAny>,
}

#[pymethods]
impl NoLogContext {
    #[new]
    fn new(
        remove_values_conditions: Py<PyAny>,
        sanitize_keys_conditions: Py<PyAny>,
        mapping: Py<PyAny>,
        mutable_sequence: Py<PyAny>,
        mutable_set: Py<PyAny>,
        unpack_pair: Py<PyAny>,
    ) -> Self {
        NoLogContext {
            remove_values_conditions,
            sanitize_keys_conditions,
            mapping,
            mutable_sequence,
            mutable_set,
            unpack_pair,
        }
    }
}

struct Walk<'a, 'py> {
    py: Python<'py>,
    matcher: &'a NoLogMatcher,
    no_log_strings: &'a Bound<'py, PyAny>,
    ctx: &'a NoLogContext,
    queue: VecDeque<(Bound<'py, PyAny>, Bound<'py, PyAny>)>,
    placeholder: Bound<'py, PyString>,
    delegated: usize,
    steps: usize,
}

/// `remove_values(value, no_log_strings)` once `no_log_strings` is sorted and compiled.
/// Answers the result and how many values went to ansible-core's helper, as a tuple.
#[pyfunction]
pub fn remove_values_walk<'py>(
    value: &Bound<'py, PyAny>,
    matcher: &NoLogMatcher,
    no_log_strings: &Bound<'py, PyAny>,
    ctx: &NoLogContext,
) -> PyResult<Bound<'py, PyAny>> {
    answered(value.py(), || {
        let mut walk = Walk::new(value.py(), matcher, no_log_strings, ctx);
        let result = walk.value_scrubbed(value)?;
        while let Some((old, new)) = walk.queue.pop_front() {
            walk.fill_scrubbed(&old, &new)?;
        }
        Ok((result, walk.delegated))
    })
}

/// `sanitize_keys(obj, no_log_strings, ignore_keys)` once `no_log_strings` is sorted and
/// compiled; answers as `remove_values_walk`.
#[pyfunction]
pub fn sanitize_keys_walk<'py>(
    obj: &Bound<'py, PyAny>,
    matcher: &NoLogMatcher,
    no_log_strings: &Bound<'py, PyAny>,
    ignore_keys: &Bound<'py, PyAny>,
    ctx: &NoLogContext,
) -> PyResult<Bound<'py, PyAny>> {
    answered(obj.py(), || {
        let mut walk = Walk::new(obj.py(), matcher, no_log_strings, ctx);
        let result = walk.value_copied(obj)?;
        while let Some((old, new)) = walk.queue.pop_front() {
            walk.fill_keys_scrubbed(&old, &new, ignore_keys)?;
        }
        Ok((result, walk.delegated))
    })
}

impl<'a, 'py> Walk<'a, 'py> {
    fn new(
        py: Python<'py>,
        matcher: &'a NoLogMatcher,
        no_log_strings: &'a Bound<'py, PyAny>,
        ctx: &'a NoLogContext,
    ) -> Self {
        Walk {
            py,
            matcher,
            no_log_strings,
            ctx,
            queue: VecDeque::new(),
            placeholder: PyString::intern(py, PLACEHOLDER),
            delegated: 0,
            steps: 0,
        }
    }

    fn tick(&mut self) -> PyResult<()> {
        self.ticks(1)
    }

    /// Count `n` steps, checking for pending signals when a multiple of the interval is passed.
    fn ticks(&mut self, n: usize) -> PyResult<()> {
        let before = self.steps / SIGNAL_CHECK_STEPS;
        self.steps += n;
        if self.steps / SIGNAL_CHECK_STEPS != before {
            self.py.check_signals()?;
        }
        Ok(())
    }

    /// Queue (old, new); a cyclic structure grows the queue as ansible-core's deque does,
    /// so running out of memory must be a MemoryError, not an abort.
    fn defer(
        &mut self,
        old: &Bound<'py, PyAny>,
        new: Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.queue
            .try_reserve(1)
            .map_err(|_| PyMemoryError::new_err(()))?;
        self.queue.push_back((old.clone(), new.clone()));
        Ok(new)
    }

    /// The new empty container for an exact builtin container, or `None`.
    fn new_container(&mut self, value: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let new =
            if value.is_exact_instance_of::<PyList>() || value.is_exact_instance_of::<PyTuple>() {
                PyList::empty(self.py).into_any()
            } else if value.is_exact_instance_of::<PyDict>() {
                PyDict::new(self.py).into_any()
            } else if value.is_exact_instance_of::<PySet>()
                || value.is_exact_instance_of::<PyFrozenSet>()
            {
                PySet::empty(self.py)?.into_any()
            } else {
                return Ok(None);
            };
        self.defer(value, new).map(Some)
    }

    /// `_remove_values_conditions(value, no_log_strings, deferred_removals)`.
    fn value_scrubbed(&mut self, value: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        self.tick()?;
        self.value_scrubbed_unticked(value)
    }

    /// `value_scrubbed` without the signal check (for a caller that checked for many values).
    fn value_scrubbed_unticked(
        &mut self,
        value: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        if let Ok(text) = value.cast_exact::<PyString>() {
            return self.text_scrubbed(value, text);
        }
        if value.is_exact_instance_of::<PyBytes>() {
            return self.bytes_scrubbed(value);
        }
        if value.is_none() || value.is_exact_instance_of::<PyBool>() {
            return Ok(value.clone());
        }
        if let Some(new) = self.new_container(value)? {
            return Ok(new);
        }
        if value.is_exact_instance_of::<PyInt>() || value.is_exact_instance_of::<PyFloat>() {
            return self.number_scrubbed(value);
        }
        self.delegate(&self.ctx.remove_values_conditions, value, true)
    }

    fn text_scrubbed(
        &self,
        value: &Bound<'py, PyAny>,
        text: &Bound<'py, PyString>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let bytes = text_bytes(text)?;
        Ok(match self.matcher.scrub(self.py, &bytes) {
            Scrubbed::Exact => self.placeholder.clone().into_any(),
            Scrubbed::Unchanged => value.clone(),
            Scrubbed::Replaced(out) => str_from(self.py, &out)?.into_any(),
        })
    }

    /// bytes are decoded with surrogateescape, scrubbed as text, and encoded back.
    fn bytes_scrubbed(&mut self, value: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let decoded =
            value.call_method1(intern!(self.py, "decode"), ("utf-8", "surrogateescape"))?;
        let text = decoded.cast::<PyString>()?;
        let bytes = text_bytes(text)?;
        match self.matcher.scrub(self.py, &bytes) {
            Scrubbed::Exact => Ok(self.placeholder.clone().into_any()),
            Scrubbed::Unchanged => Ok(value.clone()),
            Scrubbed::Replaced(out) => {
                match str_from(self.py, &out)?.call_method1("encode", ("utf-8", "surrogateescape"))
                {
                    Ok(encoded) => Ok(encoded),
                    // Not reachable from surrogateescape text; ansible-core decides if it is.
                    Err(_) => self.delegate(&self.ctx.remove_values_conditions, value, true),
                }
            }
        }
    }

    /// An int or float is replaced whole when its text equals or contains a no_log value.
    fn number_scrubbed(&self, value: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let patterns = self.matcher.patterns();
        if value.is_exact_instance_of::<PyInt>() {
            // str() of an exact int that fits is its plain decimal form: no Python str needed.
            if let Ok(number) = value.extract::<i64>() {
                if !patterns.int_text_matchable() {
                    return Ok(value.clone()); // its digits can neither equal nor contain a value
                }
                let digits = number.to_string();
                let found =
                    patterns.is_exact(digits.as_bytes()) || patterns.any_within(digits.as_bytes());
                return Ok(if found {
                    self.placeholder.clone().into_any()
                } else {
                    value.clone()
                });
            }
        }
        if value.is_exact_instance_of::<PyFloat>() && !patterns.float_text_matchable() {
            return Ok(value.clone()); // float repr never fails, so skipping it changes nothing
        }
        let text = value.str()?;
        let bytes = text_bytes(&text)?;
        if patterns.is_exact(&bytes) || patterns.any_within(&bytes) {
            Ok(self.placeholder.clone().into_any())
        } else {
            Ok(value.clone())
        }
    }

    /// Hand `value` to ansible-core's helper and queue the containers it deferred.
    fn delegate(
        &mut self,
        helper: &Py<PyAny>,
        value: &Bound<'py, PyAny>,
        with_strings: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.delegated += 1;
        let deferred = PyList::empty(self.py);
        let helper = helper.bind(self.py);
        let result = if with_strings {
            helper.call1((value, self.no_log_strings, &deferred))?
        } else {
            helper.call1((value, &deferred))?
        };
        for item in deferred.iter() {
            let (old, new): (Bound<'py, PyAny>, Bound<'py, PyAny>) = item.extract()?;
            self.defer(&old, new)?;
        }
        Ok(result)
    }

    /// (key, value) from one item of `items()`.
    fn pair(&self, item: Bound<'py, PyAny>) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
        let item = if item.is_exact_instance_of::<PyTuple>() && item.len()? == 2 {
            item
        } else {
            self.ctx.unpack_pair.bind(self.py).call1((item,))?
        };
        item.extract()
    }

    /// `isinstance(new_data, Mapping)`, without the ABC machinery for the builtin containers.
    fn is_mapping(&self, new: &Bound<'py, PyAny>) -> PyResult<bool> {
        if new.is_exact_instance_of::<PyDict>() {
            return Ok(true);
        }
        if new.is_exact_instance_of::<PyList>() || new.is_exact_instance_of::<PySet>() {
            return Ok(false);
        }
        new.is_instance(self.ctx.mapping.bind(self.py))
    }

    /// `new_data[key] = value`.
    fn store(
        new: &Bound<'py, PyAny>,
        key: &Bound<'py, PyAny>,
        value: Bound<'py, PyAny>,
    ) -> PyResult<()> {
        match new.cast_exact::<PyDict>() {
            Ok(dict) => dict.set_item(key, value),
            Err(_) => new.set_item(key, value),
        }
    }

    /// `new_data.append(elem)` or `new_data.add(elem)`, by what `new_data` is.
    fn add(
        &self,
        new: &Bound<'py, PyAny>,
        elem: Bound<'py, PyAny>,
        error: &'static str,
    ) -> PyResult<()> {
        if let Ok(list) = new.cast_exact::<PyList>() {
            return list.append(elem);
        }
        if let Ok(set) = new.cast_exact::<PySet>() {
            return set.add(elem);
        }
        if new.is_instance(self.ctx.mutable_sequence.bind(self.py))? {
            new.call_method1(intern!(self.py, "append"), (elem,))
                .map(drop)
        } else if new.is_instance(self.ctx.mutable_set.bind(self.py))? {
            new.call_method1(intern!(self.py, "add"), (elem,)).map(drop)
        } else {
            Err(PyTypeError::new_err(error))
        }
    }

    /// One step of either walk's queue: fill `new` from `old`, each key through `new_key` (for
    /// a mapping) and each element through `new_elem`.
    fn fill(
        &mut self,
        old: &Bound<'py, PyAny>,
        new: &Bound<'py, PyAny>,
        error: &'static str,
        new_key: impl Fn(&mut Self, Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>>,
        new_elem: impl Fn(&mut Self, &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>>,
    ) -> PyResult<()> {
        if self.is_mapping(new)? {
            for item in old.call_method0(intern!(self.py, "items"))?.try_iter()? {
                let (key, elem) = self.pair(item?)?;
                let key = new_key(self, key)?;
                let elem = new_elem(self, &elem)?;
                Self::store(new, &key, elem)?;
            }
        } else {
            for elem in old.try_iter()? {
                let elem = new_elem(self, &elem?)?;
                self.add(new, elem, error)?;
            }
        }
        Ok(())
    }

    /// One step of `remove_values`' queue.
    fn fill_scrubbed(&mut self, old: &Bound<'py, PyAny>, new: &Bound<'py, PyAny>) -> PyResult<()> {
        if self.fill_scrubbed_fast(old, new)? {
            return Ok(());
        }
        self.fill(
            old,
            new,
            REMOVE_VALUES_CONTAINER_ERROR,
            |_, key| Ok(key),
            Self::value_scrubbed,
        )
    }

    /// `_sanitize_keys_conditions(value, deferred_removals)`.
    fn value_copied(&mut self, value: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        self.tick()?;
        if value.is_exact_instance_of::<PyString>()
            || value.is_exact_instance_of::<PyBytes>()
            || value.is_none()
            || value.is_exact_instance_of::<PyBool>()
            || value.is_exact_instance_of::<PyInt>()
            || value.is_exact_instance_of::<PyFloat>()
        {
            return Ok(value.clone());
        }
        if let Some(new) = self.new_container(value)? {
            return Ok(new);
        }
        self.delegate(&self.ctx.sanitize_keys_conditions, value, false)
    }

    /// `old_key.startswith('_ansible')`, with the key's own method unless it is an exact str.
    fn is_private_key(&self, key: &Bound<'py, PyAny>) -> PyResult<bool> {
        match key.cast_exact::<PyString>() {
            Ok(text) => Ok(text_bytes(text)?.starts_with(b"_ansible")),
            Err(_) => key
                .call_method1(intern!(self.py, "startswith"), ("_ansible",))?
                .is_truthy(),
        }
    }

    /// `_remove_values_conditions(old_key, no_log_strings, None)`.
    fn key_scrubbed(&mut self, key: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        if let Ok(text) = key.cast_exact::<PyString>() {
            return self.text_scrubbed(key, text);
        }
        self.delegated += 1;
        let helper = self.ctx.remove_values_conditions.bind(self.py);
        helper.call1((key, self.no_log_strings, self.py.None()))
    }

    /// One step of `sanitize_keys`' queue.
    fn fill_keys_scrubbed(
        &mut self,
        old: &Bound<'py, PyAny>,
        new: &Bound<'py, PyAny>,
        ignore_keys: &Bound<'py, PyAny>,
    ) -> PyResult<()> {
        self.fill(
            old,
            new,
            SANITIZE_KEYS_CONTAINER_ERROR,
            |walk, key| {
                if ignore_keys.contains(&key)? || walk.is_private_key(&key)? {
                    Ok(key)
                } else {
                    walk.key_scrubbed(&key)
                }
            },
            Self::value_copied,
        )
    }
}
