//! One validation pass in the order `ArgumentSpecValidator.validate` makes it, so errors
//! come out in the same order with the same messages.

use super::checks;
use super::convert::convert;
use super::spec::{CompiledSpec, OptionSpec};
use super::value::{Params, Value};
use super::{CoreFlavor, Unhandled};

/// The `AnsibleValidationError` subclass of each error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    Alias,
    MutuallyExclusive,
    Required,
    ArgumentType,
    Element,
    ArgumentValue,
    RequiredTogether,
    RequiredOneOf,
    RequiredIf,
    RequiredBy,
    Unsupported,
}

impl ErrorKind {
    pub fn class_name(self) -> &'static str {
        match self {
            ErrorKind::Alias => "AliasError",
            ErrorKind::MutuallyExclusive => "MutuallyExclusiveError",
            ErrorKind::Required => "RequiredError",
            ErrorKind::ArgumentType => "ArgumentTypeError",
            ErrorKind::Element => "ElementError",
            ErrorKind::ArgumentValue => "ArgumentValueError",
            ErrorKind::RequiredTogether => "RequiredTogetherError",
            ErrorKind::RequiredOneOf => "RequiredOneOfError",
            ErrorKind::RequiredIf => "RequiredIfError",
            ErrorKind::RequiredBy => "RequiredByError",
            ErrorKind::Unsupported => "UnsupportedError",
        }
    }
}

/// Everything a `ValidationResult` holds, for the glue to build one.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    pub params: Params,
    pub errors: Vec<(ErrorKind, String)>,
    /// Unsupported parameter names, in parameter order (ansible-core keeps a set).
    pub unsupported: Vec<String>,
    /// no_log values (ansible-core keeps a set).
    pub no_log_values: Vec<String>,
    /// (option, alias) for every option given under both names.
    pub alias_warnings: Vec<(String, String)>,
}

impl Outcome {
    fn check(&mut self, kind: ErrorKind, message: Option<String>) {
        if let Some(message) = message {
            self.errors.push((kind, message));
        }
    }
}

impl CompiledSpec {
    /// Validate `params` (a deep copy the caller owns).
    pub fn validate(&self, params: Params, flavor: &CoreFlavor) -> Result<Outcome, Unhandled> {
        let mut out = Outcome { params, ..Outcome::default() };
        self.resolve_aliases(&mut out);
        for option in self.options.iter().filter(|o| o.no_log) {
            if let Some(value) = out.params.get(&option.name).filter(|v| v.truthy()) {
                secret_strings(value, &mut out.no_log_values)?;
            }
        }
        out.unsupported = out
            .params
            .keys()
            .filter(|k| !self.is_legal(k))
            .cloned()
            .collect();
        let exclusive = checks::mutually_exclusive(&self.mutually_exclusive, &out.params);
        out.check(ErrorKind::MutuallyExclusive, exclusive);
        self.set_defaults(&mut out, false)?;
        let required = self.options.iter().filter(|o| o.required).map(|o| o.name.as_str());
        let missing = checks::required_arguments(required, &out.params);
        out.check(ErrorKind::Required, missing);
        for option in &self.options {
            self.check_type(option, &mut out, flavor)?;
        }
        for option in &self.options {
            check_choices(option, &mut out)?;
        }
        let p = &out.params;
        let found = [
            (ErrorKind::RequiredTogether, checks::required_together(&self.required_together, p)),
            (ErrorKind::RequiredOneOf, checks::required_one_of(&self.required_one_of, p)),
            (ErrorKind::RequiredIf, checks::required_if(&self.required_if, p)),
            (ErrorKind::RequiredBy, checks::required_by(&self.required_by, p)),
        ];
        for (kind, message) in found {
            out.check(kind, message);
        }
        self.set_defaults(&mut out, true)?;
        if !out.unsupported.is_empty() {
            let message = self.unsupported_message(&out.unsupported);
            out.errors.push((ErrorKind::Unsupported, message));
        }
        Ok(out)
    }

    /// Copy each alias's value to its option; the alias key stays, as in ansible-core.
    fn resolve_aliases(&self, out: &mut Outcome) {
        for option in &self.options {
            for alias in &option.aliases {
                if let Some(value) = out.params.get(alias).cloned() {
                    if out.params.contains_key(&option.name) {
                        out.alias_warnings.push((option.name.clone(), alias.clone()));
                    }
                    out.params.insert(option.name.clone(), value);
                }
            }
        }
    }

    /// Options not given get their default: first only the non-None ones, at the end all.
    fn set_defaults(&self, out: &mut Outcome, all: bool) -> Result<(), Unhandled> {
        for option in &self.options {
            if out.params.contains_key(&option.name) || !(all || option.default != Value::None) {
                continue;
            }
            if option.no_log && option.default.truthy() {
                secret_strings(&option.default, &mut out.no_log_values)?;
            }
            out.params.insert(option.name.clone(), option.default.clone());
        }
        Ok(())
    }

