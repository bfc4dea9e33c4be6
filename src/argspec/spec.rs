//! Compiling an argument spec: the options and cross-option checks the native validator
//! reproduces exactly, or the reason it leaves the spec to ansible-core.
//!
//! One file past the project's usual length on purpose: each field of the compiled spec sits
//! beside the reading of the spec key that fills it, and the reason a key is left to
//! ansible-core beside both.

use std::collections::HashMap;

use rustc_hash::FxHashMap;

use indexmap::IndexMap;

use super::value::Value;
use super::Unhandled;

/// One option's spec as given: key -> value, `None` for a value that is not plain data
/// (a callable type, a fallback tuple holding a function, ...).
pub type OptionInput = IndexMap<String, Option<Value>, rustc_hash::FxBuildHasher>;

/// An argument spec and its cross-option checks as the glue hands them over.  Absent checks
/// are `Some(Value::None)`; `None` marks a value that is not plain data.
#[derive(Debug, Clone, Default)]
pub struct SpecInput {
    pub options: Vec<(String, OptionInput)>,
    pub mutually_exclusive: Option<Value>,
    pub required_together: Option<Value>,
    pub required_one_of: Option<Value>,
    pub required_if: Option<Value>,
    pub required_by: Option<Value>,
    /// (option index, "type" or "elements") -> callable index, for callables used as type.
    pub callable_fields: HashMap<(usize, String), usize>,
    /// `getattr(f, '__name__', str(type(f)))` of each callable: its name in error messages.
    /// Only the top input's list is read; callables of every depth are indexed into it.
    pub callable_names: Vec<String>,
    /// option index -> its `options`, when the glue converted them itself (a sub-spec with
    /// callables); otherwise `options` is a plain value among the option's fields.
    pub sub_inputs: HashMap<usize, SpecInput>,
    /// For a sub-spec: the glue's number for its Python dict, for `Delegate::fallbacks`.
    pub source: Option<usize>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TypeKind {
    Str,
    Int,
    Bool,
    Float,
    List,
    Dict,
    Path,
    Raw,
    /// Types converted only by ansible-core's own checker, through the `Delegate`.
    JsonArg,
    Json,
    Bytes,
    Bits,
    /// The n-th callable of the spec, called by the `Delegate`.
    Callable(usize),
}

impl TypeKind {
    fn parse(name: &str) -> Result<TypeKind, Unhandled> {
        Ok(match name {
            "str" => TypeKind::Str,
            "int" => TypeKind::Int,
            "bool" => TypeKind::Bool,
            "float" => TypeKind::Float,
            "list" => TypeKind::List,
            "dict" => TypeKind::Dict,
            "path" => TypeKind::Path,
            "raw" => TypeKind::Raw,
            "jsonarg" => TypeKind::JsonArg,
            "json" => TypeKind::Json,
            "bytes" => TypeKind::Bytes,
            "bits" => TypeKind::Bits,
            _ => return Err(Unhandled::SpecUnknownType),
        })
    }

    /// The name of a builtin type (`DEFAULT_TYPE_VALIDATORS` key); "" for a callable.
    pub fn name(self) -> &'static str {
        match self {
            TypeKind::Str => "str",
            TypeKind::Int => "int",
            TypeKind::Bool => "bool",
            TypeKind::Float => "float",
            TypeKind::List => "list",
            TypeKind::Dict => "dict",
            TypeKind::Path => "path",
            TypeKind::Raw => "raw",
            TypeKind::JsonArg => "jsonarg",
            TypeKind::Json => "json",
            TypeKind::Bytes => "bytes",
            TypeKind::Bits => "bits",
            TypeKind::Callable(_) => "",
        }
    }
}

