//! The validated parameters holding the objects ansible-core's would hold where the value is
//! the one given: its `validate()` deep-copies the parameters (a str or float stays the same
//! object) and type checks return a value already of the type as it is; an option not given
//! gets the spec's default object itself.  Reusing them is faithful and saves making equal
//! objects again; every other value is made from the core's result.
//!
//! One file past the project's usual length on purpose: the rule for which object to keep
//! serves every level of the parameters (the top level, sub-option dicts, defaults) and stays
//! in one place.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyFloat, PyList, PyString};

use super::template::{SubTemplate, SubTemplateSlot, Template};
use super::{to_python, CompiledArgSpec};
use crate::argspec::{CompiledSpec, Key, Outcome, Params, Value};
use crate::py::cpython;

/// The validated parameters as a dict keyed with the spec's own name objects; `given` is the
/// parameter dict the core's input was made from.
pub(super) fn validated<'py>(
    py: Python<'py>,
    compiled: &CompiledArgSpec,
    given: &Bound<'py, PyDict>,
    out: &Outcome,
    kept: &[Py<PyAny>],
) -> PyResult<Bound<'py, PyDict>> {
    let (entries, shape) = entries_of(py, compiled, given, out, kept)?;
    let shape = match shape {
        Some(mut shape) => {
            shape.extend(out.none_tail.iter().filter_map(|&i| u32::try_from(i).ok()));
            if shape.len() != out.params.len() + out.none_tail.len() {
                return keyed(py, compiled, entries, out);
            }
            shape
        }
        None => return keyed(py, compiled, entries, out),
    };
    if let Some((dict, template)) = compiled.template.copy_for(py, &shape)? {
        fill_from_template(py, compiled, &dict, &template, entries, &shape)?;
        return Ok(dict);
    }
    let lasting: Vec<Option<Py<PyAny>>> = entries
        .iter()
        .zip(&shape)
        .map(|((_, object), &index)| lasting(py, compiled, index as usize, object.as_ref()))
        .collect();
    let dict = keyed(py, compiled, entries, out)?;
    compiled
        .template
        .record(py, shape, &compiled.names, lasting)?;
    Ok(dict)
}

/// A result entry: its key object and its value object (None: Python's None).
type Entry<'py> = (Bound<'py, PyString>, Option<Bound<'py, PyAny>>);

/// Each entry of the core's map as a key object and value object, and the entries' option
/// indexes in order (the result's shape; none when a key is not an option's name).
fn entries_of<'py>(
    py: Python<'py>,
    compiled: &CompiledArgSpec,
    given: &Bound<'py, PyDict>,
    out: &Outcome,
    kept: &[Py<PyAny>],
) -> PyResult<(Vec<Entry<'py>>, Option<Vec<u32>>)> {
    let map = &out.params;
    let (option_at, placed) = options_by_position(compiled, out);
    let mut strings = None;
    let mut entries: Vec<Entry<'py>> = Vec::with_capacity(map.len());
    let mut shape: Option<Vec<u32>> = Some(Vec::with_capacity(map.len() + out.none_tail.len()));
    // The core's map starts with the keys of `given`, in its order (the parameters as given,
    // then any fallbacks set); what it adds comes after.
    let given_len = given.len();
    let mut given_items = given.iter();
    for (position, (key, value)) in map.iter().enumerate() {
        // The name compared all the same: a position that moved would be only slower.
        let index = match option_at[position].filter(|i| {
            placed
                && compiled
                    .spec
                    .options
                    .get(*i)
                    .is_some_and(|o| o.name == *key)
        }) {
            Some(index) => Some(index),
            None => compiled.spec.key_index(key),
        };
        let key_object = match index.and_then(|i| compiled.names.get(i)) {
            Some(name) => name.bind(py).clone(),
            None => PyString::new(py, key),
        };
        match (index.and_then(|i| u32::try_from(i).ok()), &mut shape) {
            (Some(index), Some(shape)) if index_named(compiled, index) => shape.push(index),
            _ => shape = None,
        }
        // The given entry at the same position, read in step (no lookup) and checked by name.
        let at_position = match position < given_len {
            true => given_items.next(),
            false => None,
        };
        if matches!(value, Value::None) {
            entries.push((key_object, None));
            continue;
        }
        let was = match (value, at_position) {
            (Value::Bool(_), _) => None,
            // The spec's own name object (as given keys mostly are), or the same text.
            (_, Some((name, object))) if name.is(&key_object) || str_is(&name, key) => Some(object),
            _ if position < given_len => given.get_item(&key_object)?,
            _ => None,
        };
        let object = match reused(py, compiled, given, was.as_ref(), index, &key_object, value)? {
            Some(object) => object,
            None if matches!(value, Value::Dict(_) | Value::List(_) | Value::Kept(_)) => {
                // Asked once per result: the table is made from a spec's second result on.
                let strings = *strings.get_or_insert_with(|| compiled.spec_strings(py));
                let below = index.and_then(|i| Below::of(compiled, &compiled.spec, i));
                to_python_reusing(py, value, was.as_ref(), strings, below, kept)?
            }
            None => to_python(py, value)?,
        };
        entries.push((key_object, Some(object)));
    }
    Ok((entries, shape))
}

