//! The whole of `ArgumentSpecValidator.validate` for the common call, in one native call:
//! the compiled spec found by the identity of the validator's spec and checks (and a
//! [`Snapshot`] proving they were not changed in place), ansible-core's `set_fallbacks` run
//! first when the spec has fallbacks, the core's validation, and a new `ValidationResult`
//! (made by its type's `tp_new`) with the attributes its `__init__` gives, in that order: a
//! list, whose items the caller (`argspec.py`) sets on the result as `__init__` would
//! (Python's own attribute stores cost less than the C API's generic setattr).
//!
//! A call it does not take (tagged controller data, a replaced type checker, a spec the core
//! does not compile) is answered `None` before any user code ran, and
//! `python/ansible_accel/argspec.py` does it the long way.  A call the core gives up on is
//! answered `(reason, parameters as checked, no_log values of fallbacks)`: the parameters
//! themselves when no fallback ran, else the copy `set_fallbacks` filled, which ansible-core's
//! validate then replays rather than run the fallbacks again (`(reason, None, exception)`
//! when `set_fallbacks` raised).
//!
//! One file past the project's usual length on purpose: one call's steps, from finding the
//! compiled spec to the result's attributes, read in the order they run.

use std::ops::ControlFlow;
use std::sync::atomic::{AtomicU64, Ordering};

use pyo3::exceptions::PyException;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PySet, PyString, PyTuple, PyType};

use super::compile::{compile_object, compiled_or_reason, Compiled};
use super::fallbacks::{self, FallbackContext, Ran};
use super::module_attrs::ModuleAttr;
use super::snapshot::Snapshot;
use super::{
    deprecations_to_python, guard, shares_containers, take_saw_tagged, to_value, CompiledArgSpec,
    Mode,
};
use crate::argspec::{CoreFlavor, ErrorKind, Outcome, Params, Unhandled};
use crate::py::cpython::slots::{self, new_instance_with};
use crate::py::gil_cell::GilCell;

pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<ArgspecFastPath>()?;
    m.add_function(wrap_pyfunction!(argspec_take_native_count, m)?)?;
    Ok(())
}

/// Calls answered natively by [`ArgspecFastPath::validate`] since the last take: counted here
/// (no Python call per validation) and folded into `status()` by `_counters`.
static NATIVE_CALLS: AtomicU64 = AtomicU64::new(0);

/// The calls answered natively since the last call (and zero again).
#[pyfunction]
fn argspec_take_native_count() -> u64 {
    NATIVE_CALLS.swap(0, Ordering::Relaxed)
}

/// More specs than this alive at once and the cache starts again.  A process meets a few
/// specs (a module one, a worker a handful); each entry holds its spec, the snapshot and the
/// compiled form (tens of KB for a large module spec), so a big cache is only memory that a
/// stream of new specs keeps faulting in.
const CACHE_LIMIT: usize = 64;

/// The attributes of `ArgumentSpecValidator` a validation reads, in compile order.
fn source_names(py: Python<'_>) -> [&Bound<'_, PyString>; 6] {
    [
        intern!(py, "argument_spec"),
        intern!(py, "_mutually_exclusive"),
        intern!(py, "_required_together"),
        intern!(py, "_required_one_of"),
        intern!(py, "_required_if"),
        intern!(py, "_required_by"),
    ]
}

/// How [`ArgspecFastPath::validate`] answers (the module text says what Python receives).
type Answer<'py> = crate::py::answer::Answer<'py, Unhandled>;

/// A validator's compiled spec and its `argument_spec` object, or why it is not compiled.
type Found<'py> = Result<(Py<CompiledArgSpec>, Bound<'py, PyAny>), Unhandled>;

struct Entry {
    snapshot: Snapshot,
    compiled: Compiled,
}

/// One per installed `validate`: what it needs of the running ansible-core.
#[pyclass(frozen, module = "ansible_accel._native")]
pub(super) struct ArgspecFastPath {
    result_class: Py<PyType>,
    multiple: Py<PyAny>,
    /// `AnsibleValidationErrorMultiple.__init__` when making one without it was found to
    /// give the same object (see `plain_multiple`): while it is still the class's, results
    /// get their error list that way.
    multiple_init: Option<Py<PyAny>>,
    /// Errors made and appended without Python calls (see `PlainErrors`).
    plain_errors: Option<PlainErrors>,
    errors_module: Py<PyAny>,
    parameters_module: Py<PyAny>,
    /// `DEFAULT_TYPE_VALIDATORS` as it was at install, and a copy of its items then.
    validators_seen: Py<PyAny>,
    validators_then: Py<PyAny>,
    /// The version tag `validators_seen` had when last found equal to `validators_then`
    /// (0: none yet; tags start above 0 once a dict was changed).
    validators_tag: AtomicU64,
    /// 2.22's process-wide secret registry (`arg_spec._secrets`), when there is one.
    secrets: Option<Py<PyAny>>,
    /// What `register_secrets` is while registering no values does nothing (2.22).
    quiet_registration: Option<QuietRegistration>,
    flavor: CoreFlavor,
    /// Whether `ValidationResult` objects can be made attribute by attribute.
    direct: bool,
    cache: GilCell<rustc_hash::FxHashMap<[usize; 6], Entry>>,
    fallbacks: FallbackContext,
    /// The `arg_spec.set_fallbacks` whose work the native loop may do (the accelerator's
    /// replay wrapper around ansible-core's own): any other is called.
    trusted_set_fallbacks: GilCell<Option<Py<PyAny>>>,
    /// Module attributes read on every call, kept while their module is unchanged.
    attr_secret_masker: ModuleAttr,
    attr_register_secrets: ModuleAttr,
}