#[derive(Debug, Clone)]
pub struct OptionSpec {
    pub name: super::value::Key,
    pub kind: TypeKind,
    pub elements: Option<TypeKind>,
    pub required: bool,
    /// `Value::None` when there is no default (ansible-core does not tell the two apart).
    pub default: Value,
    pub choices: Option<Vec<Value>>,
    pub aliases: Vec<String>,
    pub no_log: bool,
    /// Has a `fallback`: the caller applies ansible-core's own `set_fallbacks` first.
    pub fallback: bool,
    /// Boxed: few options have one, and every option is smaller for it (a compiled spec's
    /// size is memory a fresh worker pays for).
    pub removal: Option<Box<Removal>>,
    pub deprecated_aliases: Vec<DeprecatedAlias>,
    /// `options` of a dict or list-of-dicts option.
    pub sub: Option<Box<SubOptions>>,
    /// The hash of `name` in a parameter dict (`Params`' hasher): the option's key is
    /// inserted without hashing its name again.
    pub hash: u64,
    /// Whether a list or dict given for it may be kept aside by the caller (`Value::Kept`):
    /// its check returns it as it is (a `list`, `dict` or `raw` option; elements, if any, `str`
    /// or `dict`, checked by the caller) and nothing else reads inside it (no sub-options,
    /// `no_log` or `choices`; `required_if` compares it only with scalars).  Decided once, at
    /// compile: the caller asks for every option given.
    pub keeps: bool,
}

impl OptionSpec {
    /// `keeps`, from the option's other fields.
    fn can_keep(&self) -> bool {
        self.sub.is_none()
            && !self.no_log
            && self.choices.is_none()
            && matches!(
                (self.kind, self.elements),
                (TypeKind::List | TypeKind::Dict | TypeKind::Raw, None)
                    | (TypeKind::List, Some(TypeKind::Str | TypeKind::Dict))
            )
    }
}

/// A sub-spec with its own cross-option checks (read from the option's own keys).
#[derive(Debug, Clone)]
pub struct SubOptions {
    pub spec: CompiledSpec,
    pub apply_defaults: bool,
}

/// `removed_at_date` (preferred, as ansible-core does) or `removed_in_version`.
#[derive(Debug, Clone)]
pub struct Removal {
    pub at_date: bool,
    pub when: Value,
    pub collection_name: Value,
}

/// One `deprecated_aliases` entry; absent keys are `Value::None`.
#[derive(Debug, Clone)]
pub struct DeprecatedAlias {
    pub name: String,
    pub version: Value,
    pub date: Value,
    pub collection_name: Value,
}

#[derive(Debug, Clone)]
pub struct RequiredIf {
    pub key: String,
    pub value: Value,
    pub requirements: Vec<String>,
    pub any: bool,
}

/// A spec ready to validate parameter sets.
#[derive(Debug, Clone)]
pub struct CompiledSpec {
    pub options: Vec<OptionSpec>,
    /// alias -> index of its option, in spec order (ansible-core's `_aliases`).
    pub aliases: Vec<(String, usize)>,
    pub mutually_exclusive: Vec<Vec<String>>,
    /// Each `mutually_exclusive` term's option index, where the term names an option.
    pub mutually_exclusive_at: Vec<Vec<Option<usize>>>,
    pub required_together: Vec<Vec<String>>,
    pub required_one_of: Vec<Vec<String>>,
    pub required_if: Vec<RequiredIf>,
    pub required_by: Vec<(String, Vec<String>)>,
    /// option name -> index, for lookups per parameter.
    index: FxHashMap<String, usize>,
    /// The address of each option's name (`OptionSpec::name`) -> index: a parameter dict's
    /// key that is the option's own name is found without hashing its text.
    by_address: FxHashMap<usize, usize>,
    /// Every alias name (of `aliases`), for lookups per parameter.
    alias_names: rustc_hash::FxHashSet<String>,
    pub callable_names: Vec<String>,
    /// The glue's number for this sub-spec's Python dict (see `SpecInput::source`).
    pub source: Option<usize>,
    /// Whether an option here or in any sub-spec has `removed_*`: without one, the listing
    /// of deprecated parameters finds nothing and is skipped.
    pub(super) has_removals: bool,
    /// Option indexes (in spec order) of the options each step of a validation reads, so
    /// that a step passes over the others without looking at them.
    pub at: OptionsAt,
}

/// Option indexes, in spec order, by what a validation step does with them.
#[derive(Debug, Clone, Default)]
pub struct OptionsAt {
    /// A default other than None (the first pass of defaults).
    pub defaulted: Vec<usize>,
    pub required: Vec<usize>,
    pub choices: Vec<usize>,
    /// no_log or sub-options (the listing of no_log values).
    pub listed: Vec<usize>,
    /// Sub-options.
    pub sub: Vec<usize>,
    /// Sub-options with `apply_defaults`.
    pub apply_defaults: Vec<usize>,
    /// Whether any option has deprecated aliases.
    pub deprecated_aliases: bool,
}