/// Which option each entry of the core's map is (by position), from where the core put each
/// option, and whether those positions can be trusted (else each is looked up by name).
fn options_by_position(compiled: &CompiledArgSpec, out: &Outcome) -> (Vec<Option<usize>>, bool) {
    let mut option_at: Vec<Option<usize>> = vec![None; out.params.len()];
    let mut placed = out.option_positions.len() == compiled.spec.options.len();
    // The options without a position are those of `none_tail`, in the same (index) order:
    // read in step.
    let mut tail = out.none_tail.iter().peekable();
    for (index, position) in out.option_positions.iter().enumerate() {
        match position.map(|p| option_at.get_mut(p)) {
            Some(Some(slot)) => *slot = Some(index),
            Some(None) => placed = false,
            None => placed &= tail.next_if_eq(&&index).is_some(),
        }
    }
    (option_at, placed)
}

/// `dict`, a copy of the template of this `shape`, given the entries' objects: the template
/// holds None, or an object every result of its shape may hold there (see `lasting`), so only
/// what differs is set.
fn fill_from_template<'py>(
    py: Python<'py>,
    compiled: &CompiledArgSpec,
    dict: &Bound<'py, PyDict>,
    template: &Template,
    entries: Vec<Entry<'py>>,
    shape: &[u32],
) -> PyResult<()> {
    let none = py.None().into_bound(py);
    let given_entries = entries.len();
    for (position, (key, object)) in entries.into_iter().enumerate() {
        let held = template.held(position);
        match (object, held) {
            (Some(object), Some(held)) if object.is(held.bind(py)) => {}
            (Some(object), _) => dict.set_item(key, object)?,
            (None, Some(_)) => dict.set_item(key, &none)?,
            (None, None) => {}
        }
    }
    // The options of the none tail are None in this result, whatever the template holds
    // there (a result of the same shape may have had True for an option given then).
    let held_end = template.held_end();
    for (position, &index) in shape.iter().enumerate().take(held_end).skip(given_entries) {
        if template.held(position).is_some() {
            if let Some(name) = compiled.names.get(index as usize) {
                dict.set_item(name.bind(py), &none)?;
            }
        }
    }
    Ok(())
}

/// `object` (the value of option `index` in a result) if every result may hold that very
/// object there whenever the core finds the same value: True and False, and the spec's own
/// default object of an immutable builtin type (what ansible-core puts in for an option not
/// given).  Never a container: each result has its own.
fn lasting(
    py: Python<'_>,
    compiled: &CompiledArgSpec,
    index: usize,
    object: Option<&Bound<'_, PyAny>>,
) -> Option<Py<PyAny>> {
    let object = object?;
    if object.is_exact_instance_of::<pyo3::types::PyBool>() {
        return Some(object.clone().unbind());
    }
    let default = compiled.defaults.get(index)?.as_ref()?.bind(py);
    let immutable = default.is_exact_instance_of::<PyString>()
        || default.is_exact_instance_of::<pyo3::types::PyInt>()
        || default.is_exact_instance_of::<PyFloat>();
    (immutable && object.is(default)).then(|| object.clone().unbind())
}

