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
use std::sync::{Mutex, OnceLock};

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PySet, PyString, PyTuple};

use super::CompiledArgSpec;
use crate::py::gil_cell::GilCell;

/// How a native `set_fallbacks` went.
pub(super) enum Ran<'py> {
    /// The no_log values found (the parameters were filled in); `None`: none (no set made).
    Done(Option<Bound<'py, PySet>>),
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
    /// `os.environ`, kept while the os module is unchanged.
    pub(super) environ_attr: super::module_attrs::ModuleAttr,
}

pub(super) struct EncodedNames {
    encodekey: Py<PyAny>,
    by_name: HashMap<String, Py<PyBytes>>,
}

/// Names remembered at most (a process's specs name a few dozen variables).
const ENCODED_NAMES_LIMIT: usize = 1024;

impl FallbackContext {
    /// Whether `decoder` is the os module's own `decodevalue` (the `decode` function its
    /// `_createenviron` makes: `value.decode(encoding, 'surrogateescape')`).
    fn is_os_decoder(&self, decoder: &Bound<'_, PyAny>) -> PyResult<bool> {
        let py = decoder.py();
        if !decoder.is_exact_instance_of::<pyo3::types::PyFunction>() {
            return Ok(false);
        }
        Ok(decoder.getattr(intern!(py, "__module__"))?.eq("os")?
            && decoder
                .getattr(intern!(py, "__qualname__"))?
                .eq("_createenviron.<locals>.decode")?)
    }

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

/// What `set_fallbacks` reads of a spec, read once per compiled spec: the snapshot proves
/// the spec's dicts, lists and tuples unchanged (by identity and length) on every call that
/// reuses it, so the strategies, their arguments and their order are the same every time.
/// `None` when some fallback is not for the native loop.
pub(super) struct FallbackPlan {
    entries: Vec<Planned>,
    /// `os.environ.encodekey` and what it gave for each `env_fallback` argument (by entry),
    /// from the first call; another `encodekey` in its place is asked again (not kept).
    encoded: OnceLock<EncodedArgs>,
    /// Which argument of each `env_fallback` was found in the environment, while it is the
    /// same unchanged data dict (see `EnvMemo`).
    env_memo: GilCell<Option<EnvMemo>>,
}

/// The environment's data dict (address and version tag: any change to it gives a new tag,
/// and tags are never reused) and key encoder, and by plan entry the position of the first
/// `env_fallback` argument found in it (`Some(None)`: none; `None`: not looked for yet).  The
/// same dict with the same tag answers the same lookups, so they are not made again; a value
/// found is still read on every call, as `os.environ[name]` does, and decoded by
/// `os.environ.decodevalue` unless that is the os module's own decoder and it decoded this
/// very value before (see `decoded`).
struct EnvMemo {
    key: (usize, u64, usize),
    found: Vec<Option<Option<usize>>>,
    /// By plan entry: the value found, the os module's own `decodevalue` and what it made of
    /// it.  The same unchanged data dict holds the same bytes object, and that decoder is a
    /// pure function of it (`bytes.decode` with the file system encoding): the str it made
    /// is equal to the one it would make again (a new object, as every str read from
    /// `os.environ` is: no one can hold the earlier one and see it shared).
    decoded: Vec<Option<Decoded>>,
}

struct Decoded {
    raw: Py<PyAny>,
    decoder: Py<PyAny>,
    text: Py<PyAny>,
}

impl FallbackPlan {
    fn memo(&self, py: Python<'_>, key: (usize, u64, usize), at: usize) -> Option<Option<usize>> {
        let memo = self.env_memo.get(py)?;
        memo.as_ref()
            .filter(|m| m.key == key)
            .and_then(|m| m.found.get(at).copied().flatten())
    }