impl OptionsAt {
    fn of(options: &[OptionSpec]) -> OptionsAt {
        let at = |keep: &dyn Fn(&OptionSpec) -> bool| -> Vec<usize> {
            (0..options.len()).filter(|&i| keep(&options[i])).collect()
        };
        OptionsAt {
            defaulted: at(&|o| !matches!(o.default, Value::None)),
            required: at(&|o| o.required),
            choices: at(&|o| o.choices.is_some()),
            listed: at(&|o| o.no_log || o.sub.is_some()),
            sub: at(&|o| o.sub.is_some()),
            apply_defaults: at(&|o| o.sub.as_ref().is_some_and(|s| s.apply_defaults)),
            deprecated_aliases: options.iter().any(|o| !o.deprecated_aliases.is_empty()),
        }
    }
}

/// The option keys ansible-core reads (besides a callable `type`/`elements` and `options`,
/// which the glue takes itself); any other key (`description`, `context`, ...) changes
/// nothing, whatever its value, so the glue need not convert it.
pub const OPTION_KEYS: &[&str] = &[
    "type",
    "elements",
    "required",
    "no_log",
    "default",
    "choices",
    "aliases",
    "fallback",
    "removed_in_version",
    "removed_at_date",
    "removed_from_collection",
    "deprecated_aliases",
    "options",
    "apply_defaults",
    "mutually_exclusive",
    "required_together",
    "required_one_of",
    "required_if",
    "required_by",
];

/// The five cross-option checks of one level, as given (see `SpecInput`).
type Checks<'a> = [&'a Option<Value>; 5];

/// Sub-specs deeper than this are left to ansible-core.
const MAX_NESTING: usize = 32;

impl CompiledSpec {
    pub fn compile(input: &SpecInput) -> Result<CompiledSpec, Unhandled> {
        let checks = [
            &input.mutually_exclusive,
            &input.required_together,
            &input.required_one_of,
            &input.required_if,
            &input.required_by,
        ];
        Self::compile_at(input, checks, 0, &input.callable_names)
    }

    /// `checks`: the level's cross-option checks (a sub-spec's come from its option's keys,
    /// so the sub-spec's input is compiled as it is, never copied).
    fn compile_at(
        input: &SpecInput,
        checks: Checks<'_>,
        depth: usize,
        callable_names: &[String],
    ) -> Result<CompiledSpec, Unhandled> {
        if depth > MAX_NESTING {
            return Err(Unhandled::SpecOptionsNestedTooDeeply);
        }
        let mut options = Vec::with_capacity(input.options.len());
        for (at, (name, fields)) in input.options.iter().enumerate() {
            // Most specs have neither callables nor converted sub-specs: no key made or hashed.
            let callable = |key: &str| match input.callable_fields.is_empty() {
                true => None,
                false => input.callable_fields.get(&(at, key.to_owned())).copied(),
            };
            let sub_input = match input.sub_inputs.is_empty() {
                true => None,
                false => input.sub_inputs.get(&at),
            };
            let given = Given {
                fields,
                sub_input,
                callable_names,
            };
            options.push(compile_option(name, given, callable, depth)?);
        }
        if depth > 0 && input.source.is_none() && options.iter().any(|o| o.fallback) {
            return Err(Unhandled::SpecFallbackInsideOptions);
        }
        let aliases = alias_table(&options)?;
        let index: FxHashMap<String, usize> = options
            .iter()
            .enumerate()
            .map(|(i, o)| (o.name.to_string(), i))
            .collect();
        let [mutually_exclusive, required_together, required_one_of, required_if_, required_by_] =
            checks;
        let has_removals = options
            .iter()
            .any(|o| o.removal.is_some() || o.sub.as_ref().is_some_and(|s| s.spec.has_removals));
        let alias_names = aliases.iter().map(|(a, _)| a.clone()).collect();
        let mutually_exclusive = term_groups(mutually_exclusive)?;
        let mutually_exclusive_at = mutually_exclusive
            .iter()
            .map(|group| group.iter().map(|t| index.get(t).copied()).collect())
            .collect();
        let by_address = options
            .iter()
            .enumerate()
            .filter_map(|(i, o)| Some((o.name.interned_address()?, i)))
            .collect();
        Ok(CompiledSpec {
            by_address,
            at: OptionsAt::of(&options),
            index,
            alias_names,
            mutually_exclusive_at,
            callable_names: callable_names.to_vec(),
            source: input.source,
            aliases,
            mutually_exclusive,
            required_together: term_groups(required_together)?,
            required_one_of: term_groups(required_one_of)?,
            required_if: required_if(required_if_)?,
            required_by: required_by(required_by_)?,
            options,
            has_removals,
        })
    }