/// Whether option `index` has its key object (the spec's own name) to make a template with.
fn index_named(compiled: &CompiledArgSpec, index: u32) -> bool {
    (index as usize) < compiled.names.len()
}

/// The validated dict built key by key: `entries`, then ansible-core's last pass of defaults
/// (None for each option still missing, in spec order).
fn keyed<'py>(
    py: Python<'py>,
    compiled: &CompiledArgSpec,
    entries: Vec<Entry<'py>>,
    out: &Outcome,
) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    let none = py.None().into_bound(py);
    for (key, object) in entries {
        dict.set_item(key, object.as_ref().unwrap_or(&none))?;
    }
    for &index in &out.none_tail {
        match compiled.names.get(index) {
            Some(name) => dict.set_item(name.bind(py), &none)?,
            None => dict.set_item(&*compiled.spec.options[index].name, &none)?,
        }
    }
    Ok(dict)
}

/// Strings a spec holds (option names at every depth, str defaults) by their text: what a
/// result's sub-option keys and defaults are made of in ansible-core's result too.
pub(super) struct SpecStrings(rustc_hash::FxHashMap<Box<str>, Py<PyString>>);

impl SpecStrings {
    pub(super) fn of(py: Python<'_>, compiled: &CompiledArgSpec) -> SpecStrings {
        let mut table = rustc_hash::FxHashMap::default();
        let mut add = |object: &Bound<'_, PyAny>| {
            if let Ok(text) = object.cast_exact::<PyString>() {
                if let Ok(utf8) = text.to_str() {
                    table
                        .entry(utf8.into())
                        .or_insert_with(|| text.clone().unbind());
                }
            }
        };
        for name in &compiled.names {
            add(name.bind(py).as_any());
        }
        for sub in &compiled.sub_specs {
            let Ok(sub) = sub.bind(py).cast::<PyDict>() else {
                continue;
            };
            for (name, option) in sub.iter() {
                add(&name);
                if let Ok(Some(default)) = option
                    .cast::<PyDict>()
                    .map(|o| o.get_item(pyo3::intern!(py, "default")).ok().flatten())
                {
                    add(&default);
                }
            }
        }
        SpecStrings(table)
    }

    fn get<'py>(&self, py: Python<'py>, text: &str) -> Option<Bound<'py, PyString>> {
        self.0.get(text).map(|s| s.bind(py).clone())
    }
}

/// The sub-spec of an option with sub-options, for the dicts its value holds.
#[derive(Clone, Copy)]
struct Below<'a> {
    compiled: &'a CompiledArgSpec,
    spec: &'a CompiledSpec,
    /// The sub-spec's number (see `CompiledSpec::source`).
    source: usize,
}

impl<'a> Below<'a> {
    /// The sub-spec of option `index` of `spec`, if it has one.
    fn of(compiled: &'a CompiledArgSpec, spec: &'a CompiledSpec, index: usize) -> Option<Self> {
        let sub = &spec.options.get(index)?.sub.as_deref()?.spec;
        Some(Below {
            compiled,
            spec: sub,
            source: sub.source?,
        })
    }

