//! ansible-core's `set_fallbacks`, done natively for the fast path: for each top-level option
//! with a `fallback` whose parameter is missing, in spec order, the strategy is called with the
//! arguments it names (`env_fallback` looked up in `os.environ` the way `os.environ` itself
//! looks), a value found is added to the parameters, and a no_log option's value to the set of
//! no_log values.  The strategies are user code: each runs exactly once, as in ansible-core.
//!
//! Taken only while `arg_spec.set_fallbacks` is the function the accelerator trusts (its own
//! replay wrapper around ansible-core's); any fallback not a tuple or list is left to that
//! function whole, before any strategy ran.

use std::collections::HashMap;
use std::sync::Mutex;

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PySet, PyString, PyTuple};

use super::CompiledArgSpec;

/// How a native `set_fallbacks` went.
pub(super) enum Ran<'py> {
    /// The no_log values found (the parameters were filled in).
    Done(Bound<'py, PySet>),
    /// A strategy (or the set of no_log values) raised this, as `set_fallbacks` would.
    Raised(PyErr),
    /// Not for the native loop: nothing ran.
    NotNative,
}

/// What the native loop needs of the running ansible-core, looked up once.
pub(super) struct FallbackContext {
    pub(super) env_fallback: Py<PyAny>,
    pub(super) not_found: Py<PyAny>,
    /// `_return_datastructure_name` on 2.22 (no_log values as strings), else `None`.
    pub(super) datastructure_names: Option<Py<PyAny>>,
    pub(super) os_module: Py<PyAny>,
    pub(super) environ_type: Py<PyAny>,
    /// What `os.environ.encodekey` gave for each variable name, and that function: it is a
    /// pure function of the name (the os module's encoder), asked once per name rather than
    /// on every validation; another function in its place starts the table again.
    pub(super) encoded_names: Mutex<Option<EncodedNames>>,
}

pub(super) struct EncodedNames {
    encodekey: Py<PyAny>,
    by_name: HashMap<String, Py<PyBytes>>,
}

/// Names remembered at most (a process's specs name a few dozen variables).
const ENCODED_NAMES_LIMIT: usize = 1024;

impl FallbackContext {
    /// `os.environ.encodekey(name)` for an exact str `name`.
    fn encoded_name<'py>(
        &self,
        encodekey: &Bound<'py, PyAny>,
        name: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = name.py();
        let text = name.cast::<PyString>().ok().and_then(|n| n.to_str().ok());
        if let Some(text) = text {
            let table = self.encoded_names.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(table) = table
                .as_ref()
                .filter(|t| t.encodekey.bind(py).is(encodekey))
            {
                if let Some(found) = table.by_name.get(text) {
                    return Ok(found.bind(py).clone().into_any());
                }
            }
        }
        let encoded = encodekey.call1((name,))?;
        if let (Some(text), Ok(bytes)) = (text, encoded.cast_exact::<PyBytes>()) {
            let mut table = self.encoded_names.lock().unwrap_or_else(|p| p.into_inner());
            let fresh = match table.as_ref() {
                Some(t) => {
                    !t.encodekey.bind(py).is(encodekey) || t.by_name.len() >= ENCODED_NAMES_LIMIT
                }
                None => true,
            };
            if fresh {
                *table = Some(EncodedNames {
                    encodekey: encodekey.clone().unbind(),
                    by_name: HashMap::new(),
                });
            }
            if let Some(table) = table.as_mut() {
                table
                    .by_name
                    .insert(text.to_owned(), bytes.clone().unbind());
            }
        }
        Ok(encoded)
    }
}

/// The strategy and arguments of one fallback, read as ansible-core reads them.
struct Planned<'py> {
    index: usize,
    strategy: Bound<'py, PyAny>,
    args: Bound<'py, PyTuple>,
    kwargs: Option<Bound<'py, PyDict>>,
}

/// The items of an exact tuple or list.
fn items_of<'py>(obj: &Bound<'py, PyAny>) -> Option<Vec<Bound<'py, PyAny>>> {
    if let Ok(tuple) = obj.cast_exact::<PyTuple>() {
        Some(tuple.iter().collect())
    } else {
        obj.cast_exact::<PyList>()
            .ok()
            .map(|list| list.iter().collect())
    }
}