    /// The type name ansible-core puts in conversion error messages.
    pub fn type_name(&self, kind: TypeKind) -> &str {
        match kind {
            TypeKind::Callable(i) => self.callable_names.get(i).map_or("", String::as_str),
            _ => kind.name(),
        }
    }

    /// The position of option `name` in the spec.
    pub fn option_index(&self, name: &str) -> Option<usize> {
        self.index.get(name).copied()
    }

    /// `option_index` for a parameter dict's key: found by address where it is the option's
    /// own name (as the keys the glue and the core put in are), by text otherwise.
    pub fn key_index(&self, key: &super::value::Key) -> Option<usize> {
        match key.interned_address().and_then(|a| self.by_address.get(&a)) {
            Some(&index) => Some(index),
            None => self.option_index(key),
        }
    }

    /// Whether any option has a `fallback` to apply before `validate`.
    pub fn has_fallbacks(&self) -> bool {
        self.options.iter().any(|o| o.fallback)
    }

    /// Whether any option has sub-options (validated in place by ansible-core).
    pub fn has_sub_options(&self) -> bool {
        self.options.iter().any(|o| o.sub.is_some())
    }

    /// Whether `name` is an option or an alias (ansible-core's legal inputs).
    pub fn is_legal(&self, name: &str) -> bool {
        self.index.contains_key(name) || self.alias_names.contains(name)
    }

    /// Whether `name` is an alias of some option.
    pub fn is_alias(&self, name: &str) -> bool {
        self.alias_names.contains(name)
    }
}

fn plain<'a>(fields: &'a OptionInput, key: &str) -> Result<&'a Value, Unhandled> {
    match fields.get(key) {
        None => Ok(&Value::None),
        Some(Some(v)) => Ok(v),
        Some(None) => Err(match key {
            "type" | "elements" => Unhandled::SpecCallableType,
            _ => Unhandled::SpecValueNotPlainData,
        }),
    }
}

fn flag(v: &Value) -> Result<bool, Unhandled> {
    match v {
        Value::None => Ok(false),
        Value::Bool(b) => Ok(*b),
        _ => Err(Unhandled::SpecNonBoolFlag),
    }
}

fn type_kind(v: &Value) -> Result<Option<TypeKind>, Unhandled> {
    match v {
        Value::None => Ok(None),
        Value::Str(s) => TypeKind::parse(s).map(Some),
        _ => Err(Unhandled::SpecTypeNotName),
    }
}

/// One option as given: its plain fields, and its sub-spec if the glue converted it.
struct Given<'a> {
    fields: &'a OptionInput,
    sub_input: Option<&'a SpecInput>,
    callable_names: &'a [String],
}

fn compile_option(
    name: &str,
    given: Given<'_>,
    callable: impl Fn(&str) -> Option<usize>,
    depth: usize,
) -> Result<OptionSpec, Unhandled> {
    let fields = given.fields;
    // ansible-core reads only type, elements, required, default, choices, aliases, no_log,
    // fallback, deprecated_aliases, removed_*, options, apply_defaults and the five checks:
    // other keys (`context`, `description`, ...) change nothing, whatever their value.

    let kind_of = |key: &str| match callable(key) {
        Some(i) => Ok(Some(TypeKind::Callable(i))),
        None => type_kind(plain(fields, key)?),
    };
    let kind = kind_of("type")?.unwrap_or(TypeKind::Str);
    let elements = kind_of("elements")?;
    if elements.is_some() && kind != TypeKind::List {
        return Err(Unhandled::SpecElementsWithoutList);
    }
    let required = flag(plain(fields, "required")?)?;
    let no_log = flag(plain(fields, "no_log")?)?;
    let default = plain(fields, "default")?.clone();
    if required && default != Value::None {
        return Err(Unhandled::SpecRequiredWithDefault);
    }
    let mut option = OptionSpec {
        hash: std::hash::BuildHasher::hash_one(&rustc_hash::FxBuildHasher, name),
        name: super::value::Key::interned(name),
        kind,
        elements,
        required,
        default,
        choices: choices(plain(fields, "choices")?)?,
        aliases: names(plain(fields, "aliases")?, Unhandled::SpecAliasesNotStrList)?
            .unwrap_or_default(),
        no_log,
        fallback: fields.contains_key("fallback"),
        removal: removal(fields)?,
        deprecated_aliases: match fields.get("deprecated_aliases") {
            // ansible-core iterates a present value: None is its AliasError (found by fuzzing)
            Some(Some(Value::None)) => return Err(Unhandled::SpecDeprecatedAliasesNone),
            _ => deprecated_aliases(plain(fields, "deprecated_aliases")?)?,
        },
        sub: sub_options(&given, kind, elements, depth)?,
        keeps: false,
    };
    option.keeps = option.can_keep();
    Ok(option)
}