    /// The sub-spec of this sub-spec's option `index`.
    fn child(&self, index: usize) -> Option<Below<'a>> {
        Below::of(self.compiled, self.spec, index)
    }

    /// The sub-spec of this sub-spec's option named `key`; looked up only where a sub-spec
    /// holds sub-specs.
    fn child_named(&self, key: &crate::argspec::Key) -> Option<Below<'a>> {
        match self.spec.at.sub.is_empty() {
            true => None,
            false => self.child(self.spec.key_index(key)?),
        }
    }

    /// The sub-spec's own default object for option `index`, where ansible-core's result
    /// holds it: the option was added by the core (not given, nor under an alias; no fallback)
    /// and its value is the default's as it is (an exact str, int or float equal to it).
    fn default_object<'py>(
        &self,
        py: Python<'py>,
        index: usize,
        value: &Value,
        given: &Bound<'py, PyDict>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let Some(default) = self
            .compiled
            .sub_defaults
            .get(self.source)
            .and_then(|d| d.get(index))
            .and_then(Option::as_ref)
        else {
            return Ok(None);
        };
        let option = &self.spec.options[index];
        let default = default.bind(py);
        if option.fallback || !same_scalar(default, value) {
            return Ok(None);
        }
        for alias in &option.aliases {
            if given.contains(alias)? {
                return Ok(None);
            }
        }
        Ok(Some(default.clone()))
    }

    /// Whether `object` is option `index`'s own default object and `value` the default's
    /// value, for an option without a fallback.
    fn is_default_object(&self, object: &Bound<'_, PyAny>, index: usize, value: &Value) -> bool {
        let option = &self.spec.options[index];
        !option.fallback
            && *value == option.default
            && self
                .compiled
                .sub_defaults
                .get(self.source)
                .and_then(|d| d.get(index))
                .and_then(Option::as_ref)
                .is_some_and(|d| object.is(d))
    }

    fn slot(&self) -> Option<&'a SubTemplateSlot> {
        self.compiled.sub_templates.get(self.source)
    }

    /// `map` (a sub-parameter dict of this sub-spec) as a copy of its kept template with the
    /// values put in, if a template of its keys is kept and the caller's keys are exact str
    /// of its keys' text; `None` otherwise.
    fn dict_from_template<'py>(
        &self,
        py: Python<'py>,
        map: &Params,
        given: Option<&Bound<'py, PyDict>>,
        strings: Option<&SpecStrings>,
        kept: &[Py<PyAny>],
    ) -> PyResult<Option<Bound<'py, PyDict>>> {
        let Some(template) = self.slot().and_then(|slot| slot.find(py, map)) else {
            return Ok(None);
        };
        let given_len = given.map_or(0, |g| g.len());
        if given_len > template.len() {
            return Ok(None);
        }
        // The core's map starts with the given dict's keys in its order: each given key must be
        // an exact str of the template key's text.  The result then holds the sub-spec's own
        // name object as the key where ansible-core's deep copy keeps the caller's equal str
        // (as the top-level dict does): the same keys, in the same order.
        if let Some(given) = given {
            for (position, (name, _)) in given.iter().enumerate() {
                let same = name.is(template.key(py, position))
                    || (name.is_exact_instance_of::<PyString>()
                        && str_is(&name, template.name(position)));
                if !same {
                    return Ok(None);
                }
            }
        }
        let dict = template.copy(py)?;
        let mut in_step = given.map(|g| g.iter());
        for (position, (_, item)) in map.iter().enumerate() {
            let was = match (&mut in_step, position < given_len) {
                (Some(items), true) => items.next().map(|(_, object)| object),
                _ => None,
            };
            let held = template.held(position).map(|h| h.bind(py));
            if matches!(item, Value::None) {
                if held.is_some() {
                    dict.set_item(template.key(py, position), py.None())?;
                }
                continue;
            }
            let index = template.index(position);
            let default = match given {
                Some(given) if position >= given_len => {
                    // The template holds the default object there and the core found the
                    // default's value: what `default_object` would answer (an alias given
                    // would be a key that is not an option's: another shape).
                    if held.is_some_and(|h| self.is_default_object(h, index, item)) {
                        continue;
                    }
                    self.default_object(py, index, item, given)?
                }
                _ => None,
            };
            let object = match default {
                Some(default) => default,
                None => {
                    to_python_reusing(py, item, was.as_ref(), strings, self.child(index), kept)?
                }
            };
            if held.is_some_and(|h| h.is(&object)) {
                continue;
            }
            dict.set_item(template.key(py, position), object)?;
        }
        Ok(Some(dict))
    }

    /// Keeps the template of `map`'s shape (each key's option index in `indexes`, `objects`
    /// the result's values by position, `given_len` of them the caller's), if every key names
    /// an option.
    fn keep(
        &self,
        py: Python<'_>,
        map: &Params,
        indexes: &[Option<u32>],
        objects: &[Bound<'_, PyAny>],
        given_len: usize,
    ) -> PyResult<()> {
        let (Some(slot), Some(names)) = (self.slot(), self.compiled.sub_names.get(self.source))
        else {
            return Ok(());
        };
        let Some(indexes) = indexes.iter().copied().collect::<Option<Vec<u32>>>() else {
            return Ok(());
        };
        let held = objects
            .iter()
            .enumerate()
            .map(|(position, object)| lasting_below(object, position >= given_len))
            .collect();
        let keys = map.keys().cloned().collect();
        if let Some(template) = SubTemplate::new(py, keys, indexes, names, held)? {
            slot.add(py, template);
        }
        Ok(())
    }
}