#[pymethods]
impl ArgspecFastPath {
    #[new]
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (result_class, multiple, errors_module, parameters_module, validators_then, secrets, booleans_text, no_log_default_strings, direct, fallback_no_log_strings))]
    fn new(
        py: Python<'_>,
        result_class: Py<PyType>,
        multiple: Py<PyAny>,
        errors_module: Py<PyAny>,
        parameters_module: Py<PyAny>,
        validators_then: Py<PyAny>,
        secrets: Option<Py<PyAny>>,
        booleans_text: String,
        no_log_default_strings: bool,
        direct: bool,
        fallback_no_log_strings: bool,
    ) -> PyResult<Self> {
        let parameters = parameters_module.bind(py);
        let validators_seen = parameters
            .getattr(intern!(py, "DEFAULT_TYPE_VALIDATORS"))?
            .unbind();
        let os_module = py.import("os")?;
        let fallbacks = FallbackContext {
            env_fallback: parameters.getattr("env_fallback")?.unbind(),
            not_found: parameters.getattr("AnsibleFallbackNotFound")?.unbind(),
            datastructure_names: match fallback_no_log_strings {
                true => Some(parameters.getattr("_return_datastructure_name")?.unbind()),
                false => None,
            },
            environ_type: os_module.getattr("_Environ")?.unbind(),
            os_module: os_module.into_any().unbind(),
            encoded_names: Default::default(),
            environ_attr: Default::default(),
        };
        let multiple_init = plain_multiple(multiple.bind(py), errors_module.bind(py))?;
        let plain_errors = plain_errors(multiple.bind(py), errors_module.bind(py))
            .ok()
            .flatten();
        let quiet_registration = match &secrets {
            Some(secrets) => quiet_registration(secrets.bind(py)).ok().flatten(),
            None => None,
        };
        Ok(ArgspecFastPath {
            result_class,
            multiple,
            multiple_init,
            plain_errors,
            errors_module,
            parameters_module,
            validators_seen,
            validators_then,
            validators_tag: AtomicU64::new(0),
            secrets,
            quiet_registration,
            flavor: CoreFlavor {
                booleans_text,
                no_log_default_strings,
            },
            direct,
            cache: GilCell::new(Default::default()),
            fallbacks,
            trusted_set_fallbacks: GilCell::new(None),
            attr_secret_masker: Default::default(),
            attr_register_secrets: Default::default(),
        })
    }

    /// `set_fallbacks` (the accelerator's wrapper of ansible-core's own, as installed in
    /// `arg_spec`) whose work the native loop may do while it is the one installed.
    fn trust_set_fallbacks(&self, py: Python<'_>, function: Py<PyAny>) {
        // The one it replaces is dropped after the borrow ends.
        let _replaced = match self.trusted_set_fallbacks.get_mut(py) {
            Some(mut trusted) => trusted.replace(function),
            None => Some(function),
        };
    }

    /// The compiled spec of `validator` (compiled now if its spec and checks are new or were
    /// changed), or the reason (str) it is left to ansible-core.
    fn compiled<'py>(
        &self,
        py: Python<'py>,
        validator: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        guard("argspec compile", || {
            compiled_or_reason(py, self.lookup(validator)?)
        })
    }

    /// `validator.validate(parameters)` answered natively: a new result and its attributes (a
    /// list; see the module text), `None` (not taken: nothing ran), or a tuple (given up after
    /// fallbacks ran).
    /// The caller has read the validator's spec and checks (`sources`, in `source_names`
    /// order), `parameters.DEFAULT_TYPE_VALIDATORS` and `arg_spec.set_fallbacks` just before:
    /// Python reads its own attributes for less than a native `getattr` costs.
    #[pyo3(signature = (parameters, argument_spec, mutually_exclusive, required_together, required_one_of, required_if, required_by, validators, set_fallbacks, /))]
    #[allow(clippy::too_many_arguments)]
    fn validate<'py>(
        &self,
        py: Python<'py>,
        parameters: &Bound<'py, PyAny>,
        argument_spec: Bound<'py, PyAny>,
        mutually_exclusive: Bound<'py, PyAny>,
        required_together: Bound<'py, PyAny>,
        required_one_of: Bound<'py, PyAny>,
        required_if: Bound<'py, PyAny>,
        required_by: Bound<'py, PyAny>,
        validators: &Bound<'py, PyAny>,
        set_fallbacks: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let sources = [
            argument_spec,
            mutually_exclusive,
            required_together,
            required_one_of,
            required_if,
            required_by,
        ];
        guard("argspec validate", || {
            self.validate_call(py, sources, parameters, validators, set_fallbacks)?
                .into_python(py)
        })
    }
}