    fn remember(&self, py: Python<'_>, key: (usize, u64, usize), at: usize, found: Option<usize>) {
        // A memo replaced is dropped after the borrow ends (it holds Python objects).
        let mut replaced = None;
        let Some(mut memo) = self.env_memo.get_mut(py) else {
            return;
        };
        if memo.as_ref().is_none_or(|m| m.key != key) {
            replaced = memo.replace(EnvMemo {
                key,
                found: vec![None; self.entries.len()],
                decoded: std::iter::repeat_with(|| None)
                    .take(self.entries.len())
                    .collect(),
            });
        }
        if let Some(slot) = memo.as_mut().and_then(|m| m.found.get_mut(at)) {
            *slot = Some(found);
        }
        drop(memo);
        drop(replaced);
    }

    /// What `decoder` made of `raw` for entry `at` while the environment was `key`, if kept.
    fn decoded<'py>(
        &self,
        key: (usize, u64, usize),
        at: usize,
        raw: &Bound<'py, PyAny>,
        decoder: &Bound<'py, PyAny>,
    ) -> Option<Bound<'py, PyAny>> {
        let py = raw.py();
        let memo = self.env_memo.get(py)?;
        let kept = memo
            .as_ref()
            .filter(|m| m.key == key)?
            .decoded
            .get(at)?
            .as_ref()?;
        (kept.raw.bind(py).is(raw) && kept.decoder.bind(py).is(decoder))
            .then(|| kept.text.bind(py).clone())
    }

    /// Keeps what the os module's own decoder made of `raw` for entry `at` (see `EnvMemo`).
    fn keep_decoded(&self, py: Python<'_>, key: (usize, u64, usize), at: usize, decoded: Decoded) {
        let mut replaced = None;
        let Some(mut memo) = self.env_memo.get_mut(py) else {
            return;
        };
        if let Some(slot) = memo
            .as_mut()
            .filter(|m| m.key == key)
            .and_then(|m| m.decoded.get_mut(at))
        {
            replaced = slot.replace(decoded);
        }
        drop(memo);
        drop(replaced);
    }
}

/// `env_fallback` arguments as `encodekey` encoded them: by plan entry, then by argument.
struct EncodedArgs {
    encodekey: Py<PyAny>,
    by_entry: Vec<Vec<Py<PyAny>>>,
}

/// The strategy and arguments of one fallback, read as ansible-core reads them.
struct Planned {
    index: usize,
    strategy: Py<PyAny>,
    args: Py<PyTuple>,
    /// Whether every one of `args` is an exact str (the tuple is the plan's own).
    str_args: bool,
    kwargs: Option<Py<PyDict>>,
}

fn plan(compiled: &CompiledArgSpec, spec: &Bound<'_, PyDict>) -> PyResult<Option<FallbackPlan>> {
    let py = spec.py();
    let mut entries = Vec::new();
    for (index, option) in compiled.spec.options.iter().enumerate() {
        if !option.fallback {
            continue;
        }
        let name = compiled.names[index].bind(py);
        let Some(option_dict) = spec.get_item(name)? else {
            return Ok(None);
        };
        let Ok(option_dict) = option_dict.cast_into::<PyDict>() else {
            return Ok(None);
        };
        let Some(fallback) = option_dict.get_item(intern!(py, "fallback"))? else {
            return Ok(None);
        };
        let Some(items) = items_of(&fallback) else {
            return Ok(None);
        };
        let Some((strategy, rest)) = items.split_first() else {
            return Ok(None);
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
                    return Ok(None);
                }
                kwargs = Some(dict.clone().unbind());
            } else {
                // `*args` of anything but a tuple or list: ansible-core's own error.
                let Some(items) = items_of(item) else {
                    return Ok(None);
                };
                args = PyTuple::new(py, items)?;
            }
        }
        let str_args = args.iter().all(|n| n.is_exact_instance_of::<PyString>());
        entries.push(Planned {
            index,
            strategy: strategy.clone().unbind(),
            args: args.unbind(),
            str_args,
            kwargs,
        });
    }
    Ok(Some(FallbackPlan {
        entries,
        encoded: OnceLock::new(),
        env_memo: GilCell::new(None),
    }))
}

