//! Python objects to the argspec engine's `Value`s and `Params` and back: plain builtin data
//! (and ansible-core's tagged types, as their bases) only; anything else is answered with the
//! `Unhandled` reason that leaves the call to ansible-core.

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};

use super::containers::{SeenContainers, MAX_DEPTH, SHARED};
use super::kept::KeptAside;
use super::tagged::{is_exact_or_tagged, tagged_base, Base};
use crate::argspec::{CompiledSpec, Params, Unhandled, Value};

/// Spec values may be tuples (read as lists); parameters must be exactly list/dict/scalars,
/// since the result has to be what `deepcopy` would give.
#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Mode {
    Spec,
    Params,
}

pub(crate) fn to_value(
    obj: &Bound<'_, PyAny>,
    mode: Mode,
    depth: usize,
) -> Result<Value, Unhandled> {
    to_value_in(obj, mode, depth, &mut None)
}

/// `to_value`; with `seen`, every dict and list met is noted there, and one met twice is
/// refused (what `shares_containers` finds, found in the same walk).
pub(crate) fn to_value_in(
    obj: &Bound<'_, PyAny>,
    mode: Mode,
    depth: usize,
    seen: &mut Option<SeenContainers>,
) -> Result<Value, Unhandled> {
    to_value_for(obj, mode, depth, seen, None, &mut None)
}

/// `to_value_in` for the value of an option with sub-options `sub`: a dict (or each dict of a
/// list) is made with room for every sub-option (validation adds the ones not given) and
/// keys naming one share its name.  The value is the same either way.
pub(crate) fn to_value_for(
    obj: &Bound<'_, PyAny>,
    mode: Mode,
    depth: usize,
    seen: &mut Option<SeenContainers>,
    sub: Option<&CompiledSpec>,
    keep: &mut Option<KeptAside>,
) -> Result<Value, Unhandled> {
    const NOT_PLAIN: Unhandled = Unhandled::NotPlainData;
    if depth > MAX_DEPTH {
        return Err(Unhandled::NestedTooDeeply);
    }
    if obj.is_none() {
        return Ok(Value::None);
    }
    if obj.is_exact_instance_of::<PyBool>() {
        return Ok(Value::Bool(obj.is_truthy().map_err(|_| NOT_PLAIN)?));
    }
    let base = if obj.is_exact_instance_of::<PyString>() {
        Base::Str
    } else if obj.is_exact_instance_of::<PyInt>() {
        Base::Int
    } else if obj.is_exact_instance_of::<PyFloat>() {
        Base::Float
    } else if obj.is_exact_instance_of::<PyList>() {
        Base::List
    } else if obj.is_exact_instance_of::<PyDict>() {
        Base::Dict
    } else if mode == Mode::Spec && obj.is_exact_instance_of::<PyTuple>() {
        Base::List
    } else {
        tagged_base(obj).ok_or(NOT_PLAIN)?
    };
    match base {
        Base::Str => obj
            .cast::<PyString>()
            .ok()
            .and_then(|s| s.to_str().ok())
            .map(|s| Value::Str(s.into()))
            .ok_or(Unhandled::StrWithSurrogates),
        Base::Int => obj
            .extract::<i64>()
            .map(Value::Int)
            .map_err(|_| Unhandled::IntBeyond64Bits),
        Base::Float => obj
            .extract::<f64>()
            .map(Value::Float)
            .map_err(|_| NOT_PLAIN),
        Base::List => {
            if let Some(seen) = seen {
                if !seen.insert(obj.as_ptr() as usize) {
                    return Err(SHARED);
                }
            }
            if let Ok(list) = obj.cast_exact::<PyList>() {
                let mut items = Vec::with_capacity(list.len());
                for item in list.iter() {
                    items.push(to_value_for(&item, mode, depth + 1, seen, sub, keep)?);
                }
                return Ok(Value::List(items));
            }
            let mut items = Vec::new();
            for item in obj.try_iter().map_err(|_| NOT_PLAIN)? {
                items.push(to_value_for(
                    &item.map_err(|_| NOT_PLAIN)?,
                    mode,
                    depth + 1,
                    seen,
                    sub,
                    keep,
                )?);
            }
            Ok(Value::List(items))
        }
        Base::Dict => to_params_with_room(
            obj.cast::<PyDict>().map_err(|_| NOT_PLAIN)?,
            mode,
            depth + 1,
            sub.map_or(0, |s| s.options.len()),
            sub,
            seen,
            keep,
        )
        .map(Value::Dict),
    }
}