impl ArgspecFastPath {
    fn lookup(&self, validator: &Bound<'_, PyAny>) -> PyResult<Compiled> {
        Ok(self
            .lookup_with_spec(validator)?
            .map(|(compiled, _)| compiled))
    }

    /// `lookup`, and the validator's `argument_spec` as read for it.
    fn lookup_with_spec<'py>(&self, validator: &Bound<'py, PyAny>) -> PyResult<Found<'py>> {
        let py = validator.py();
        // Arrays, not vectors: this runs on every call.
        let mut slots: [Option<Bound<'_, PyAny>>; 6] = Default::default();
        for (slot, name) in slots.iter_mut().zip(source_names(py)) {
            match validator.getattr(name) {
                Ok(value) => *slot = Some(value),
                Err(e) if e.is_instance_of::<pyo3::exceptions::PyAttributeError>(py) => {
                    return Ok(Err(Unhandled::SpecUnusualValidator))
                }
                Err(e) => return Err(e),
            }
        }
        let [Some(a), Some(b), Some(c), Some(d), Some(e), Some(f)] = slots else {
            return Ok(Err(Unhandled::SpecUnusualValidator));
        };
        self.lookup_sources([a, b, c, d, e, f])
    }

    /// The compiled spec for a validator's spec and checks as read (`source_names` order).
    fn lookup_sources<'py>(&self, found: [Bound<'py, PyAny>; 6]) -> PyResult<Found<'py>> {
        let py = found[0].py();
        let roots: [&Bound<'_, PyAny>; 6] = std::array::from_fn(|i| &found[i]);
        let key: [usize; 6] = std::array::from_fn(|i| found[i].as_ptr() as usize);
        if let Some(cache) = self.cache.get(py) {
            if let Some(entry) = cache.get(&key) {
                if entry.snapshot.matches(&roots) {
                    return Ok(entry
                        .compiled
                        .as_ref()
                        .map(|c| (c.clone_ref(py), found[0].clone()))
                        .map_err(|r| *r));
                }
            }
        }
        let Some(snapshot) = Snapshot::take(py, &roots) else {
            return Ok(Err(Unhandled::SpecNestedTooDeeply));
        };
        let validators = self.validators_seen.bind(py).clone();
        let compiled = compile_object(py, roots, self.flavor.clone(), validators)?;
        let answer = compiled
            .as_ref()
            .map(|c| (c.clone_ref(py), found[0].clone()))
            .map_err(|r| *r);
        // Entries leaving the cache are dropped after the borrow ends: dropping Python objects
        // can run Python code, which may come back here (or hand the GIL to a thread that does).
        let (_evicted, _replaced) = match self.cache.get_mut(py) {
            Some(mut cache) => {
                let evicted = if cache.len() >= CACHE_LIMIT {
                    std::mem::take(&mut *cache)
                } else {
                    Default::default()
                };
                let replaced = cache.insert(key, Entry { snapshot, compiled });
                (evicted, replaced)
            }
            None => (Default::default(), None),
        };
        Ok(answer)
    }

    /// Whether `DEFAULT_TYPE_VALIDATORS` is still the dict, with the same checkers, that the
    /// compiled specs convert for (compared only when its version tag moved since the last
    /// time it was found the same).
    fn validators_unchanged(&self, now: &Bound<'_, PyAny>) -> PyResult<bool> {
        let py = now.py();
        if !now.is(self.validators_seen.bind(py)) {
            return Ok(false);
        }
        let tag = now
            .cast::<PyDict>()
            .ok()
            .and_then(crate::py::cpython::layout::dict_version);
        if tag.is_some_and(|tag| tag != 0 && tag == self.validators_tag.load(Ordering::Relaxed)) {
            return Ok(true);
        }
        let same = now.eq(self.validators_then.bind(py))?;
        if let (true, Some(tag)) = (same, tag) {
            self.validators_tag.store(tag, Ordering::Relaxed);
        }
        Ok(same)
    }

    fn validate_call<'py>(
        &self,
        py: Python<'py>,
        sources: [Bound<'py, PyAny>; 6],
        parameters: &Bound<'py, PyAny>,
        validators: &Bound<'py, PyAny>,
        set_fallbacks: &Bound<'py, PyAny>,
    ) -> PyResult<Answer<'py>> {
        let Ok(dict) = parameters.cast_exact::<PyDict>() else {
            return Ok(Answer::Declined(None));
        };
        if !self.direct || !self.validators_unchanged(validators)? {
            return Ok(Answer::Declined(None));
        }
        let (compiled, argument_spec) = match self.lookup_sources(sources)? {
            Ok((compiled, spec)) => (compiled.into_bound(py), spec),
            Err(_) => return Ok(Answer::Declined(None)),
        };
        let compiled = compiled.get();
        if compiled.tagged {
            return Ok(Answer::Declined(None));
        }
        take_saw_tagged();
        let (mut params, kept) = match compiled.prepare_keeping(dict) {
            Ok(prepared) if !take_saw_tagged() => prepared,
            _ => return Ok(Answer::Declined(None)),
        };
        // ansible-core's own set_fallbacks first, as its validate() does, on a copy (made
        // only when a fallback set something: else the caller's dict is read in its place).
        let mut ran = None;
        if compiled.spec.has_fallbacks() {
            // The validator's spec as `lookup` read it (no Python code ran since).
            let spec = argument_spec;
            let step = self.run_fallbacks(compiled, dict, spec, set_fallbacks, &mut params)?;
            match step {
                ControlFlow::Continue(done) => ran = Some(done),
                ControlFlow::Break(answer) => return Ok(answer),
            }
        }
        self.validate_prepared(compiled, parameters, dict, params, ran, &kept.0)
    }

    /// ansible-core's `set_fallbacks` (natively while it is the trusted one), and what it
    /// added taken into `params`; broken off with the answer when a fallback raised or the
    /// core cannot take what the fallbacks gave.
    fn run_fallbacks<'py>(
        &self,
        compiled: &CompiledArgSpec,
        dict: &Bound<'py, PyDict>,
        spec: Bound<'py, PyAny>,
        set_fallbacks: &Bound<'py, PyAny>,
        params: &mut Params,
    ) -> PyResult<ControlFlow<Answer<'py>, FallbacksRan<'py>>> {
        let py = dict.py();
        let trusted = self.trusted_set_fallbacks.get(py).is_some_and(|trusted| {
            trusted
                .as_ref()
                .is_some_and(|t| t.bind(py).is(set_fallbacks))
        });
        let mut added = Vec::new();
        let native = match spec.cast_exact::<PyDict>() {
            Ok(spec) if trusted => {
                fallbacks::set_fallbacks(&self.fallbacks, compiled, spec, params, &mut added)?
            }
            _ => Ran::NotNative,
        };
        let given = match (&native, added.is_empty()) {
            (Ran::Done(_), true) => dict.clone(),
            _ => {
                let given = dict.copy()?;
                for (name, value) in &added {
                    given.set_item(name, value)?;
                }
                given
            }
        };
        // The native loop only adds keys (at the end of the copy): the first ones are the
        // caller's, not looked up again below.
        let kept = match native {
            Ran::Done(_) => dict.len(),
            _ => 0,
        };
        // The no_log values the fallbacks found (`None`: none, no set made).
        let found = match native {
            Ran::Done(found) => Ok(found.map(Bound::into_any)),
            Ran::Raised(e) => Err(e),
            Ran::NotNative => set_fallbacks.call1((&spec, &given)).map(Some),
        };
        let found = match found {
            Ok(found) => found,
            Err(e) if e.is_instance_of::<PyException>(py) => {
                // ansible-core's validate meets the exception again.
                let handed = [py.None().into_bound(py), e.value(py).clone().into_any()];
                let answer = Answer::GaveUp(Unhandled::FallbackRaised, handed);
                return Ok(ControlFlow::Break(answer));
            }
            Err(e) => return Err(e),
        };
        let ran = FallbacksRan { given, found };
        // After the native loop, what follows the caller's keys is what it added, in
        // order (it adds only options not given): read from its list rather than by
        // walking past the caller's entries.
        let after_kept: Vec<(Bound<'py, PyAny>, Bound<'py, PyAny>)> = match kept {
            0 => ran.given.iter().collect(),
            _ => added.into_iter().map(|(k, v)| (k.into_any(), v)).collect(),
        };
        let taken = take_added(compiled, dict, &ran.given, after_kept, kept == 0, params)?;
        if let Err(reason) = taken {
            return Ok(ControlFlow::Break(ran.gave_up(dict, reason)?));
        }
        Ok(ControlFlow::Continue(ran))
    }

    /// The core's validation of `params` (the fallbacks' results in them when `ran`), and
    /// the answer: the new result's attributes, or why the core gave up.
    fn validate_prepared<'py>(
        &self,
        compiled: &CompiledArgSpec,
        parameters: &Bound<'py, PyAny>,
        dict: &Bound<'py, PyDict>,
        params: Params,
        ran: Option<FallbacksRan<'py>>,
        kept: &[Py<PyAny>],
    ) -> PyResult<Answer<'py>> {
        let py = dict.py();
        let checked = ran
            .as_ref()
            .map_or(parameters.clone(), |ran| ran.given.clone().into_any());
        let outcome = match compiled.run(py, &checked, params, true)?.0 {
            Ok(out) if !take_saw_tagged() => Ok(out),
            Ok(_) => Err(Unhandled::TaggedFromChecker),
            Err(reason) => Err(reason),
        };
        let out = match (outcome, &ran) {
            (Ok(out), _) => out,
            // User code (a callable as type) may have run: ansible-core's validate is given
            // the call directly rather than the long way trying the core again.
            (Err(why), None) => {
                let handed = [parameters.clone(), PyTuple::empty(py).into_any()];
                return Ok(Answer::GaveUp(why, handed));
            }
            (Err(why), Some(ran)) => return ran.gave_up(dict, why),
        };
        let given = ran.as_ref().map_or(dict, |ran| &ran.given);
        let result = self.build_result(
            py,
            compiled,
            &out,
            given,
            ran.as_ref().and_then(|ran| ran.found.as_ref()),
            kept,
        )?;
        NATIVE_CALLS.fetch_add(1, Ordering::Relaxed);
        Ok(Answer::Done(result))
    }

    /// The attributes of the `ValidationResult` holding the core's outcome, with the side
    /// effects ansible-core's validate has: `warn()` for sub-option messages, 2.22's secret
    /// registration.
    fn build_result<'py>(
        &self,
        py: Python<'py>,
        compiled: &CompiledArgSpec,
        out: &Outcome,
        given: &Bound<'py, PyDict>,
        fallback_no_log: Option<&Bound<'py, PyAny>>,
        kept: &[Py<PyAny>],
    ) -> PyResult<Bound<'py, PyAny>> {
        let (unsupported, supported) = unsupported_parameters(py, out)?;
        let no_log = PySet::new(py, out.no_log_values.iter().map(|v| &v.text))?;
        let warnings = alias_warnings(py, out)?;
        let deprecations = deprecations_to_python(py, &out.deprecations)?;
        let aliases = compiled.alias_map.bind(py).copy()?;
        let validated = super::reuse::validated(py, compiled, given, out, kept)?;
        let result = new_instance(self.result_class.bind(py))?;
        let errors = self.new_multiple(py)?;
        // A new result and its attributes in the order ValidationResult.__init__ sets them:
        // the caller (argspec.py's validate) sets them on it, as __init__ would (Python's own
        // attribute stores cost less than the C API's generic setattr).
        let fields = PyList::new(
            py,
            [
                &result,
                no_log.as_any(),
                unsupported.as_any(),
                supported.as_any(),
                validated.as_any(),
                deprecations.as_any(),
                warnings.as_any(),
                aliases.as_any(),
                &errors,
            ],
        )?;
        self.append_errors(&errors, out, &unsupported)?;
        self.report(py, out, &no_log, fallback_no_log)?;
        Ok(fields.into_any())
    }

    /// The core's errors, then the unsupported parameters' error, appended to `errors` as
    /// ansible-core's validate appends them.
    fn append_errors(
        &self,
        errors: &Bound<'_, PyAny>,
        out: &Outcome,
        unsupported: &Bound<'_, PySet>,
    ) -> PyResult<()> {
        let py = errors.py();
        let errors_module = self.errors_module.bind(py);
        for (kind, message) in &out.errors {
            let cls = errors_module.getattr(kind.class_name())?;
            self.append_error(errors, &cls, message)?;
        }
        if !out.unsupported.is_empty() {
            let message = unsupported_message(unsupported, out)?;
            let cls = errors_module.getattr(intern!(py, "UnsupportedError"))?;
            self.append_error(errors, &cls, &message)?;
        }
        Ok(())
    }

    /// What ansible-core's validate does besides filling the result: the fallbacks' no_log
    /// values added to `no_log`, `warn()` for sub-option messages, 2.22's secret registration.
    fn report<'py>(
        &self,
        py: Python<'py>,
        out: &Outcome,
        no_log: &Bound<'py, PySet>,
        fallback_no_log: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<()> {
        if let Some(found) = fallback_no_log {
            // Updating with an empty set changes nothing: not called.
            if !found.cast_exact::<PySet>().is_ok_and(|f| f.is_empty()) {
                no_log.call_method1(intern!(py, "update"), (found,))?;
            }
        }
        if !out.warnings_to_emit.is_empty() {
            // What _validate_sub_spec calls, looked up as it looks it up.
            let warn = self
                .parameters_module
                .bind(py)
                .getattr(intern!(py, "warn"))?;
            for message in &out.warnings_to_emit {
                warn.call1((message,))?;
            }
        }
        if let Some(secrets) = &self.secrets {
            if !(no_log.is_empty() && self.registering_nothing_is_quiet(py, secrets.bind(py))?) {
                secrets
                    .bind(py)
                    .call_method1(intern!(py, "register_secrets"), (no_log,))?;
            }
        }
        Ok(())
    }
}