/// The native `set_fallbacks` on the parameters (`given`: as converted, with the same keys),
/// which it only reads: the values to set come back in `added` (name, value), in the order
/// ansible-core sets them.  Setting them after the loop is the same: a strategy is given its
/// own arguments, never the parameters.
pub(super) fn set_fallbacks<'py>(
    cx: &FallbackContext,
    compiled: &CompiledArgSpec,
    spec: &Bound<'py, PyDict>,
    given: &crate::argspec::Params,
    added: &mut Vec<(Bound<'py, PyString>, Bound<'py, PyAny>)>,
) -> PyResult<Ran<'py>> {
    let py = spec.py();
    let plan = match compiled.fallback_plan.get() {
        Some(plan) => plan,
        None => {
            let made = plan(compiled, spec)?;
            compiled.fallback_plan.get_or_init(|| made)
        }
    };
    let Some(plan) = plan else {
        return Ok(Ran::NotNative);
    };
    // Which strategies run: decided before any of them runs, as ansible-core's loop checks
    // each parameter before its own strategy (a strategy sets only its own parameter).
    let mut due = Vec::with_capacity(plan.entries.len());
    for (at, entry) in plan.entries.iter().enumerate() {
        if !given.contains_key(&*compiled.spec.options[entry.index].name) {
            due.push(at);
        }
    }
    let mut found = None;
    let mut environ = None;
    for at in due {
        let entry = &plan.entries[at];
        let strategy = entry.strategy.bind(py);
        let args = entry.args.bind(py);
        let kwargs = entry.kwargs.as_ref().map(|k| k.bind(py));
        let value = match call_strategy(cx, plan, at, &mut environ, strategy, args, kwargs) {
            Ok(Some(value)) => value,
            Ok(None) => continue, // AnsibleFallbackNotFound
            Err(e) => return Ok(Ran::Raised(e)),
        };
        if compiled.spec.options[entry.index].no_log {
            if let Err(e) = add_no_log(cx, &mut found, &value) {
                return Ok(Ran::Raised(e));
            }
        }
        added.push((compiled.names[entry.index].bind(py).clone(), value));
    }
    Ok(Ran::Done(found))
}