/// The `options` of a dict option (or list with dict elements); ansible-core only reads the
/// option-level checks and `apply_defaults` when there are options.
fn sub_options(
    given: &Given<'_>,
    kind: TypeKind,
    elements: Option<TypeKind>,
    depth: usize,
) -> Result<Option<Box<SubOptions>>, Unhandled> {
    let fields = given.fields;
    let made;
    let input = match (given.sub_input, plain(fields, "options")?) {
        (Some(sub), _) => sub,
        (None, Value::None) => return Ok(None),
        (None, Value::Dict(options)) => {
            let mut input = SpecInput::default();
            for (name, option) in options {
                let Value::Dict(option) = option else {
                    return Err(Unhandled::SpecOptionNotDict);
                };
                input.options.push((
                    name.to_string(),
                    option
                        .iter()
                        .map(|(k, v)| (k.to_string(), Some(v.clone())))
                        .collect(),
                ));
            }
            made = input;
            &made
        }
        (None, _) => return Err(Unhandled::SpecOptionsNotDict),
    };
    let holds_dicts =
        kind == TypeKind::Dict || (kind == TypeKind::List && elements == Some(TypeKind::Dict));
    if !holds_dicts {
        return Err(Unhandled::SpecOptionsOnNonDict);
    }
    let check = |key: &str| plain(fields, key).map(|v| Some(v.clone()));
    let checks = [
        check("mutually_exclusive")?,
        check("required_together")?,
        check("required_one_of")?,
        check("required_if")?,
        check("required_by")?,
    ];
    let [a, b, c, d, e] = &checks;
    Ok(Some(Box::new(SubOptions {
        spec: CompiledSpec::compile_at(input, [a, b, c, d, e], depth + 1, given.callable_names)?,
        apply_defaults: flag(plain(fields, "apply_defaults")?)?,
    })))
}

fn removal(fields: &OptionInput) -> Result<Option<Box<Removal>>, Unhandled> {
    let collection_name = plain(fields, "removed_from_collection")?.clone();
    let date = plain(fields, "removed_at_date")?;
    let version = plain(fields, "removed_in_version")?;
    Ok(match (date, version) {
        (Value::None, Value::None) => None,
        (Value::None, when) => Some(Box::new(Removal {
            at_date: false,
            when: when.clone(),
            collection_name,
        })),
        (when, _) => Some(Box::new(Removal {
            at_date: true,
            when: when.clone(),
            collection_name,
        })),
    })
}

fn deprecated_aliases(v: &Value) -> Result<Vec<DeprecatedAlias>, Unhandled> {
    const REASON: Unhandled = Unhandled::SpecDeprecatedAliasesMalformed;
    each_entry(v, REASON, |entry| {
        let Value::Dict(d) = entry else {
            return Err(REASON);
        };
        let Some(Value::Str(name)) = d.get("name") else {
            return Err(REASON);
        };
        let get = |k: &str| d.get(k).cloned().unwrap_or(Value::None);
        Ok(DeprecatedAlias {
            name: name.to_string(),
            version: get("version"),
            date: get("date"),
            collection_name: get("collection_name"),
        })
    })
}