pub(super) fn set_fallbacks<'py>(
    cx: &FallbackContext,
    compiled: &CompiledArgSpec,
    spec: &Bound<'py, PyDict>,
    parameters: &Bound<'py, PyDict>,
) -> PyResult<Ran<'py>> {
    let py = spec.py();
    let mut planned = Vec::new();
    for (index, option) in compiled.spec.options.iter().enumerate() {
        let name = compiled.names[index].bind(py);
        if !option.fallback || parameters.contains(name)? {
            continue;
        }
        let Some(option_dict) = spec.get_item(name)? else {
            return Ok(Ran::NotNative);
        };
        let Ok(option_dict) = option_dict.cast_into::<PyDict>() else {
            return Ok(Ran::NotNative);
        };
        let Some(fallback) = option_dict.get_item(intern!(py, "fallback"))? else {
            return Ok(Ran::NotNative);
        };
        let Some(items) = items_of(&fallback) else {
            return Ok(Ran::NotNative);
        };
        let Some((strategy, rest)) = items.split_first() else {
            return Ok(Ran::NotNative);
        };
        if strategy.is_none() {
            continue;
        }
        let (mut args, mut kwargs) = (PyTuple::empty(py), None);
        for item in rest {
            if let Ok(dict) = item.cast::<PyDict>() {
                // `**kwargs` of anything but a dict with str keys: ansible-core's own error.
                if !dict.is_exact_instance_of::<PyDict>()
                    || !dict
                        .keys()
                        .iter()
                        .all(|k| k.is_exact_instance_of::<PyString>())
                {
                    return Ok(Ran::NotNative);
                }
                kwargs = Some(dict.clone());
            } else {
                // `*args` of anything but a tuple or list: ansible-core's own error.
                let Some(items) = items_of(item) else {
                    return Ok(Ran::NotNative);
                };
                args = PyTuple::new(py, items)?;
            }
        }
        planned.push(Planned {
            index,
            strategy: strategy.clone(),
            args,
            kwargs,
        });
    }
    let found = PySet::empty(py)?;
    for Planned {
        index,
        strategy,
        args,
        kwargs,
    } in planned
    {
        let value = match call_strategy(cx, &strategy, &args, kwargs.as_ref()) {
            Ok(Some(value)) => value,
            Ok(None) => continue, // AnsibleFallbackNotFound
            Err(e) => return Ok(Ran::Raised(e)),
        };
        if compiled.spec.options[index].no_log {
            if let Err(e) = add_no_log(cx, &found, &value) {
                return Ok(Ran::Raised(e));
            }
        }
        parameters.set_item(compiled.names[index].bind(py), value)?;
    }
    Ok(Ran::Done(found))
}

/// `if value.get('no_log', False) and fallback_value:` add it (2.22: its strings).
fn add_no_log(
    cx: &FallbackContext,
    found: &Bound<'_, PySet>,
    value: &Bound<'_, PyAny>,
) -> PyResult<()> {
    if !value.is_truthy()? {
        return Ok(());
    }
    match &cx.datastructure_names {
        Some(names) => {
            found.call_method1(
                intern!(found.py(), "update"),
                (names.bind(found.py()).call1((value,))?,),
            )?;
            Ok(())
        }
        None => found.add(value),
    }
}

/// The strategy's value; `None` when it raised AnsibleFallbackNotFound.
fn call_strategy<'py>(
    cx: &FallbackContext,
    strategy: &Bound<'py, PyAny>,
    args: &Bound<'py, PyTuple>,
    kwargs: Option<&Bound<'py, PyDict>>,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    let py = strategy.py();
    if strategy.is(cx.env_fallback.bind(py)) {
        if let Some(found) = env_lookup(cx, args)? {
            return Ok(found);
        }
    }
    match strategy.call(args, kwargs) {
        Ok(value) => Ok(Some(value)),
        Err(e) => {
            let not_found = cx.not_found.bind(py);
            if e.is_instance(py, not_found) {
                Ok(None)
            } else {
                Err(e)
            }
        }
    }
}

/// `env_fallback(*args)` for str arguments and the real `os.environ`: the first name present
/// gives its value (`Some(Some(value))`), none present is `Some(None)`; `None` when the
/// arguments or the environment mapping are not the usual ones (the function is called).
fn env_lookup<'py>(
    cx: &FallbackContext,
    args: &Bound<'py, PyTuple>,
) -> PyResult<Option<Option<Bound<'py, PyAny>>>> {
    let py = args.py();
    if !args.iter().all(|n| n.is_exact_instance_of::<PyString>()) {
        return Ok(None);
    }
    let environ = cx.os_module.bind(py).getattr(intern!(py, "environ"))?;
    if !environ.get_type().is(cx.environ_type.bind(py)) {
        return Ok(None);
    }
    // What os.environ's __contains__/__getitem__ do: its own key encoding, its own data.
    let data = environ.getattr(intern!(py, "_data"))?;
    let Ok(data) = data.cast_into::<PyDict>() else {
        return Ok(None);
    };
    let encode = environ.getattr(intern!(py, "encodekey"))?;
    for name in args.iter() {
        if let Some(raw) = data.get_item(cx.encoded_name(&encode, &name)?)? {
            return Ok(Some(Some(
                environ.getattr(intern!(py, "decodevalue"))?.call1((raw,))?,
            )));
        }
    }
    Ok(Some(None))
}