/// `if value.get('no_log', False) and fallback_value:` add it (2.22: its strings) to the set
/// `found` (made now if it is the first).
fn add_no_log<'py>(
    cx: &FallbackContext,
    found: &mut Option<Bound<'py, PySet>>,
    value: &Bound<'py, PyAny>,
) -> PyResult<()> {
    if !value.is_truthy()? {
        return Ok(());
    }
    let found = match found {
        Some(found) => found,
        None => found.insert(PySet::empty(value.py())?),
    };
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
    plan: &FallbackPlan,
    at: usize,
    environ: &mut Option<Option<Environ<'py>>>,
    strategy: &Bound<'py, PyAny>,
    args: &Bound<'py, PyTuple>,
    kwargs: Option<&Bound<'py, PyDict>>,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    let py = strategy.py();
    if strategy.is(cx.env_fallback.bind(py)) {
        if environ.is_none() {
            *environ = Some(Environ::current(cx, py)?);
        }
        if let Some(Some(environ)) = environ.as_ref() {
            if let Some(found) = env_lookup(cx, plan, at, environ, args)? {
                return Ok(found);
            }
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

/// The real `os.environ` as this call finds it: the mapping, its data dict and key encoder.
struct Environ<'py> {
    environ: Bound<'py, PyAny>,
    data: Bound<'py, PyDict>,
    encodekey: Bound<'py, PyAny>,
}

impl<'py> Environ<'py> {
    /// `None` when `os.environ` is not the usual mapping (the strategy is then called).
    fn current(cx: &FallbackContext, py: Python<'py>) -> PyResult<Option<Environ<'py>>> {
        let environ = cx
            .environ_attr
            .get(cx.os_module.bind(py), intern!(py, "environ"))?;
        if !environ.get_type().is(cx.environ_type.bind(py)) {
            return Ok(None);
        }
        // What os.environ's __contains__/__getitem__ do: its own key encoding, its own data.
        let data = environ.getattr(intern!(py, "_data"))?;
        let Ok(data) = data.cast_into::<PyDict>() else {
            return Ok(None);
        };
        let encodekey = environ.getattr(intern!(py, "encodekey"))?;
        Ok(Some(Environ {
            environ,
            data,
            encodekey,
        }))
    }
}

/// `os.environ.encodekey` and what it gives for the arguments of each plan entry that is an
/// `env_fallback` of str arguments (no names for any other entry).
fn encode_args(
    cx: &FallbackContext,
    plan: &FallbackPlan,
    env: &Environ<'_>,
) -> PyResult<EncodedArgs> {
    let py = env.data.py();
    let mut all = Vec::with_capacity(plan.entries.len());
    for entry in &plan.entries {
        let mut names = Vec::new();
        if entry.strategy.bind(py).is(cx.env_fallback.bind(py)) {
            for name in entry.args.bind(py).iter() {
                if !name.is_exact_instance_of::<PyString>() {
                    names.clear();
                    break;
                }
                names.push(cx.encoded_name(&env.encodekey, &name)?.unbind());
            }
        }
        all.push(names);
    }
    Ok(EncodedArgs {
        encodekey: env.encodekey.clone().unbind(),
        by_entry: all,
    })
}

/// `os.environ.decodevalue(raw)`, or the str it made of this very value before; with
/// `memo` (the memo key and plan entry), what the os module's own decoder makes is kept.
fn decode_value<'py>(
    cx: &FallbackContext,
    plan: &FallbackPlan,
    memo: Option<((usize, u64, usize), usize)>,
    env: &Environ<'py>,
    raw: Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let py = raw.py();
    let decoder = env.environ.getattr(intern!(py, "decodevalue"))?;
    if let Some((memo_key, at)) = memo {
        if let Some(text) = plan.decoded(memo_key, at, &raw, &decoder) {
            return Ok(text);
        }
    }
    let text = decoder.call1((&raw,))?;
    if let Some((memo_key, at)) = memo {
        if cx.is_os_decoder(&decoder)? && text.is_exact_instance_of::<PyString>() {
            let decoded = Decoded {
                raw: raw.unbind(),
                decoder: decoder.unbind(),
                text: text.clone().unbind(),
            };
            plan.keep_decoded(py, memo_key, at, decoded);
        }
    }
    Ok(text)
}

/// `env_fallback(*args)` for str arguments: the first name present gives its value
/// (`Some(Some(value))`), none present is `Some(None)`; `None` when the arguments are not
/// all str (the function is called).
fn env_lookup<'py>(
    cx: &FallbackContext,
    plan: &FallbackPlan,
    at: usize,
    env: &Environ<'py>,
    args: &Bound<'py, PyTuple>,
) -> PyResult<Option<Option<Bound<'py, PyAny>>>> {
    let py = args.py();
    if !plan.entries[at].str_args {
        return Ok(None);
    }
    if plan.encoded.get().is_none() {
        let _ = plan.encoded.set(encode_args(cx, plan, env)?);
    }
    let count = args.len();
    let kept = plan
        .encoded
        .get()
        .filter(|kept| kept.encodekey.bind(py).is(&env.encodekey))
        .and_then(|kept| kept.by_entry.get(at))
        .filter(|names| names.len() == count);
    let memo_key = match (kept, crate::py::cpython::layout::dict_version(&env.data)) {
        (Some(_), Some(tag)) => Some((
            env.data.as_ptr() as usize,
            tag,
            env.encodekey.as_ptr() as usize,
        )),
        _ => None,
    };
    let known = memo_key.and_then(|key| plan.memo(py, key, at));
    for position in 0..count {
        match known {
            Some(None) => break, // none of them is there
            Some(Some(found)) if found != position => continue,
            _ => {}
        }
        let key = match kept {
            Some(names) => names[position].bind(py).clone(),
            None => cx.encoded_name(&env.encodekey, &args.get_item(position)?)?,
        };
        if let Some(raw) = env.data.get_item(key)? {
            if let (Some(memo_key), None) = (memo_key, known) {
                plan.remember(py, memo_key, at, Some(position));
            }
            let memo = memo_key.map(|key| (key, at));
            return decode_value(cx, plan, memo, env, raw).map(|text| Some(Some(text)));
        }
    }
    if let (Some(memo_key), None) = (memo_key, known) {
        plan.remember(py, memo_key, at, None);
    }
    Ok(Some(None))
}
