//! Glue for the argspec engine: Python specs and parameters in (plain builtin data only),
//! the core's outcome out as plain tuples; `python/ansible_accel/argspec.py` builds the
//! `ValidationResult`.  A value the core cannot take exactly is answered with a reason str.

use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};

use super::cpython::layout;
use crate::argspec::convert::Converted;
use crate::argspec::{
    CompiledSpec, Context, CoreFlavor, Delegate, FallbackValues, NoLogSource, NoLogValue, Outcome,
    Params, SpecInput, TypeKind, Unhandled, Value, OPTION_KEYS,
};

mod fallbacks;
mod fast;
mod module_attrs;
mod reuse;
mod snapshot;
mod template;

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(argspec_compile, m)?)?;
    m.add_function(wrap_pyfunction!(argspec_tagged_types, m)?)?;
    m.add_function(wrap_pyfunction!(argspec_quick_spec_check, m)?)?;
    m.add_function(wrap_pyfunction!(argspec_kept_count, m)?)?;
    m.add_class::<CompiledArgSpec>()?;
    fast::register(m)?;
    Ok(())
}

/// Nesting deeper than this is left to ansible-core (and stops reference cycles).
const MAX_DEPTH: usize = 64;

/// Spec values may be tuples (read as lists); parameters must be exactly list/dict/scalars,
/// since the result has to be what `deepcopy` would give.
#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Spec,
    Params,
}

/// The builtin type an object stands for: its exact type, or the builtin base of one of
/// ansible-core's tagged types (controller data carries origin tags on str, int, float,
/// list and dict subclasses; the Python side puts the tagged objects back into the result).
#[derive(Clone, Copy, PartialEq)]
enum Base {
    Str,
    Int,
    Float,
    List,
    Dict,
}

/// ansible-core's tagged str, int, float, list and dict types (in that order), registered
/// once by the Python side when they exist (2.19+).
static TAGGED_TYPES: std::sync::OnceLock<Vec<(usize, Base, Py<PyAny>)>> =
    std::sync::OnceLock::new();