    fn check_type(&self, option: &OptionSpec, out: &mut Outcome, flavor: &CoreFlavor) -> Result<(), Unhandled> {
        let Some(value) = out.params.get(&option.name) else { return Ok(()) };
        if *value == Value::None && !option.required && option.default == Value::None {
            return Ok(());
        }
        let converted = match convert(option.kind, value, flavor)? {
            Ok(converted) => converted,
            Err(reason) => {
                let message = format!(
                    "argument '{}' is of type {} and we were unable to convert to {}: {reason}",
                    option.name,
                    value.type_name(),
                    option.kind.name()
                );
                out.errors.push((ErrorKind::ArgumentType, message));
                return Ok(());
            }
        };
        let converted = match (option.elements, converted) {
            (Some(kind), Value::List(items)) => {
                let mut kept = Vec::with_capacity(items.len());
                for item in items {
                    match convert(kind, &item, flavor)? {
                        Ok(v) => kept.push(v),
                        Err(reason) => out.errors.push((
                            ErrorKind::Element,
                            format!(
                                "Elements value for option '{}' is of type {} and we were unable to convert to {}: {reason}",
                                option.name,
                                item.type_name(),
                                kind.name()
                            ),
                        )),
                    }
                }
                Value::List(kept)
            }
            (Some(_), _) => return Err(Unhandled("value: elements of a non-list")),
            (None, converted) => converted,
        };
        out.params.insert(option.name.clone(), converted);
        Ok(())
    }

    fn unsupported_message(&self, unsupported: &[String]) -> String {
        let mut names: Vec<&str> = unsupported.iter().map(String::as_str).collect();
        names.sort_unstable();
        names.dedup();
        let mut supported: Vec<&str> = self.options.iter().map(|o| o.name.as_str()).collect();
        supported.sort_unstable();
        let mut text = supported.join(", ");
        let mut aliases: Vec<&str> = self.aliases.iter().map(|(a, _)| a.as_str()).collect();
        if !aliases.is_empty() {
            aliases.sort_unstable();
            text.push_str(&format!(" ({})", aliases.join(", ")));
        }
        format!("{}. Supported parameters include: {text}.", names.join(", "))
    }
}

fn contains(choices: &[Value], value: &Value) -> bool {
    choices.iter().any(|c| c.py_eq(value))
}

fn text_of(value: &Value) -> Result<String, Unhandled> {
    value.scalar_text().ok_or(Unhandled("value: choice error showing a float or container"))
}

fn check_choices(option: &OptionSpec, out: &mut Outcome) -> Result<(), Unhandled> {
    let (Some(choices), Some(value)) = (&option.choices, out.params.get(&option.name)) else {
        return Ok(());
    };
    let choices_text = || -> Result<String, Unhandled> {
        Ok(choices.iter().map(text_of).collect::<Result<Vec<_>, _>>()?.join(", "))
    };
    if let Value::List(items) = value {
        let diff: Vec<&Value> = items.iter().filter(|i| !contains(choices, i)).collect();
        if !diff.is_empty() {
            let diff_text = diff.into_iter().map(text_of).collect::<Result<Vec<_>, _>>()?;
            let message = format!(
                "value of {} must be one or more of: {}. Got no match for: {}",
                option.name,
                choices_text()?,
                diff_text.join(", ")
            );
            out.errors.push((ErrorKind::ArgumentValue, message));
        }
        return Ok(());
    }
    if contains(choices, value) {
        return Ok(());
    }
    let mut value = value.clone();
    // A YAML-made 'True'/'False' takes the one boolean spelling the choices offer.
    for (text, set) in [("False", BOOL_FALSE), ("True", BOOL_TRUE)] {
        if value == Value::Str(text.into()) {
            if let Some(only) = single_boolean_choice(choices, set)? {
                value = only;
                out.params.insert(option.name.clone(), value.clone());
            }
        }
    }
    if !contains(choices, &value) {
        let message = format!(
            "value of {} must be one of: {}, got: {}",
            option.name,
            choices_text()?,
            text_of(&value)?
        );
        out.errors.push((ErrorKind::ArgumentValue, message));
    }
    Ok(())
}

const BOOL_TRUE: &[&str] = &["y", "yes", "on", "1", "true", "t"];
const BOOL_FALSE: &[&str] = &["n", "no", "off", "0", "false", "f"];

/// `BOOLEANS_X & set(choices)` when it has exactly one member; numbers in the overlap make
/// the member CPython keeps depend on set internals, so they are left to ansible-core.
fn single_boolean_choice(choices: &[Value], set: &[&str]) -> Result<Option<Value>, Unhandled> {
    let mut found: Vec<&str> = Vec::new();
    for choice in choices {
        match choice {
            Value::Str(s) if set.contains(&s.as_str()) => {
                if !found.contains(&s.as_str()) {
                    found.push(s);
                }
            }
            Value::Int(_) | Value::Bool(_) | Value::Float(_) => {
                return Err(Unhandled("value: True/False against numeric choices"))
            }
            _ => {}
        }
    }
    Ok((found.len() == 1).then(|| Value::Str(found[0].to_owned())))
}

/// `_return_datastructure_name`: the strings a no_log value contributes.
fn secret_strings(value: &Value, into: &mut Vec<String>) -> Result<(), Unhandled> {
    match value {
        Value::Str(s) if !s.is_empty() => into.push(s.clone()),
        Value::Str(_) | Value::None | Value::Bool(_) => {}
        Value::Int(i) => into.push(i.to_string()),
        Value::Float(_) => return Err(Unhandled("value: no_log float")),
        Value::List(items) => items.iter().try_for_each(|i| secret_strings(i, into))?,
        Value::Dict(map) => map.values().try_for_each(|v| secret_strings(v, into))?,
    }
    Ok(())
}