/// An object a sub-parameter dict's template may hold in place of None (every dict of its
/// shape is given the object found, which is then the same, or set): True and False, and a
/// str, int or float the caller did not give (a default, made of the spec's objects).
fn lasting_below(object: &Bound<'_, PyAny>, added: bool) -> Option<Py<PyAny>> {
    let held = object.is_exact_instance_of::<pyo3::types::PyBool>()
        || (added
            && (object.is_exact_instance_of::<PyString>()
                || object.is_exact_instance_of::<pyo3::types::PyInt>()
                || object.is_exact_instance_of::<PyFloat>()));
    held.then(|| object.clone().unbind())
}

/// `value` as a Python object, made of the objects `given` (the caller's object it came
/// from, if any) holds where they are equal str, int or float objects, as ansible-core's deep copy
/// keeps them, and of the spec's own strings for names and defaults: equal objects either way,
/// made again for less.  Neither needs to line up: an object is taken only when it is an exact
/// str or float equal to what the core found.  `below`: the sub-spec of the option the value
/// is of, if it has one (its dicts are made from templates).
fn to_python_reusing<'py>(
    py: Python<'py>,
    value: &Value,
    given: Option<&Bound<'py, PyAny>>,
    strings: Option<&SpecStrings>,
    below: Option<Below<'_>>,
    kept: &[Py<PyAny>],
) -> PyResult<Bound<'py, PyAny>> {
    Ok(match value {
        Value::Kept(held) => kept_object(py, kept, held)?,
        Value::Str(text) => {
            if let Some(given) = given.filter(|g| same_scalar(g, value)) {
                return Ok(given.clone());
            }
            match strings.and_then(|s| s.get(py, text)) {
                Some(found) => found.into_any(),
                None => PyString::new(py, text).into_any(),
            }
        }
        Value::Int(_) | Value::Float(_) if given.is_some_and(|g| same_scalar(g, value)) => {
            given.cloned().unwrap_or_else(|| py.None().into_bound(py))
        }
        Value::Dict(map) => {
            let given = given.and_then(|g| g.cast_exact::<PyDict>().ok());
            dict_reusing(py, map, given, strings, below, kept)?
        }
        Value::List(items) => {
            let given = given.and_then(|g| g.cast_exact::<PyList>().ok());
            let list = PyList::empty(py);
            for (index, item) in items.iter().enumerate() {
                let was = given.and_then(|g| g.get_item(index).ok());
                list.append(to_python_reusing(
                    py,
                    item,
                    was.as_ref(),
                    strings,
                    below,
                    kept,
                )?)?;
            }
            list.into_any()
        }
        _ => to_python(py, value)?,
    })
}

/// The key object for `key` and the object given under it: the given dict's own key object
/// and value when `at` (its entry at the same position) has that name, else the spec's own
/// string (or a new str) looked up in `given` (`None` past the given keys: the core added
/// those).
fn key_and_given<'py>(
    py: Python<'py>,
    key: &Key,
    at: Option<(Bound<'py, PyAny>, Bound<'py, PyAny>)>,
    given: Option<&Bound<'py, PyDict>>,
    strings: Option<&SpecStrings>,
) -> PyResult<(Bound<'py, PyString>, Option<Bound<'py, PyAny>>)> {
    let matched = at.and_then(|(name, object)| {
        let name = name.cast_into_exact::<PyString>().ok()?;
        str_is(&name, key).then_some((name, object))
    });
    // The given key object itself, as ansible-core's deep copy keeps it.
    if let Some((name, object)) = matched {
        return Ok((name, Some(object)));
    }
    let key = match strings.and_then(|s| s.get(py, key)) {
        Some(found) => found,
        None => PyString::new(py, key),
    };
    let was = match given {
        Some(given) => given.get_item(&key)?,
        None => None,
    };
    Ok((key, was))
}