thread_local! {
    /// Whether a conversion since the last reset met a tagged object.
    static SAW_TAGGED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether a reused spec is proven unchanged by the dicts' version tags and the lists' items
/// read in place rather than by a walk (see `snapshot`): for the tests, which change specs in
/// place either way.
#[pyfunction]
fn argspec_quick_spec_check(py: Python<'_>) -> bool {
    layout::version_tags_usable(py) && layout::list_layout_usable(py)
}

/// Registers ansible-core's tagged types (str, int, float, list, dict); the first call wins.
#[pyfunction]
fn argspec_tagged_types(types: Vec<Bound<'_, PyAny>>) -> bool {
    let bases = [Base::Str, Base::Int, Base::Float, Base::List, Base::Dict];
    let entries = types
        .into_iter()
        .zip(bases)
        .map(|(t, base)| (t.as_ptr() as usize, base, t.unbind()))
        .collect();
    TAGGED_TYPES.set(entries).is_ok()
}

fn tagged_base(obj: &Bound<'_, PyAny>) -> Option<Base> {
    let ty = obj.get_type().as_ptr() as usize;
    let base = TAGGED_TYPES
        .get()?
        .iter()
        .find(|(t, _, _)| *t == ty)
        .map(|(_, base, _)| *base)?;
    SAW_TAGGED.with(|saw| saw.set(true));
    Some(base)
}

fn is_exact_or_tagged(obj: &Bound<'_, PyAny>, base: Base) -> bool {
    let exact = match base {
        Base::Str => obj.is_exact_instance_of::<PyString>(),
        Base::Int => obj.is_exact_instance_of::<PyInt>(),
        Base::Float => obj.is_exact_instance_of::<PyFloat>(),
        Base::List => obj.is_exact_instance_of::<PyList>(),
        Base::Dict => obj.is_exact_instance_of::<PyDict>(),
    };
    exact || tagged_base(obj) == Some(base)
}

/// Resets the tagged-object flag; returns whether anything tagged was met since the last reset.
fn take_saw_tagged() -> bool {
    SAW_TAGGED.with(|saw| saw.replace(false))
}

fn to_value(obj: &Bound<'_, PyAny>, mode: Mode, depth: usize) -> Result<Value, Unhandled> {
    to_value_in(obj, mode, depth, &mut None)
}

const SHARED: Unhandled = Unhandled("value: container shared between parameters");

/// `to_value`; with `seen`, every dict and list met is noted there, and one met twice is
/// refused (what `shares_containers` finds, found in the same walk).
fn to_value_in(
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
fn to_value_for(
    obj: &Bound<'_, PyAny>,
    mode: Mode,
    depth: usize,
    seen: &mut Option<SeenContainers>,
    sub: Option<&CompiledSpec>,
    keep: &mut Option<KeptAside>,
) -> Result<Value, Unhandled> {
    const NOT_PLAIN: Unhandled = Unhandled("value: not plain builtin data");
    if depth > MAX_DEPTH {
        return Err(Unhandled("value: nested too deeply"));
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
            .ok_or(Unhandled("value: str with surrogates")),
        Base::Int => obj
            .extract::<i64>()
            .map(Value::Int)
            .map_err(|_| Unhandled("value: int beyond 64 bits")),
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

/// The containers met so far: a short array searched in order (parameters hold a few; no
/// allocation), a hash set past that.
#[derive(Default)]
struct SeenContainers {
    few: [usize; SeenContainers::FEW],
    count: usize,
    many: rustc_hash::FxHashSet<usize>,
}

impl SeenContainers {
    const FEW: usize = 32;

    /// Adds `address`; false if it was there already.
    fn insert(&mut self, address: usize) -> bool {
        let few = &self.few[..self.count.min(Self::FEW)];
        if few.contains(&address) || (!self.many.is_empty() && self.many.contains(&address)) {
            return false;
        }
        if self.count < Self::FEW {
            self.few[self.count] = address;
            self.count += 1;
        } else {
            self.many.insert(address);
        }
        true
    }

    /// Every address added.
    fn addresses(&self) -> impl Iterator<Item = usize> + '_ {
        self.few[..self.count.min(Self::FEW)]
            .iter()
            .copied()
            .chain(self.many.iter().copied())
    }
}

/// Lists and dicts kept aside while converting parameters (`Value::Kept`), by slot: each as the
/// copy ansible-core's deep copy makes of it (new lists and dicts holding the same str, int,
/// float, bool and None objects).  The core needs only their type and length (see
/// `OptionSpec::keeps`), and the result holds the copy: neither is converted to Rust values
/// and back.
#[derive(Default)]
pub(super) struct KeptAside(pub(super) Vec<Py<PyAny>>);

/// How many lists and dicts were kept aside in this process (for tests: proof the way is used).
static KEPT_COUNT: crate::py::gil_cell::GilCell<u64> = crate::py::gil_cell::GilCell::new(0);

#[pyfunction]
fn argspec_kept_count(py: Python<'_>) -> u64 {
    KEPT_COUNT.get(py).map_or(0, |count| *count)
}

impl KeptAside {
    /// `obj`, given for `option` (which `keeps`), kept aside if it is a list or dict of the
    /// option's type (its elements of the option's `elements` type) made of plain builtin data
    /// only, no container in it twice, nested no deeper than `MAX_DEPTH`; `None` otherwise
    /// (converted the usual way).  With `seen` (sub-options validated in place elsewhere), a
    /// container met there too is refused as the usual conversion refuses it.
    fn keep(
        &mut self,
        obj: &Bound<'_, PyAny>,
        option: &crate::argspec::OptionSpec,
        seen: &mut Option<SeenContainers>,
    ) -> Result<Option<Value>, Unhandled> {
        let dict = obj.is_exact_instance_of::<PyDict>();
        let list = !dict && obj.is_exact_instance_of::<PyList>();
        let fits = match option.kind {
            TypeKind::Dict => dict,
            TypeKind::List => list,
            TypeKind::Raw => dict || list,
            _ => false,
        };
        if !fits {
            return Ok(None);
        }
        if let (Some(kind), Ok(list)) = (option.elements, obj.cast_exact::<PyList>()) {
            let each = |item: Bound<'_, PyAny>| match kind {
                TypeKind::Str => item.is_exact_instance_of::<PyString>(),
                TypeKind::Dict => item.is_exact_instance_of::<PyDict>(),
                _ => false,
            };
            if !list.iter().all(each) {
                return Ok(None);
            }
        }
        let mut met = SeenContainers::default();
        let Some(copy) = plain_copy(obj, 0, &mut met) else {
            return Ok(None);
        };
        if let Some(seen) = seen {
            for address in met.addresses() {
                if !seen.insert(address) {
                    return Err(SHARED);
                }
            }
        }
        let len = obj
            .len()
            .map_err(|_| Unhandled("value: container without a length"))?;
        let slot = self.0.len();
        if let Some(mut count) = KEPT_COUNT.get_mut(obj.py()) {
            *count += 1;
        }
        self.0.push(copy.unbind());
        Ok(Some(Value::Kept(crate::argspec::Kept { dict, len, slot })))
    }
}

/// Whether `obj` is an object `copy.deepcopy` returns as it is among plain data.
fn plain_scalar(obj: &Bound<'_, PyAny>) -> bool {
    obj.is_exact_instance_of::<PyString>()
        || obj.is_none()
        || obj.is_exact_instance_of::<PyBool>()
        || obj.is_exact_instance_of::<PyInt>()
        || obj.is_exact_instance_of::<PyFloat>()
}

/// `copy.deepcopy(obj)` for an exact list or dict of plain builtin data (dict keys exact str):
/// new lists and dicts, in the same order, holding the same scalar objects.  `None` for
/// anything else, a container met twice (`met`), or nesting deeper than `MAX_DEPTH`.
fn plain_copy<'py>(
    obj: &Bound<'py, PyAny>,
    depth: usize,
    met: &mut SeenContainers,
) -> Option<Bound<'py, PyAny>> {
    if depth > MAX_DEPTH || !met.insert(obj.as_ptr() as usize) {
        return None;
    }
    if let Ok(dict) = obj.cast_exact::<PyDict>() {
        let mut nested = false;
        for (key, value) in dict.iter() {
            if !key.is_exact_instance_of::<PyString>() {
                return None;
            }
            nested |= !plain_scalar(&value);
        }
        let copy = dict.copy().ok()?;
        if nested {
            for (key, value) in dict.iter() {
                if !plain_scalar(&value) {
                    copy.set_item(key, plain_copy(&value, depth + 1, met)?)
                        .ok()?;
                }
            }
        }
        return Some(copy.into_any());
    }
    let list = obj.cast_exact::<PyList>().ok()?;
    if list.iter().all(|item| plain_scalar(&item)) {
        return Some(list.get_slice(0, list.len()).into_any());
    }
    let mut items = Vec::with_capacity(list.len());
    for item in list.iter() {
        items.push(match plain_scalar(&item) {
            true => item,
            false => plain_copy(&item, depth + 1, met)?,
        });
    }
    PyList::new(obj.py(), items).ok().map(Bound::into_any)
}

