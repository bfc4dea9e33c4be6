//! A Python argument spec and its checks into the engine's `SpecInput`, compiled into a
//! `CompiledArgSpec`; a spec the engine cannot take exactly is answered with a reason str.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

use super::{guard, CompiledArgSpec};
use crate::argspec::{CompiledSpec, CoreFlavor, SpecInput, Unhandled, OPTION_KEYS};
use crate::py::answer::Answer;
use crate::py::convert::containers::MAX_DEPTH;
use crate::py::convert::tagged::{is_exact_or_tagged, take_saw_tagged, Base};
use crate::py::convert::values::{to_value, Mode};

/// `getattr(f, '__name__', str(type(f)))`, as ansible-core names a callable type.
pub(super) fn callable_name(f: &Bound<'_, PyAny>) -> Result<String, Unhandled> {
    const REASON: Unhandled = Unhandled::SpecCallableTypeUnnamed;
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

pub(super) fn spec_input(
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

/// Python objects a compiled spec keeps: callables used as type, sub-spec dicts.
pub(super) struct Kept<'a> {
    callables: &'a mut Vec<Py<PyAny>>,
    sub_specs: &'a mut Vec<Py<PyAny>>,
    /// Each sub-spec's option name objects and `default` objects, by the sub-spec's number.
    sub_options: Vec<SubObjects>,
}

/// A sub-spec's own objects, by option index: its keys and its options' `default` objects.
#[derive(Default)]
pub(super) struct SubObjects {
    names: Vec<Py<PyString>>,
    defaults: Vec<Option<Py<PyAny>>>,
}

/// The options of a spec (or of an `options` sub-spec) into `input`.  Callables used as type
/// are kept in `callables` and their names in the top input, indexed alike at every depth.
pub(super) fn options_input(
    spec: &Bound<'_, PyAny>,
    input: &mut SpecInput,
    kept: &mut Kept<'_>,
    mut names: Option<&mut Vec<Py<PyString>>>,
    mut defaults: Option<&mut Vec<Option<Py<PyAny>>>>,
    depth: usize,
) -> Result<(), Unhandled> {
    if depth > MAX_DEPTH {
        return Err(Unhandled::SpecOptionsNestedTooDeeply);
    }
    if !is_exact_or_tagged(spec, Base::Dict) {
        return Err(Unhandled::SpecNotDict);
    }
    let spec = spec.cast::<PyDict>().map_err(|_| Unhandled::SpecNotDict)?;
    for (name_object, option) in spec.iter() {
        if !is_exact_or_tagged(&name_object, Base::Str) {
            return Err(Unhandled::SpecOptionNameNotStr);
        }
        let name_object = name_object
            .cast::<PyString>()
            .map_err(|_| Unhandled::SpecOptionNameNotStr)?;
        let name: String = name_object
            .extract()
            .map_err(|_| Unhandled::SpecOptionNameSurrogates)?;
        if let Some(names) = names.as_deref_mut() {
            names.push(name_object.clone().unbind());
        }
        if !is_exact_or_tagged(&option, Base::Dict) {
            return Err(Unhandled::SpecOptionNotDict);
        }
        let option = option
            .cast::<PyDict>()
            .map_err(|_| Unhandled::SpecOptionNotDict)?;
        if let Some(defaults) = defaults.as_deref_mut() {
            defaults.push(None);
        }
        let default = defaults.as_deref_mut().and_then(|d| d.last_mut());
        let fields = option_fields(option, input, kept, default, depth)?;
        input.options.push((name, fields));
    }
    Ok(())
}

/// The fields of the option that comes next in `input` (its `options` sub-spec compiled into
/// the input below it); its `default` object kept in `default` when given.
fn option_fields(
    option: &Bound<'_, PyDict>,
    input: &mut SpecInput,
    kept: &mut Kept<'_>,
    mut default: Option<&mut Option<Py<PyAny>>>,
    depth: usize,
) -> Result<crate::argspec::OptionInput, Unhandled> {
    let at = input.options.len();
    let mut fields = crate::argspec::OptionInput::default();
    for (key, value) in option.iter() {
        let key: String = key.extract().map_err(|_| Unhandled::SpecOptionKeyNotStr)?;
        if key == "default" {
            if let Some(slot) = default.as_deref_mut() {
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
            sub_spec_input(&value, at, input, kept, depth)?;
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
    Ok(fields)
}

/// The `options` sub-spec of option `at` into an input of its own below `input`, its dict
/// and its objects kept under the next sub-spec number.
fn sub_spec_input(
    value: &Bound<'_, PyAny>,
    at: usize,
    input: &mut SpecInput,
    kept: &mut Kept<'_>,
    depth: usize,
) -> Result<(), Unhandled> {
    let number = kept.sub_specs.len();
    let mut sub = SpecInput {
        source: Some(number),
        ..SpecInput::default()
    };
    kept.sub_specs.push(value.clone().unbind());
    kept.sub_options.push(SubObjects::default());
    let mut own = SubObjects::default();
    options_input(
        value,
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
    Ok(())
}

/// A compiled spec, or the reason (str) the spec is left to ansible-core.
// One argument per ArgumentSpecValidator attribute, plus what the core needs of the version.
#[allow(clippy::too_many_arguments)]
#[pyfunction]
#[pyo3(signature = (argument_spec, mutually_exclusive, required_together, required_one_of, required_if, required_by, booleans_text, type_validators, no_log_default_strings))]
pub(super) fn argspec_compile<'py>(
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
        let compiled = compile_object(py, sources, flavor, type_validators)?;
        compiled_or_reason(py, compiled)
    })
}

/// A compiled spec as the Python object the glue hands out, or the reason the spec is left
/// to ansible-core.
pub(super) type Compiled = Result<Py<CompiledArgSpec>, Unhandled>;

/// `compile_sources`, the compiled spec made a Python object.
pub(super) fn compile_object(
    py: Python<'_>,
    sources: [&Bound<'_, PyAny>; 6],
    flavor: CoreFlavor,
    type_validators: Bound<'_, PyAny>,
) -> PyResult<Compiled> {
    Ok(match compile_sources(sources, flavor, type_validators) {
        Ok(compiled) => Ok(Py::new(py, compiled)?),
        Err(why) => Err(why),
    })
}

/// What Python is answered for a spec: its compiled form, or the reason (str) it is left to
/// ansible-core.
pub(super) fn compiled_or_reason(py: Python<'_>, compiled: Compiled) -> PyResult<Bound<'_, PyAny>> {
    match compiled {
        Ok(compiled) => Answer::Done(compiled.into_bound(py).into_any()),
        Err(why) => Answer::Declined(Some(why)),
    }
    .into_python(py)
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
    let alias_map =
        alias_map(argument_spec.py(), &spec, &names).map_err(|_| Unhandled::SpecCompileError)?;
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
pub(super) fn alias_map(
    py: Python<'_>,
    spec: &CompiledSpec,
    names: &[Py<PyString>],
) -> PyResult<Py<PyDict>> {
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
pub(super) fn default_objects(
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