/// A dict of the result (the core's `map`), reusing the objects of `given` (the dict the
/// caller gave there, if any) and, below an option with sub-options, the sub-spec's template
/// and default objects.
fn dict_reusing<'py>(
    py: Python<'py>,
    map: &Params,
    given: Option<&Bound<'py, PyDict>>,
    strings: Option<&SpecStrings>,
    below: Option<Below<'_>>,
    kept: &[Py<PyAny>],
) -> PyResult<Bound<'py, PyAny>> {
    if let Some(below) = below {
        if let Some(dict) = below.dict_from_template(py, map, given, strings, kept)? {
            return Ok(dict.into_any());
        }
    }
    if let Some(given) = given.filter(|g| below.is_none() && same_flat(g, map)) {
        // The given dict as it is, of str keys and immutable scalars: its deep copy
        // is a copy, holding the same objects.
        return Ok(given.copy()?.into_any());
    }
    // A template is made once the spec is used again (as the table of strings is).
    let keeping = below.filter(|_| strings.is_some());
    let mut indexes: Vec<Option<u32>> = Vec::new();
    let mut objects: Vec<Bound<'py, PyAny>> = Vec::new();
    let dict = PyDict::new(py);
    // The core's dict starts with the given dict's keys in its order (sub-option
    // defaults come after): read in step, each checked by name, looked up otherwise.
    let given_len = given.map_or(0, |g| g.len());
    let mut in_step = given.map(|g| g.iter());
    for (position, (key, item)) in map.iter().enumerate() {
        let at = match (&mut in_step, position < given_len) {
            (Some(items), true) => items.next(),
            _ => None,
        };
        let given_here = given.filter(|_| position < given_len);
        let (key_object, was) = key_and_given(py, key, at, given_here, strings)?;
        // Added by the core (a default, or None): the option's index, for its
        // default object.
        let added = below.zip(given).filter(|_| position >= given_len);
        let (child, default) = match (keeping, added) {
            (Some(below), _) | (None, Some((below, _))) => {
                let index = below.spec.key_index(key);
                if keeping.is_some() {
                    indexes.push(index.and_then(|i| u32::try_from(i).ok()));
                }
                let default = match (index, added) {
                    (Some(index), Some((_, given))) => {
                        below.default_object(py, index, item, given)?
                    }
                    _ => None,
                };
                (index.and_then(|i| below.child(i)), default)
            }
            (None, None) => (below.and_then(|b| b.child_named(key)), None),
        };
        let object = match default {
            Some(default) => default,
            None => to_python_reusing(py, item, was.as_ref(), strings, child, kept)?,
        };
        dict.set_item(&key_object, &object)?;
        if keeping.is_some() {
            objects.push(object);
        }
    }
    if let Some(below) = keeping {
        below.keep(py, map, &indexes, &objects, given_len)?;
    }
    Ok(dict.into_any())
}

/// A given object or the spec's default object that ansible-core's result would hold for
/// this entry; `was`: what `given` holds under the entry's key (looked up only for the entries
/// the core took from `given`: the first ones, in its order).
fn reused<'py>(
    py: Python<'py>,
    compiled: &CompiledArgSpec,
    given: &Bound<'py, PyDict>,
    was: Option<&Bound<'py, PyAny>>,
    index: Option<usize>,
    key: &Bound<'py, PyString>,
    value: &Value,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    if matches!(value, Value::None | Value::Bool(_)) {
        return Ok(None); // singletons: nothing to keep
    }
    if let Some(object) = was {
        // A given str, int or float that the checks left as it was.
        return Ok(same_scalar(object, value).then(|| object.clone()));
    }
    let Some(index) = index else { return Ok(None) };
    let Some(default) = compiled.defaults.get(index).and_then(Option::as_ref) else {
        return Ok(None);
    };
    let option = &compiled.spec.options[index];
    for alias in &option.aliases {
        if given.contains(alias)? {
            return Ok(None); // the value came from an alias
        }
    }
    // Not given: the default, where its type checks returned it as it is (containers too, but
    // not where ansible-core makes a new list of checked elements or works on sub-options).
    let default = default.bind(py);
    if same_scalar(default, value) {
        return Ok(Some(default.clone()));
    }
    let plain = option.elements.is_none() && option.sub.is_none();
    // A container is the spec's own object only if it was not given (asked again here: the
    // object itself would be shared with the spec).
    Ok((plain && same(default, value, 0) && !given.contains(key)?).then(|| default.clone()))
}