/// Whether a dict or list object occurs twice among the parameters: ansible-core's deepcopy
/// keeps such sharing, and sub-option validation changes dicts in place, which the core's
/// copies do not reproduce.
fn shares_containers(obj: &Bound<'_, PyAny>, seen: &mut SeenContainers, depth: usize) -> bool {
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
fn to_params_with_room(
    dict: &Bound<'_, PyDict>,
    mode: Mode,
    depth: usize,
    room: usize,
    spec: Option<&CompiledSpec>,
    seen: &mut Option<SeenContainers>,
    keep: &mut Option<KeptAside>,
) -> Result<Params, Unhandled> {
    const SURROGATES: Unhandled = Unhandled("value: str with surrogates");
    if let Some(seen) = seen {
        if !seen.insert(dict.as_ptr() as usize) {
            return Err(SHARED);
        }
    }
    let mut params = Params::with_capacity_and_hasher(dict.len().max(room), Default::default());
    for (key, value) in dict.iter() {
        if !is_exact_or_tagged(&key, Base::Str) {
            return Err(Unhandled("value: dict key that is not a str"));
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

fn to_python<'py>(py: Python<'py>, value: &Value) -> PyResult<Bound<'py, PyAny>> {
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
fn deprecations_to_python<'py>(
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

fn params_to_python<'py>(py: Python<'py>, map: &Params) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    for (k, v) in map {
        dict.set_item(&**k, to_python(py, v)?)?;
    }
    Ok(dict)
}

/// The validated parameters, keyed with the spec's own name objects where they match.
fn validated_to_python<'py>(
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

/// `getattr(f, '__name__', str(type(f)))`, as ansible-core names a callable type.
fn callable_name(f: &Bound<'_, PyAny>) -> Result<String, Unhandled> {
    const REASON: Unhandled = Unhandled("spec: callable type without a printable name");
    let py = f.py();
    let name = match f.getattr("__name__") {
        Ok(name) => name.str(),
        Err(e) if e.is_instance_of::<pyo3::exceptions::PyAttributeError>(py) => f.get_type().str(),
        Err(_) => return Err(REASON),
    };
    name.map_err(|_| REASON)?
        .to_str()
        .map(str::to_owned)
        .map_err(|_| REASON)
}

fn spec_input(
    argument_spec: &Bound<'_, PyAny>,
    checks: [&Bound<'_, PyAny>; 5],
    callables: &mut Vec<Py<PyAny>>,
    names: &mut Vec<Py<PyString>>,
    sub_specs: &mut Vec<Py<PyAny>>,
    sub_options: &mut Vec<SubObjects>,
) -> Result<SpecInput, Unhandled> {
    let mut input = SpecInput::default();
    let mut kept = Kept {
        callables,
        sub_specs,
        sub_options: Vec::new(),
    };
    let walked = options_input(argument_spec, &mut input, &mut kept, Some(names), None, 0);
    *sub_options = kept.sub_options;
    walked?;
    let [me, rt, roo, ri, rb] = checks.map(|c| to_value(c, Mode::Spec, 0).ok());
    input.mutually_exclusive = me;
    input.required_together = rt;
    input.required_one_of = roo;
    input.required_if = ri;
    input.required_by = rb;
    Ok(input)
}

/// The options of a spec (or of an `options` sub-spec) into `input`.  Callables used as type
/// are kept in `callables` and their names in the top input, indexed alike at every depth.
/// Python objects a compiled spec keeps: callables used as type, sub-spec dicts.
struct Kept<'a> {
    callables: &'a mut Vec<Py<PyAny>>,
    sub_specs: &'a mut Vec<Py<PyAny>>,
    /// Each sub-spec's option name objects and `default` objects, by the sub-spec's number.
    sub_options: Vec<SubObjects>,
}

/// A sub-spec's own objects, by option index: its keys and its options' `default` objects.
#[derive(Default)]
struct SubObjects {
    names: Vec<Py<PyString>>,
    defaults: Vec<Option<Py<PyAny>>>,
}

fn options_input(
    spec: &Bound<'_, PyAny>,
    input: &mut SpecInput,
    kept: &mut Kept<'_>,
    mut names: Option<&mut Vec<Py<PyString>>>,
    mut defaults: Option<&mut Vec<Option<Py<PyAny>>>>,
    depth: usize,
) -> Result<(), Unhandled> {
    if depth > MAX_DEPTH {
        return Err(Unhandled("spec: options nested too deeply"));
    }
    if !is_exact_or_tagged(spec, Base::Dict) {
        return Err(Unhandled("spec: not a dict"));
    }
    let spec = spec
        .cast::<PyDict>()
        .map_err(|_| Unhandled("spec: not a dict"))?;
    for (name_object, option) in spec.iter() {
        if !is_exact_or_tagged(&name_object, Base::Str) {
            return Err(Unhandled("spec: option name not a str"));
        }
        let name_object = name_object
            .cast::<PyString>()
            .map_err(|_| Unhandled("spec: option name not a str"))?;
        let name: String = name_object
            .extract()
            .map_err(|_| Unhandled("spec: option name with surrogates"))?;
        if let Some(names) = names.as_deref_mut() {
            names.push(name_object.clone().unbind());
        }
        if !is_exact_or_tagged(&option, Base::Dict) {
            return Err(Unhandled("spec: option not a dict"));
        }
        let option = option
            .cast::<PyDict>()
            .map_err(|_| Unhandled("spec: option not a dict"))?;
        let at = input.options.len();
        if let Some(defaults) = defaults.as_deref_mut() {
            defaults.push(None);
        }
        let mut fields = crate::argspec::OptionInput::default();
        for (key, value) in option.iter() {
            let key: String = key
                .extract()
                .map_err(|_| Unhandled("spec: option key not a str"))?;
            if key == "default" {
                if let Some(slot) = defaults.as_deref_mut().and_then(|d| d.last_mut()) {
                    *slot = Some(value.clone().unbind());
                }
            }
            if !OPTION_KEYS.contains(&key.as_str()) {
                continue; // never read by ansible-core (`description`, `context`, ...)
            }
            if (key == "type" || key == "elements") && value.is_callable() {
                input
                    .callable_fields
                    .insert((at, key.clone()), kept.callables.len());
                input.callable_names.push(callable_name(&value)?);
                kept.callables.push(value.unbind());
                fields.insert(key, None);
                continue;
            }
            if key == "options" && is_exact_or_tagged(&value, Base::Dict) {
                let mut sub = SpecInput {
                    source: Some(kept.sub_specs.len()),
                    ..SpecInput::default()
                };
                let number = kept.sub_specs.len();
                kept.sub_specs.push(value.clone().unbind());
                kept.sub_options.push(SubObjects::default());
                let mut own = SubObjects::default();
                options_input(
                    &value,
                    &mut sub,
                    kept,
                    Some(&mut own.names),
                    Some(&mut own.defaults),
                    depth + 1,
                )?;
                kept.sub_options[number] = own;
                // Names of callables met below belong to the one list every level indexes.
                input.callable_names.append(&mut sub.callable_names);
                input.sub_inputs.insert(at, sub);
                continue;
            }
            // Values that end up in the result keep their exact types (a tuple stays opaque).
            let copied = matches!(
                key.as_str(),
                "default"
                    | "deprecated_aliases"
                    | "removed_in_version"
                    | "removed_at_date"
                    | "removed_from_collection"
            );
            let mode = if copied { Mode::Params } else { Mode::Spec };
            fields.insert(key, to_value(&value, mode, 0).ok());
        }
        input.options.push((name, fields));
    }
    Ok(())
}

/// Conversions the core gives up on, done by ansible-core's own checker
/// (`DEFAULT_TYPE_VALIDATORS[name]`), its `TypeError`/`ValueError` text kept as the core's
/// error; any other exception leaves the call to ansible-core, which raises it again.
struct CoreCheckers<'py, 'a> {
    py: Python<'py>,
    validators: Bound<'py, PyAny>,
    /// The spec's callables used as type, by index.
    callables: &'a [Py<PyAny>],
    /// The sub-spec dicts, by the number the core knows them by.
    sub_specs: &'a [Py<PyAny>],
    /// A KeyboardInterrupt/SystemExit from a checker: raised once validation stops.
    interrupt: std::cell::RefCell<Option<PyErr>>,
    /// The caller's parameters, when they or the spec hold tagged objects: a callable type
    /// gets (a copy of) the object ansible-core would give it.
    tagged_params: Option<Bound<'py, PyDict>>,
    spec_tagged: bool,
    /// What a callable type returned for a top-level option given tagged: the object itself,
    /// for the result (its items keep their tags).
    returned: std::cell::RefCell<Vec<(String, Py<PyAny>)>>,
}

impl CoreCheckers<'_, '_> {
    /// A KeyboardInterrupt and the like is raised as soon as the core stops.
    fn keep_interrupt(&self, e: PyErr) {
        if !e.is_instance_of::<pyo3::exceptions::PyException>(self.py) {
            self.interrupt.replace(Some(e));
        }
    }
}

impl Delegate for CoreCheckers<'_, '_> {
    fn fallbacks(&self, source: usize, params: &Params) -> Result<FallbackValues, Unhandled> {
        const FAILED: Unhandled = Unhandled("value: fallback raised");
        let py = self.py;
        let spec = self.sub_specs.get(source).ok_or(FAILED)?.bind(py);
        let dict = params_to_python(py, params).map_err(|_| FAILED)?;
        // The function _validate_sub_spec calls, looked up as it looks it up.
        let set_fallbacks = py
            .import("ansible.module_utils.common.parameters")
            .and_then(|m| m.getattr("set_fallbacks"))
            .map_err(|_| FAILED)?;
        let found = match set_fallbacks.call1((spec, &dict)) {
            Ok(found) => found,
            Err(e) => {
                self.keep_interrupt(e);
                return Err(FAILED);
            }
        };
        let saw_tagged = take_saw_tagged();
        let mut secrets = Vec::new();
        for item in found.try_iter().map_err(|_| FAILED)? {
            let item = item.map_err(|_| FAILED)?;
            if !is_exact_or_tagged(&item, Base::Str) {
                return Err(Unhandled("value: no_log fallback value that is not a str"));
            }
            let text = item.extract::<String>().map_err(|_| FAILED)?;
            // An exact str: a tagged one is refused below.
            secrets.push(NoLogValue::new(&text, NoLogSource::Plain));
        }
        let mut added = Vec::new();
        for (key, value) in dict.iter() {
            let key: String = key.extract().map_err(|_| FAILED)?;
            if !params.contains_key(key.as_str()) {
                added.push((key, to_value(&value, Mode::Params, 0)?));
            }
        }
        if take_saw_tagged() {
            // The result would hold the tagged object itself, which the Python side only
            // finds for the top level's fallbacks.
            return Err(Unhandled("value: tagged fallback value inside options"));
        }
        SAW_TAGGED.with(|saw| saw.set(saw_tagged));
        Ok((added, secrets))
    }

    fn convert_option(
        &self,
        kind: TypeKind,
        value: &Value,
        why: Unhandled,
        name: &str,
        given_as: &str,
    ) -> Converted {
        const UNTAGGED: Unhandled = Unhandled("value: tagged value for a callable type");
        let TypeKind::Callable(_) = kind else {
            return self.convert(kind, value, why);
        };
        let tagged = self.spec_tagged || SAW_TAGGED.with(|saw| saw.get());
        let Some(params) = self.tagged_params.as_ref().filter(|_| tagged) else {
            return self.convert(kind, value, why);
        };
        match params.get_item(given_as) {
            // ansible-core calls the callable with its deep copy of the caller's object.
            Ok(Some(original)) => {
                let copied = self
                    .py
                    .import("copy")
                    .and_then(|m| m.getattr("deepcopy"))
                    .and_then(|f| f.call1((original,)))
                    .map_err(|_| UNTAGGED)?;
                self.call_checker(kind, copied, Some(name))
            }
            _ if self.spec_tagged => Err(UNTAGGED),
            // A default or fallback from a plain spec: the same plain value ansible-core has.
            _ => self.call_checker(kind, to_python(self.py, value).map_err(|_| UNTAGGED)?, None),
        }
    }

    fn convert(&self, kind: TypeKind, value: &Value, _why: Unhandled) -> Converted {
        const FAILED: Unhandled = Unhandled("value: ansible-core's checker failed unexpectedly");
        if matches!(kind, TypeKind::Callable(_))
            && (self.spec_tagged || SAW_TAGGED.with(|saw| saw.get()))
        {
            return Err(Unhandled("value: tagged value for a callable type"));
        }
        let given = to_python(self.py, value).map_err(|_| FAILED)?;
        self.call_checker(kind, given, None)
    }
}

impl CoreCheckers<'_, '_> {
    /// `kept`: the option whose checked object (holding tagged objects) the result must hold.
    fn call_checker(
        &self,
        kind: TypeKind,
        given: Bound<'_, PyAny>,
        kept: Option<&str>,
    ) -> Converted {
        const FAILED: Unhandled = Unhandled("value: ansible-core's checker failed unexpectedly");
        let checker = match kind {
            TypeKind::Callable(i) => self.callables.get(i).ok_or(FAILED)?.bind(self.py).clone(),
            _ => self.validators.get_item(kind.name()).map_err(|_| FAILED)?,
        };
        match checker.call1((given,)) {
            Ok(converted) => {
                let value = to_value(&converted, Mode::Params, 0)
                    .map_err(|_| Unhandled("value: checker result not plain data"))?;
                if let Some(name) = kept {
                    self.returned
                        .borrow_mut()
                        .push((name.to_owned(), converted.unbind()));
                }
                Ok(Ok(value))
            }
            Err(e)
                if e.is_instance_of::<PyTypeError>(self.py)
                    || e.is_instance_of::<PyValueError>(self.py) =>
            {
                let text = e.value(self.py).str().map_err(|_| FAILED)?;
                Ok(Err(text.to_str().map_err(|_| FAILED)?.to_owned()))
            }
            Err(e) => {
                self.keep_interrupt(e);
                Err(Unhandled("value: checker raised another exception"))
            }
        }
    }
}

fn guard<T>(what: &str, f: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    super::catching_panics(f, || {
        PyRuntimeError::new_err(format!("internal error in native {what}"))
    })
}

/// A compiled spec, or the reason (str) the spec is left to ansible-core.
// One argument per ArgumentSpecValidator attribute, plus what the core needs of the version.
#[allow(clippy::too_many_arguments)]
#[pyfunction]
#[pyo3(signature = (argument_spec, mutually_exclusive, required_together, required_one_of, required_if, required_by, booleans_text, type_validators, no_log_default_strings))]
fn argspec_compile<'py>(
    py: Python<'py>,
    argument_spec: &Bound<'py, PyAny>,
    mutually_exclusive: &Bound<'py, PyAny>,
    required_together: &Bound<'py, PyAny>,
    required_one_of: &Bound<'py, PyAny>,
    required_if: &Bound<'py, PyAny>,
    required_by: &Bound<'py, PyAny>,
    booleans_text: String,
    type_validators: Bound<'py, PyAny>,
    no_log_default_strings: bool,
) -> PyResult<Bound<'py, PyAny>> {
    guard("argspec compile", || {
        let sources = [
            argument_spec,
            mutually_exclusive,
            required_together,
            required_one_of,
            required_if,
            required_by,
        ];
        let flavor = CoreFlavor {
            booleans_text,
            no_log_default_strings,
        };
        match compile_sources(sources, flavor, type_validators) {
            Ok(compiled) => Ok(Bound::new(py, compiled)?.into_any()),
            Err(Unhandled(reason)) => Ok(PyString::new(py, reason).into_any()),
        }
    })
}

