//! The engine's `Delegate` for one validation: fallbacks, and conversions the engine gives up
//! on, done by ansible-core's own code.

use pyo3::prelude::*;
use pyo3::types::PyDict;

use pyo3::exceptions::{PyTypeError, PyValueError};

use crate::argspec::convert::Converted;
use crate::argspec::{
    Delegate, FallbackValues, NoLogSource, NoLogValue, Params, TypeKind, Unhandled, Value,
};
use crate::py::convert::tagged::{is_exact_or_tagged, take_saw_tagged, Base, SAW_TAGGED};
use crate::py::convert::values::{params_to_python, to_python, to_value, Mode};

/// Conversions the core gives up on, done by ansible-core's own checker
/// (`DEFAULT_TYPE_VALIDATORS[name]`), its `TypeError`/`ValueError` text kept as the core's
/// error; any other exception leaves the call to ansible-core, which raises it again.
pub(super) struct CoreCheckers<'py, 'a> {
    pub(super) py: Python<'py>,
    pub(super) validators: Bound<'py, PyAny>,
    /// The spec's callables used as type, by index.
    pub(super) callables: &'a [Py<PyAny>],
    /// The sub-spec dicts, by the number the core knows them by.
    pub(super) sub_specs: &'a [Py<PyAny>],
    /// A KeyboardInterrupt/SystemExit from a checker: raised once validation stops.
    pub(super) interrupt: std::cell::RefCell<Option<PyErr>>,
    /// The caller's parameters, when they or the spec hold tagged objects: a callable type
    /// gets (a copy of) the object ansible-core would give it.
    pub(super) tagged_params: Option<Bound<'py, PyDict>>,
    pub(super) spec_tagged: bool,
    /// What a callable type returned for a top-level option given tagged: the object itself,
    /// for the result (its items keep their tags).
    pub(super) returned: std::cell::RefCell<Vec<(String, Py<PyAny>)>>,
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
        const FAILED: Unhandled = Unhandled::FallbackRaised;
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
                return Err(Unhandled::NoLogFallbackNotStr);
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
            return Err(Unhandled::TaggedFallbackInOptions);
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
        const UNTAGGED: Unhandled = Unhandled::TaggedForCallableType;
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
        const FAILED: Unhandled = Unhandled::CheckerFailed;
        if matches!(kind, TypeKind::Callable(_))
            && (self.spec_tagged || SAW_TAGGED.with(|saw| saw.get()))
        {
            return Err(Unhandled::TaggedForCallableType);
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
        const FAILED: Unhandled = Unhandled::CheckerFailed;
        let checker = match kind {
            TypeKind::Callable(i) => self.callables.get(i).ok_or(FAILED)?.bind(self.py).clone(),
            _ => self.validators.get_item(kind.name()).map_err(|_| FAILED)?,
        };
        match checker.call1((given,)) {
            Ok(converted) => {
                let value = to_value(&converted, Mode::Params, 0)
                    .map_err(|_| Unhandled::CheckerResultNotPlainData)?;
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
                Err(Unhandled::CheckerRaisedOther)
            }
        }
    }
}