impl ArgspecFastPath {
    /// `errors.append(cls(message))`, without Python calls while both are ansible-core's own.
    fn append_error(
        &self,
        errors: &Bound<'_, PyAny>,
        cls: &Bound<'_, PyAny>,
        message: &str,
    ) -> PyResult<()> {
        let py = errors.py();
        if let (Some(plain), Ok(class)) = (&self.plain_errors, cls.cast::<PyType>()) {
            let appends = self
                .multiple
                .bind(py)
                .getattr(intern!(py, "append"))?
                .is(plain.append.bind(py));
            if appends && errors.get_type().is(self.multiple.bind(py)) {
                if let Some(error) = plain.make(class, message)? {
                    let list = errors.getattr(intern!(py, "errors"))?;
                    if let Ok(list) = list.cast_exact::<PyList>() {
                        return list.append(error);
                    }
                    return list.call_method1(intern!(py, "append"), (error,)).map(drop);
                }
            }
        }
        let error = cls.call1((message,))?;
        errors.call_method1(intern!(py, "append"), (error,))?;
        Ok(())
    }

    /// Whether `secrets.register_secrets(set())` would do nothing at all: it is still
    /// ansible-core's own function, on the same shared masker with ansible-core's own
    /// `register_secret_texts` (which, given nothing, takes its lock and adds nothing).
    fn registering_nothing_is_quiet(
        &self,
        py: Python<'_>,
        secrets: &Bound<'_, PyAny>,
    ) -> PyResult<bool> {
        let Some(quiet) = &self.quiet_registration else {
            return Ok(false);
        };
        let masker = self
            .attr_secret_masker
            .get(secrets, intern!(py, "_secret_masker"))?;
        Ok(self
            .attr_register_secrets
            .get(secrets, intern!(py, "register_secrets"))?
            .is(quiet.register.bind(py))
            && masker.is(quiet.masker.bind(py))
            && masker
                .get_type()
                .getattr(intern!(py, "register_secret_texts"))?
                .is(quiet.method.bind(py)))
    }