/// The copy kept aside for `held` (`KeptAside`).
fn kept_object<'py>(
    py: Python<'py>,
    kept: &[Py<PyAny>],
    held: &crate::argspec::Kept,
) -> PyResult<Bound<'py, PyAny>> {
    match kept.get(held.slot) {
        Some(object) => Ok(object.bind(py).clone()),
        None => Err(pyo3::exceptions::PyRuntimeError::new_err(
            "a kept container's copy is missing",
        )),
    }
}

/// Whether `given` holds exactly `map`: the same str keys in the same order, each value an
/// immutable scalar equal to the core's (of the same type), nothing else.
fn same_flat(given: &Bound<'_, PyDict>, map: &Params) -> bool {
    let scalars = map.values().all(|v| {
        matches!(
            v,
            Value::None | Value::Bool(_) | Value::Int(_) | Value::Float(_) | Value::Str(_)
        )
    });
    if !scalars || given.len() != map.len() {
        return false;
    }
    given.iter().zip(map).all(|((name, object), (key, value))| {
        name.is_exact_instance_of::<PyString>()
            && str_is(&name, key)
            && match value {
                Value::None => object.is_none(),
                Value::Bool(b) => {
                    object.is_exact_instance_of::<pyo3::types::PyBool>()
                        && object.is_truthy().is_ok_and(|t| t == *b)
                }
                _ => same_scalar(&object, value),
            }
    })
}

/// An exact str, int or float equal to `value` (the same type: 1.0 is not 1, True is not 1).
fn same_scalar(object: &Bound<'_, PyAny>, value: &Value) -> bool {
    match value {
        Value::Int(number) => {
            object.is_exact_instance_of::<pyo3::types::PyInt>()
                && object.extract::<i64>().is_ok_and(|o| o == *number)
        }
        Value::Str(text) => object.is_exact_instance_of::<PyString>() && str_is(object, text),
        Value::Float(number) => object
            .cast_exact::<PyFloat>()
            .is_ok_and(|f| f.value().to_bits() == number.to_bits()),
        _ => false,
    }
}

/// Whether a str object holds exactly `text` (never, for a str with lone surrogates).
fn str_is(object: &Bound<'_, PyAny>, text: &str) -> bool {
    object
        .cast::<PyString>()
        .ok()
        .and_then(|s| cpython::text::cached_utf8(s))
        .is_some_and(|utf8| utf8 == text.as_bytes())
}

/// Exact structural equality of a default object and a value: builtin types only.
fn same(object: &Bound<'_, PyAny>, value: &Value, depth: usize) -> bool {
    if depth > 32 {
        return false;
    }
    match value {
        Value::None => object.is_none(),
        Value::Bool(b) => {
            object.is_exact_instance_of::<pyo3::types::PyBool>()
                && object.is_truthy().is_ok_and(|t| t == *b)
        }
        Value::Int(i) => {
            object.is_exact_instance_of::<pyo3::types::PyInt>()
                && object.extract::<i64>().is_ok_and(|o| o == *i)
        }
        Value::Float(_) | Value::Str(_) => same_scalar(object, value),
        Value::Kept(_) => false,
        Value::List(items) => object.cast_exact::<PyList>().is_ok_and(|list| {
            list.len() == items.len() && list.iter().zip(items).all(|(o, v)| same(&o, v, depth + 1))
        }),
        Value::Dict(map) => object.cast_exact::<PyDict>().is_ok_and(|dict| {
            dict.len() == map.len()
                && dict.iter().zip(map).all(|((k, o), (key, v))| {
                    k.is_exact_instance_of::<PyString>()
                        && str_is(&k, key)
                        && same(&o, v, depth + 1)
                })
        }),
    }
}