/// Each entry of a list through `each`, in order; no entries for `None`, `reason` for
/// anything but a list.
fn each_entry<T>(
    v: &Value,
    reason: Unhandled,
    each: impl FnMut(&Value) -> Result<T, Unhandled>,
) -> Result<Vec<T>, Unhandled> {
    match v {
        Value::None => Ok(Vec::new()),
        Value::List(entries) => entries.iter().map(each).collect(),
        _ => Err(reason),
    }
}

fn choices(v: &Value) -> Result<Option<Vec<Value>>, Unhandled> {
    match v {
        Value::None => Ok(None),
        Value::List(items) => {
            let printable = items.iter().all(|c| {
                matches!(
                    c,
                    Value::None | Value::Bool(_) | Value::Int(_) | Value::Str(_)
                )
            });
            if printable {
                Ok(Some(items.clone()))
            } else {
                Err(Unhandled::SpecChoicesNotScalars)
            }
        }
        _ => Err(Unhandled::SpecChoicesNotList),
    }
}

/// A list of str; `None` when absent.
fn names(v: &Value, reason: Unhandled) -> Result<Option<Vec<String>>, Unhandled> {
    match v {
        Value::None => Ok(None),
        Value::List(items) => items
            .iter()
            .map(|i| match i {
                Value::Str(s) => Ok(s.to_string()),
                _ => Err(reason),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        _ => Err(reason),
    }
}

fn alias_table(options: &[OptionSpec]) -> Result<Vec<(String, usize)>, Unhandled> {
    // A deprecated alias named like an option would be seen or not depending on alias order.
    let odd_deprecation = options
        .iter()
        .flat_map(|o| &o.deprecated_aliases)
        .any(|d| options.iter().any(|o| *o.name == *d.name));
    if odd_deprecation {
        return Err(Unhandled::SpecDeprecatedAliasLikeOption);
    }
    let mut table: Vec<(String, usize)> = Vec::new();
    for (index, option) in options.iter().enumerate() {
        for alias in &option.aliases {
            let clash = options.iter().any(|o| *o.name == **alias)
                || table.iter().any(|(a, i)| a == alias && *i != index);
            if clash {
                return Err(Unhandled::SpecAliasAlsoAnotherName);
            }
            if !table.iter().any(|(a, _)| a == alias) {
                table.push((alias.clone(), index));
            }
        }
    }
    Ok(table)
}

fn present(v: &Option<Value>) -> Result<&Value, Unhandled> {
    v.as_ref().ok_or(Unhandled::SpecCheckNotPlainData)
}

fn term_groups(v: &Option<Value>) -> Result<Vec<Vec<String>>, Unhandled> {
    const REASON: Unhandled = Unhandled::SpecCheckTermsNotStrLists;
    each_entry(present(v)?, REASON, |g| match g {
        Value::List(_) => names(g, REASON).map(Option::unwrap_or_default),
        _ => Err(REASON),
    })
}

fn required_if(v: &Option<Value>) -> Result<Vec<RequiredIf>, Unhandled> {
    const REASON: Unhandled = Unhandled::SpecRequiredIfMalformed;
    each_entry(present(v)?, REASON, |entry| {
        let Value::List(parts) = entry else {
            return Err(REASON);
        };
        let (key, value, reqs, any) = match parts.as_slice() {
            [k, v, r] => (k, v, r, false),
            [k, v, r, Value::Bool(any)] => (k, v, r, *any),
            _ => return Err(REASON),
        };
        let Value::Str(key) = key else {
            return Err(REASON);
        };
        if value.scalar_text().is_none() || !matches!(reqs, Value::List(_)) {
            return Err(REASON);
        }
        Ok(RequiredIf {
            key: key.to_string(),
            value: value.clone(),
            requirements: names(reqs, REASON)?.unwrap_or_default(),
            any,
        })
    })
}

fn required_by(v: &Option<Value>) -> Result<Vec<(String, Vec<String>)>, Unhandled> {
    const REASON: Unhandled = Unhandled::SpecRequiredByMalformed;
    match present(v)? {
        Value::None => Ok(Vec::new()),
        Value::Dict(map) => map
            .iter()
            .map(|(key, value)| match value {
                Value::Str(single) => Ok((key.to_string(), vec![single.to_string()])),
                _ => Ok((key.to_string(), names(value, REASON)?.ok_or(REASON)?)),
            })
            .collect(),
        _ => Err(REASON),
    }
}