    /// `AnsibleValidationErrorMultiple()`.
    fn new_multiple<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let multiple = self.multiple.bind(py);
        if let Some(init) = &self.multiple_init {
            if multiple.getattr(intern!(py, "__init__"))?.is(init.bind(py)) {
                let made = new_instance(multiple.cast::<PyType>()?)?;
                set_attr(&made, intern!(py, "errors"), PyList::empty(py).as_any())?;
                return Ok(made);
            }
        }
        multiple.call0()
    }
}

/// ansible-core 2.22's `secrets.register_secrets`, its shared masker and the masker's
/// `register_secret_texts`, as found when the fast path was made (all ansible-core's own).
struct QuietRegistration {
    register: Py<PyAny>,
    masker: Py<PyAny>,
    method: Py<PyAny>,
}

fn quiet_registration(secrets: &Bound<'_, PyAny>) -> PyResult<Option<QuietRegistration>> {
    let py = secrets.py();
    let defined_in = |function: &Bound<'_, PyAny>, module: &Bound<'_, PyAny>| -> PyResult<bool> {
        let Ok(code) = function.getattr("__code__") else {
            return Ok(false);
        };
        code.getattr("co_filename")?.eq(module.getattr("__file__")?)
    };
    let register = secrets.getattr("register_secrets")?;
    let masker = secrets.getattr("_secret_masker")?;
    let method = masker.get_type().getattr("register_secret_texts")?;
    let internal = py.import("ansible.module_utils._internal._secrets")?;
    let own = defined_in(&register, secrets)?
        && defined_in(&method, internal.as_any())?
        && masker.is(internal.getattr("_secret_masker")?);
    Ok(own.then(|| QuietRegistration {
        register: register.unbind(),
        masker: masker.unbind(),
        method: method.unbind(),
    }))
}

