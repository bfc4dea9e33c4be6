//! Glue for the argspec engine: Python specs and parameters in (plain builtin data only),
//! the core's outcome out as plain tuples; `python/ansible_accel/argspec.py` builds the
//! `ValidationResult`.  A value the core cannot take exactly is answered with a reason str.

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};

use super::answer::Answer;
use super::convert::containers::SeenContainers;
use super::convert::kept::{self, KeptAside};
use super::convert::tagged::{self, is_exact_or_tagged, take_saw_tagged, Base};
use super::convert::values::{
    deprecations_to_python, shares_containers, to_params_with_room, to_python, to_value,
    validated_to_python, Mode,
};
use super::cpython::layout;
use crate::argspec::{CompiledSpec, Context, CoreFlavor, Outcome, Params, Unhandled};
use checkers::CoreCheckers;
use compile::argspec_compile;

mod checkers;
mod compile;
mod fallbacks;
mod fast;
mod module_attrs;
mod reuse;
mod snapshot;
mod template;

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(argspec_compile, m)?)?;
    m.add_function(wrap_pyfunction!(tagged::argspec_tagged_types, m)?)?;
    m.add_function(wrap_pyfunction!(argspec_quick_spec_check, m)?)?;
    m.add_function(wrap_pyfunction!(kept::argspec_kept_count, m)?)?;
    m.add_class::<CompiledArgSpec>()?;
    fast::register(m)?;
    Ok(())
}

/// Whether a reused spec is proven unchanged by the dicts' version tags and the lists' items
/// read in place rather than by a walk (see `snapshot`). Asking runs both layout probes once per
/// process: the controller asks before its first fork so that workers inherit the answers, and
/// the tests ask to know which way a changed spec is caught.
#[pyfunction]
fn argspec_quick_spec_check(py: Python<'_>) -> bool {
    layout::version_tags_usable(py) && layout::list_layout_usable(py)
}

fn guard<T>(what: &str, f: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    super::catching_panics(f, || {
        PyRuntimeError::new_err(format!("internal error in native {what}"))
    })
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
                None => Err(Unhandled::ParametersNotDict),
            };
            let (outcome, returned) = match outcome {
                Ok(params) => self.run(py, parameters, params, false)?,
                Err(reason) => (Err(reason), Vec::new()),
            };
            let out = match outcome {
                Ok(out) => out,
                Err(why) => return Answer::Declined(Some(why)).into_python(py),
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