/// A spec and its five checks (in `ArgumentSpecValidator` attribute order) compiled.
fn compile_sources(
    sources: [&Bound<'_, PyAny>; 6],
    flavor: CoreFlavor,
    type_validators: Bound<'_, PyAny>,
) -> Result<CompiledArgSpec, Unhandled> {
    let [argument_spec, checks @ ..] = sources;
    let (mut callables, mut names, mut sub_specs) = (Vec::new(), Vec::new(), Vec::new());
    let mut sub_options = Vec::new();
    take_saw_tagged();
    let input = spec_input(
        argument_spec,
        checks,
        &mut callables,
        &mut names,
        &mut sub_specs,
        &mut sub_options,
    )?;
    let spec = CompiledSpec::compile(&input)?;
    let tagged = take_saw_tagged();
    let validators = type_validators.unbind();
    let defaults = default_objects(argument_spec, &names);
    let alias_map = alias_map(argument_spec.py(), &spec, &names)
        .map_err(|_| Unhandled("spec: native compile error"))?;
    let (sub_names, sub_defaults) = sub_options
        .into_iter()
        .map(|o| (o.names.into_boxed_slice(), o.defaults.into_boxed_slice()))
        .unzip();
    let sub_templates = sub_specs.iter().map(|_| Default::default()).collect();
    Ok(CompiledArgSpec {
        sub_names,
        sub_defaults,
        sub_templates,
        spec,
        flavor,
        names,
        validators,
        callables,
        sub_specs,
        tagged,
        defaults,
        alias_map,
        fallback_plan: std::sync::OnceLock::new(),
        uses: std::sync::atomic::AtomicU32::new(0),
        strings: std::sync::OnceLock::new(),
        template: Default::default(),
    })
}

/// `ValidationResult._aliases` (alias -> option name, in spec order), made once per spec and
/// copied for each result.
fn alias_map(py: Python<'_>, spec: &CompiledSpec, names: &[Py<PyString>]) -> PyResult<Py<PyDict>> {
    let map = PyDict::new(py);
    for (alias, index) in &spec.aliases {
        match names.get(*index) {
            Some(name) => map.set_item(alias, name.bind(py))?,
            None => map.set_item(alias, &*spec.options[*index].name)?,
        }
    }
    Ok(map.unbind())
}

/// The spec's own `default` object of each top-level option, by option index.
fn default_objects(
    argument_spec: &Bound<'_, PyAny>,
    names: &[Py<PyString>],
) -> Vec<Option<Py<PyAny>>> {
    let py = argument_spec.py();
    names
        .iter()
        .map(|name| {
            let option = argument_spec.get_item(name.bind(py)).ok()?;
            option
                .cast::<PyDict>()
                .ok()?
                .get_item("default")
                .ok()
                .flatten()
                .map(Bound::unbind)
        })
        .collect()
}

#[pyclass(frozen, module = "ansible_accel._native")]
struct CompiledArgSpec {
    spec: CompiledSpec,
    flavor: CoreFlavor,
    /// Option names: the spec's own key objects.
    names: Vec<Py<PyString>>,
    /// ansible-core's `DEFAULT_TYPE_VALIDATORS`, for the conversions the core delegates.
    validators: Py<PyAny>,
    /// Callables used as type, called for their options' values.
    callables: Vec<Py<PyAny>>,
    /// Sub-spec dicts, for ansible-core's `set_fallbacks` on sub-parameters.
    sub_specs: Vec<Py<PyAny>>,
    /// Each sub-spec dict's own name objects (its keys), by the sub-spec's number.
    sub_names: Vec<Box<[Py<PyString>]>>,
    /// Each sub-spec's `default` objects, by the sub-spec's number and option index.
    sub_defaults: Vec<Box<[Option<Py<PyAny>>]>>,
    /// Each sub-spec's dicts of the shapes last met (see `template::SubTemplateSlot`).
    sub_templates: Box<[template::SubTemplateSlot]>,
    /// Whether the spec holds ansible-core tagged objects (names, defaults, aliases).
    tagged: bool,
    /// The spec's `default` objects of the top-level options, by option index.
    defaults: Vec<Option<Py<PyAny>>>,
    /// alias -> option name, for the results' `_aliases` (a copy each).
    alias_map: Py<PyDict>,
    /// The spec's fallbacks as the fast path's `set_fallbacks` reads them (on first use).
    fallback_plan: std::sync::OnceLock<Option<fallbacks::FallbackPlan>>,
    /// Results built so far (counted up to 2), and the spec's strings by text, made once the
    /// spec is used again (a spec compiled for one call never pays for the table).
    uses: std::sync::atomic::AtomicU32,
    strings: std::sync::OnceLock<reuse::SpecStrings>,
    /// The validated dict of the shape last met twice in a row, all values None (see `template`).
    template: template::TemplateSlot,
}

impl CompiledArgSpec {
    /// The spec's strings by text, from the second result built on.
    fn spec_strings(&self, py: Python<'_>) -> Option<&reuse::SpecStrings> {
        use std::sync::atomic::Ordering;
        if let Some(strings) = self.strings.get() {
            return Some(strings);
        }
        if self.uses.fetch_add(1, Ordering::Relaxed) == 0 {
            return None;
        }
        // Made before the cell is touched: a OnceLock initialiser that runs Python code can let
        // another thread take the GIL (and fork, or wait on the same cell while holding the GIL:
        // a deadlock). Two threads may both make the strings; the first stored wins.
        let made = reuse::SpecStrings::of(py, self);
        Some(self.strings.get_or_init(|| made))
    }

    /// The caller's parameter dict as the core's input.
    fn prepare(&self, dict: &Bound<'_, PyDict>) -> Result<Params, Unhandled> {
        self.prepare_with(dict, &mut None)
    }

    /// `prepare` for the fast path, whose result is built from the outcome by `reuse`: lists
    /// and dicts of options that keep them (`OptionSpec::keeps`) are kept aside, as copies.
    fn prepare_keeping(&self, dict: &Bound<'_, PyDict>) -> Result<(Params, KeptAside), Unhandled> {
        let mut keep = Some(KeptAside::default());
        let params = self.prepare_with(dict, &mut keep)?;
        Ok((params, keep.unwrap_or_default()))
    }

    fn prepare_with(
        &self,
        dict: &Bound<'_, PyDict>,
        keep: &mut Option<KeptAside>,
    ) -> Result<Params, Unhandled> {
        // With sub-options, a dict or list given twice is refused (found while converting).
        let mut seen = match self.spec.has_sub_options() {
            true => Some(SeenContainers::default()),
            false => None,
        };
        // Room for every option: validation adds the ones not given.
        to_params_with_room(
            dict,
            Mode::Params,
            1,
            self.spec.options.len(),
            Some(&self.spec),
            &mut seen,
            keep,
        )
    }

    /// The core's validation of `params` (made from `parameters`), ansible-core's checkers
    /// standing by; a KeyboardInterrupt or the like from one of them is raised.
    /// Also what callable types returned for options given tagged (see `CoreCheckers`).
    /// `leave_none_tail`: the caller adds `Outcome::none_tail` to the result itself.
    #[allow(clippy::type_complexity)]
    fn run(
        &self,
        py: Python<'_>,
        parameters: &Bound<'_, PyAny>,
        params: Params,
        leave_none_tail: bool,
    ) -> PyResult<(Result<Outcome, Unhandled>, Vec<(String, Py<PyAny>)>)> {
        let checkers = CoreCheckers {
            py,
            validators: self.validators.bind(py).clone(),
            callables: &self.callables,
            sub_specs: &self.sub_specs,
            interrupt: std::cell::RefCell::new(None),
            tagged_params: parameters
                .cast::<PyDict>()
                .ok()
                .filter(|_| !self.callables.is_empty())
                .cloned(),
            spec_tagged: self.tagged,
            returned: Default::default(),
        };
        let cx = Context {
            flavor: &self.flavor,
            delegate: &checkers,
        };
        let outcome = match leave_none_tail {
            true => self.spec.validate_leaving_none_tail(params, &cx),
            false => self.spec.validate(params, &cx),
        };
        match checkers.interrupt.take() {
            Some(interrupt) => Err(interrupt),
            None => Ok((outcome, checkers.returned.take())),
        }
    }
}

#[pymethods]
impl CompiledArgSpec {
    /// `(validated, [(error class name, message)], [(unsupported names or paths, supported
    /// names, [(alias, option)])], [(no_log value, where its object is: "given", "default"
    /// or "plain")], [(option, alias)], [deprecation dict],
    /// [message to warn()], whether tagged objects were met, [(option, what its callable type
    /// returned for a tagged value)])`, or the reason (str) this call is left to ansible-core.
    fn validate<'py>(
        &self,
        py: Python<'py>,
        parameters: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        guard("argspec validate", || {
            take_saw_tagged();
            let params = match is_exact_or_tagged(parameters, Base::Dict) {
                true => parameters.cast::<PyDict>().ok(),
                false => None,
            };
            let outcome = match params {
                Some(dict) => self.prepare(dict),
                None => Err(Unhandled("value: parameters not a dict")),
            };
            let (outcome, returned) = match outcome {
                Ok(params) => self.run(py, parameters, params, false)?,
                Err(reason) => (Err(reason), Vec::new()),
            };
            let out = match outcome {
                Ok(out) => out,
                Err(Unhandled(reason)) => return Ok(PyString::new(py, reason).into_any()),
            };
            let errors: Vec<(&str, &str)> = out
                .errors
                .iter()
                .map(|(k, m)| (k.class_name(), m.as_str()))
                .collect();
            let deprecations = deprecations_to_python(py, &out.deprecations)?;
            let unsupported = PyList::empty(py);
            for group in &out.unsupported {
                let paths = PyList::empty(py);
                for path in &group.paths {
                    match path.as_slice() {
                        [name] => paths.append(name)?,
                        _ => paths.append(PyTuple::new(py, path)?)?,
                    }
                }
                unsupported.append((paths, &group.supported, &group.aliases))?;
            }
            let no_log_values: Vec<(&str, &str)> = out
                .no_log_values
                .iter()
                .map(|v| (v.text.as_str(), v.source.name()))
                .collect();
            let tuple = (
                validated_to_python(py, &self.spec, &self.names, &out.params)?,
                errors,
                unsupported,
                no_log_values,
                out.alias_warnings,
                deprecations,
                out.warnings_to_emit,
                take_saw_tagged(),
                returned,
            );
            Ok(tuple.into_pyobject(py)?.into_any())
        })
    }

    /// alias -> option name, in spec order (`ValidationResult._aliases`).
    fn aliases(&self) -> Vec<(String, String)> {
        self.spec
            .aliases
            .iter()
            .map(|(alias, index)| (alias.clone(), self.spec.options[*index].name.to_string()))
            .collect()
    }

    /// Whether the spec holds tagged objects the result must carry.
    fn tagged(&self) -> bool {
        self.tagged
    }

    /// Whether a callable is used as a type somewhere in the spec.
    fn has_callables(&self) -> bool {
        !self.callables.is_empty()
    }

    /// Whether ansible-core's `set_fallbacks` must run on the parameters first.
    fn has_fallbacks(&self) -> bool {
        self.spec.has_fallbacks()
    }

    /// Option names in spec order.
    fn option_names<'py>(&self, py: Python<'py>) -> Vec<Bound<'py, PyString>> {
        self.names.iter().map(|n| n.bind(py).clone()).collect()
    }
}