/// What ansible-core's `set_fallbacks` left for a call.
struct FallbacksRan<'py> {
    /// The parameters as checked: the caller's dict when the native loop added nothing,
    /// else the copy the fallbacks filled.
    given: Bound<'py, PyDict>,
    /// The no_log values the fallbacks found (`None`: none, no set made).
    found: Option<Bound<'py, PyAny>>,
}

impl<'py> FallbacksRan<'py> {
    /// The answer when the core gives up after the fallbacks ran: the reason, the fallbacks'
    /// results and their no_log values, which ansible-core's validate then replays.
    fn gave_up(&self, dict: &Bound<'py, PyDict>, why: Unhandled) -> PyResult<Answer<'py>> {
        // A dict of its own: the caller's dict itself would read as "no fallback ran".
        let given = match self.given.is(dict) {
            true => dict.copy()?,
            false => self.given.clone(),
        };
        let found = found_set(dict.py(), &self.found)?;
        Ok(Answer::GaveUp(why, [given.into_any(), found]))
    }
}

/// The values the fallbacks added (`added`; with `skip_given`, the caller's own keys of `dict`
/// among them are passed over) converted into `params`; the reason when the core cannot take
/// them.  `given`: the parameters as the fallbacks left them.
fn take_added<'py>(
    compiled: &CompiledArgSpec,
    dict: &Bound<'py, PyDict>,
    given: &Bound<'py, PyDict>,
    added: Vec<(Bound<'py, PyAny>, Bound<'py, PyAny>)>,
    skip_given: bool,
    params: &mut Params,
) -> PyResult<Result<(), Unhandled>> {
    // Whether a fallback added a dict or list: only one of those can be shared (the
    // caller's parameters were found sharing none).
    let mut added_container = false;
    for (key, value) in added {
        if skip_given && dict.contains(&key)? {
            continue;
        }
        added_container |= !(value.is_none()
            || value.is_exact_instance_of::<PyString>()
            || value.is_exact_instance_of::<PyBool>()
            || value.is_exact_instance_of::<PyInt>()
            || value.is_exact_instance_of::<PyFloat>());
        let Ok(key) = key.extract::<String>() else {
            return Ok(Err(Unhandled::StrWithSurrogates));
        };
        match to_value(&value, Mode::Params, 1) {
            // An option's name (as a fallback sets): its own key, its hash known.
            Ok(value) => match compiled.spec.option_index(&key) {
                Some(index) => {
                    compiled.spec.insert_option(params, index, value);
                }
                None => {
                    params.insert(key.into(), value);
                }
            },
            Err(why) => return Ok(Err(why)),
        };
    }
    if take_saw_tagged() {
        return Ok(Err(Unhandled::TaggedFallback));
    }
    if added_container
        && compiled.spec.has_sub_options()
        && shares_containers(given.as_any(), &mut Default::default(), 0)
    {
        return Ok(Err(Unhandled::SharedContainer));
    }
    Ok(Ok(()))
}