/// Whether a dict or list object occurs twice among the parameters: ansible-core's deepcopy
/// keeps such sharing, and sub-option validation changes dicts in place, which the core's
/// copies do not reproduce.
pub(crate) fn shares_containers(
    obj: &Bound<'_, PyAny>,
    seen: &mut SeenContainers,
    depth: usize,
) -> bool {
    if depth > MAX_DEPTH {
        return true; // to_value refuses it anyway
    }
    if obj.is_exact_instance_of::<PyString>()
        || obj.is_none()
        || obj.is_exact_instance_of::<PyInt>()
        || obj.is_exact_instance_of::<PyBool>()
    {
        return false; // most parameters: nothing inside
    }
    let is_dict = is_exact_or_tagged(obj, Base::Dict);
    if !is_dict && !is_exact_or_tagged(obj, Base::List) {
        return false;
    }
    if !seen.insert(obj.as_ptr() as usize) {
        return true;
    }
    if is_dict {
        return match obj.cast::<PyDict>() {
            Ok(dict) => dict
                .iter()
                .any(|(_, v)| shares_containers(&v, seen, depth + 1)),
            Err(_) => true,
        };
    }
    match obj.cast::<PyList>() {
        Ok(list) => list.iter().any(|v| shares_containers(&v, seen, depth + 1)),
        Err(_) => true,
    }
}

/// `to_params` with room for `room` entries in all (validation adds every option); keys that
/// name an option of `spec` share its name rather than being copied.
pub(crate) fn to_params_with_room(
    dict: &Bound<'_, PyDict>,
    mode: Mode,
    depth: usize,
    room: usize,
    spec: Option<&CompiledSpec>,
    seen: &mut Option<SeenContainers>,
    keep: &mut Option<KeptAside>,
) -> Result<Params, Unhandled> {
    const SURROGATES: Unhandled = Unhandled::StrWithSurrogates;
    if let Some(seen) = seen {
        if !seen.insert(dict.as_ptr() as usize) {
            return Err(SHARED);
        }
    }
    let mut params = Params::with_capacity_and_hasher(dict.len().max(room), Default::default());
    for (key, value) in dict.iter() {
        if !is_exact_or_tagged(&key, Base::Str) {
            return Err(Unhandled::DictKeyNotStr);
        }
        let text = key.cast::<PyString>().map_err(|_| SURROGATES)?;
        let text = text.to_str().map_err(|_| SURROGATES)?;
        match spec.and_then(|s| Some((s, s.option_index(text)?))) {
            // The option's own name, inserted with its hash known.
            Some((spec, index)) => {
                let option = &spec.options[index];
                let kept = match keep.as_mut().filter(|_| option.keeps) {
                    Some(keep) => keep.keep(&value, option, seen)?,
                    None => None,
                };
                let value = match kept {
                    Some(kept) => kept,
                    None => {
                        let sub = option.sub.as_deref().map(|s| &s.spec);
                        to_value_for(&value, mode, depth, seen, sub, keep)?
                    }
                };
                spec.insert_option(&mut params, index, value);
            }
            None => {
                let value = to_value_for(&value, mode, depth, seen, None, keep)?;
                params.insert(text.into(), value);
            }
        }
    }
    Ok(params)
}

pub(crate) fn to_python<'py>(py: Python<'py>, value: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match value {
        Value::None => py.None().into_bound(py),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        Value::Int(i) => i.into_pyobject(py)?.into_any(),
        Value::Float(f) => PyFloat::new(py, *f).into_any(),
        Value::Str(s) => PyString::new(py, s).into_any(),
        Value::List(items) => {
            let list = PyList::empty(py);
            for item in items {
                list.append(to_python(py, item)?)?;
            }
            list.into_any()
        }
        Value::Dict(map) => params_to_python(py, map)?.into_any(),
        Value::Kept(_) => {
            return Err(PyRuntimeError::new_err(
                "a container kept aside outside the fast path",
            ))
        }
    })
}

/// `ValidationResult._deprecations`: one dict per entry, keys in the core's order.
pub(crate) fn deprecations_to_python<'py>(
    py: Python<'py>,
    entries: &[Vec<(&'static str, Value)>],
) -> PyResult<Bound<'py, PyList>> {
    let deprecations = PyList::empty(py);
    for entry in entries {
        let dict = PyDict::new(py);
        for (key, value) in entry {
            dict.set_item(key, to_python(py, value)?)?;
        }
        deprecations.append(dict)?;
    }
    Ok(deprecations)
}

pub(crate) fn params_to_python<'py>(py: Python<'py>, map: &Params) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    for (k, v) in map {
        dict.set_item(&**k, to_python(py, v)?)?;
    }
    Ok(dict)
}

/// The validated parameters, keyed with the spec's own name objects where they match.
pub(crate) fn validated_to_python<'py>(
    py: Python<'py>,
    spec: &CompiledSpec,
    names: &[Py<PyString>],
    map: &Params,
) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    for (k, v) in map {
        let value = to_python(py, v)?;
        match spec.option_index(k).and_then(|i| names.get(i)) {
            Some(name) => dict.set_item(name.bind(py), value)?,
            None => dict.set_item(&**k, value)?,
        }
    }
    Ok(dict)
}