/// `ValidationResult._unsupported_parameters` (each group's paths added as a set, as
/// ansible-core adds them: the set's order follows) and `_supported_parameters`.
fn unsupported_parameters<'py>(
    py: Python<'py>,
    out: &Outcome,
) -> PyResult<(Bound<'py, PySet>, Bound<'py, PyDict>)> {
    let unsupported = PySet::empty(py)?;
    let supported = PyDict::new(py);
    for group in &out.unsupported {
        let aliases = PyDict::new(py);
        for (alias, option) in &group.aliases {
            aliases.set_item(alias, option)?;
        }
        let paths = PySet::empty(py)?;
        for path in &group.paths {
            let path = path_object(py, path)?;
            paths.add(&path)?;
            supported.set_item(&path, (PyList::new(py, &group.supported)?, aliases.copy()?))?;
        }
        unsupported.call_method1(intern!(py, "update"), (paths,))?;
    }
    Ok((unsupported, supported))
}

/// `ValidationResult._warnings`: one `{'option', 'alias'}` dict per option given under both.
fn alias_warnings<'py>(py: Python<'py>, out: &Outcome) -> PyResult<Bound<'py, PyList>> {
    let warnings = PyList::empty(py);
    for (option, alias) in &out.alias_warnings {
        let warning = PyDict::new(py);
        warning.set_item(intern!(py, "option"), option)?;
        warning.set_item(intern!(py, "alias"), alias)?;
        warnings.append(warning)?;
    }
    Ok(warnings)
}

/// The no_log values fallbacks found, as the set ansible-core's `set_fallbacks` returns.
fn found_set<'py>(
    py: Python<'py>,
    found: &Option<Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    match found {
        Some(found) => Ok(found.clone()),
        None => Ok(PySet::empty(py)?.into_any()),
    }
}

/// `setattr(object, name, value)`.
fn set_attr(
    object: &Bound<'_, PyAny>,
    name: &Bound<'_, PyString>,
    value: &Bound<'_, PyAny>,
) -> PyResult<()> {
    set_attr_as(object, slots::sets_generically(object), name, value)
}

/// `setattr(object, name, value)`, by the generic function directly (as `setattr` would
/// call it) when `generic` (`slots::sets_generically`, asked once for the attributes set in
/// a row on a new object: no Python code runs between them).
fn set_attr_as(
    object: &Bound<'_, PyAny>,
    generic: bool,
    name: &Bound<'_, PyString>,
    value: &Bound<'_, PyAny>,
) -> PyResult<()> {
    if !generic {
        return object.setattr(name, value);
    }
    slots::set_attr_generic(object, name, value)
}

/// `cls.__new__(cls)`, as the type's own `tp_new` slot (a Python `__new__` included) makes it.
fn new_instance<'py>(cls: &Bound<'py, PyType>) -> PyResult<Bound<'py, PyAny>> {
    new_instance_with(cls, &PyTuple::empty(cls.py()))
}

/// ansible-core's own `AnsibleValidationError.__init__` and
/// `AnsibleValidationErrorMultiple.append`, when an error made by `__new__` and given its
/// `error_message`, and appended to the `errors` list directly, was found the same as
/// ansible-core's for every error class the core reports.
struct PlainErrors {
    init: Py<PyAny>,
    append: Py<PyAny>,
}

fn plain_errors(
    multiple: &Bound<'_, PyAny>,
    errors_module: &Bound<'_, PyAny>,
) -> PyResult<Option<PlainErrors>> {
    let file = errors_module.getattr("__file__")?;
    let own = |function: &Bound<'_, PyAny>| -> PyResult<bool> {
        match function.getattr("__code__") {
            Ok(code) => code.getattr("co_filename")?.eq(&file),
            Err(_) => Ok(false),
        }
    };
    let init = errors_module
        .getattr("AnsibleValidationError")?
        .getattr("__init__")?;
    let append = multiple.getattr("append")?;
    if !own(&init)? || !own(&append)? {
        return Ok(None);
    }
    let plain = PlainErrors {
        init: init.unbind(),
        append: append.unbind(),
    };
    for name in ErrorKind::ALL.iter().map(|k| k.class_name()) {
        let cls = errors_module.getattr(name)?;
        let usual = cls.call1(("probe message",))?;
        let Some(made) = plain.make(cls.cast::<PyType>()?, "probe message")? else {
            return Ok(None);
        };
        let same = usual.get_type().is(made.get_type())
            && usual.getattr("__dict__")?.eq(made.getattr("__dict__")?)?
            && usual.getattr("args")?.eq(made.getattr("args")?)?
            && usual.str()?.to_str()? == made.str()?.to_str()?;
        let list = multiple.call0()?;
        list.call_method1("append", (&usual,))?;
        let appended = list
            .getattr("errors")?
            .eq(PyList::new(multiple.py(), [&usual])?)?;
        if !same || !appended {
            return Ok(None);
        }
    }
    Ok(Some(plain))
}

impl PlainErrors {
    /// `cls(message)` without calling `__init__`, while `cls.__init__` is ansible-core's.
    fn make<'py>(
        &self,
        cls: &Bound<'py, PyType>,
        message: &str,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let py = cls.py();
        if !cls.getattr(intern!(py, "__init__"))?.is(self.init.bind(py)) {
            return Ok(None);
        }
        let message = PyString::new(py, message);
        let made = new_instance_with(cls, &PyTuple::new(py, [&message])?)?;
        made.setattr(intern!(py, "error_message"), message)?;
        Ok(Some(made))
    }
}

/// `AnsibleValidationErrorMultiple.__init__` if it is ansible-core's own and an object made by
/// `__new__` and given an empty `errors` list is the same as `AnsibleValidationErrorMultiple()`.
fn plain_multiple(
    multiple: &Bound<'_, PyAny>,
    errors_module: &Bound<'_, PyAny>,
) -> PyResult<Option<Py<PyAny>>> {
    let py = multiple.py();
    let Ok(cls) = multiple.cast::<PyType>() else {
        return Ok(None);
    };
    let init = multiple.getattr("__init__")?;
    let own = match init.getattr("__code__") {
        Ok(code) => code
            .getattr("co_filename")?
            .eq(errors_module.getattr("__file__")?)?,
        Err(_) => false,
    };
    if !own {
        return Ok(None);
    }
    let usual = multiple.call0()?;
    let made = new_instance(cls)?;
    made.setattr("errors", PyList::empty(py))?;
    let same = usual.get_type().is(made.get_type())
        && usual.getattr("__dict__")?.eq(made.getattr("__dict__")?)?
        && usual.getattr("args")?.eq(made.getattr("args")?)?
        && usual.str()?.to_str()? == made.str()?.to_str()?;
    Ok(same.then(|| init.unbind()))
}

/// An unsupported parameter as ansible-core records it: its name at top level, else the
/// tuple of the options context and the name.
fn path_object<'py>(py: Python<'py>, path: &[String]) -> PyResult<Bound<'py, PyAny>> {
    Ok(match path {
        [name] => PyString::new(py, name).into_any(),
        _ => PyTuple::new(py, path)?.into_any(),
    })
}

/// ansible-core's message for unsupported parameters: all of them (dotted paths) sorted,
/// then the supported names (and aliases) of the spec of whichever item the set yields last.
fn unsupported_message(unsupported: &Bound<'_, PySet>, out: &Outcome) -> PyResult<String> {
    let mut flattened = Vec::new();
    let mut last: Vec<String> = Vec::new();
    for item in unsupported.iter() {
        last = match item.cast::<PyTuple>() {
            Ok(tuple) => tuple
                .iter()
                .map(|p| p.extract::<String>())
                .collect::<PyResult<_>>()?,
            Err(_) => vec![item.extract::<String>()?],
        };
        flattened.push(last.join("."));
    }
    flattened.sort();
    // The group that set the supported entry of `last` last.
    let group = out
        .unsupported
        .iter()
        .rev()
        .find(|g| g.paths.contains(&last));
    let mut text = String::new();
    if let Some(group) = group {
        let mut names: Vec<&str> = group.supported.iter().map(String::as_str).collect();
        names.sort_unstable();
        text = names.join(", ");
        if !group.aliases.is_empty() {
            let mut aliases: Vec<&str> = group.aliases.iter().map(|(a, _)| a.as_str()).collect();
            aliases.sort_unstable();
            aliases.dedup();
            text.push_str(&format!(" ({})", aliases.join(", ")));
        }
    }
    Ok(format!(
        "{}. Supported parameters include: {text}.",
        flattened.join(", ")
    ))
}
