//! One validation pass in the order `ArgumentSpecValidator.validate` makes it, so errors
//! come out in the same order with the same messages.
//!
//! One file past the project's usual length on purpose: the pass's steps stay together, in
//! the order they run, so that it reads against ansible-core's `validate()` step by step.

use super::checks;
use super::convert::convert;
use super::convert::Converted;
use super::prefix::Prefix;
use super::spec::TypeKind;
use super::spec::{CompiledSpec, OptionSpec};
use super::value::{Params, Value};
use super::{CoreFlavor, Delegate, Unhandled};

/// What validation needs besides the spec: version differences and the delegate.
pub struct Context<'a> {
    pub flavor: &'a CoreFlavor,
    pub delegate: &'a dyn Delegate,
}

impl Context<'_> {
    fn convert(&self, kind: TypeKind, value: &Value) -> Converted {
        match convert(kind, value, self.flavor) {
            Err(why) => self.delegate.convert(kind, value, why),
            done => done,
        }
    }

    /// `params`: the parameter dict holding `value` as `option`'s, after aliases.
    fn convert_option(
        &self,
        option: &OptionSpec,
        value: &Value,
        params: &Params,
        top_level: bool,
    ) -> Converted {
        let kind = option.kind;
        match convert(kind, value, self.flavor) {
            Err(why) if top_level => {
                // `_handle_aliases` copies the value of each alias given over the option's,
                // in spec order: the last one given wins.  (An alias is no other option's
                // name, and neither defaults nor fallbacks add one: the caller gave it.)
                let given_as = option
                    .aliases
                    .iter()
                    .rev()
                    .find(|alias| params.contains_key(alias.as_str()))
                    .map_or(option.name.as_str(), String::as_str);
                self.delegate
                    .convert_option(kind, value, why, &option.name, given_as)
            }
            Err(why) => self.delegate.convert(kind, value, why),
            done => done,
        }
    }
}

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
    /// Every kind, in declaration order.
    pub const ALL: [ErrorKind; 11] = [
        ErrorKind::Alias,
        ErrorKind::MutuallyExclusive,
        ErrorKind::Required,
        ErrorKind::ArgumentType,
        ErrorKind::Element,
        ErrorKind::ArgumentValue,
        ErrorKind::RequiredTogether,
        ErrorKind::RequiredOneOf,
        ErrorKind::RequiredIf,
        ErrorKind::RequiredBy,
        ErrorKind::Unsupported,
    ];

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

/// An alias given for an option with sub-options, with the dict or list it was given.
pub(super) struct SharedAlias {
    option: usize,
    alias: String,
    given: Value,
}

const ALIASED: Unhandled = Unhandled::AliasedSubOptionsMixed;

/// Everything a `ValidationResult` holds, for the glue to build one.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    pub params: Params,
    pub errors: Vec<(ErrorKind, String)>,
    /// Unsupported parameters, one group per (sub-)parameter dict, each in parameter order:
    /// ansible-core adds each group to its set as a set, and picks the supported names for
    /// its message from whichever item that set yields last, so the glue rebuilds the set.
    pub unsupported: Vec<UnsupportedGroup>,
    /// no_log values (ansible-core keeps a set), in the order ansible-core adds them.
    pub no_log_values: Vec<NoLogValue>,
    /// (option, alias) for every option given under both names.
    pub alias_warnings: Vec<(String, String)>,
    /// `_deprecations` entries: key/value pairs of each dict, in ansible-core's key order.
    pub deprecations: Vec<Vec<(&'static str, Value)>>,
    /// Messages ansible-core passes to `warn()` while validating sub-options, in order.
    pub warnings_to_emit: Vec<String>,
    /// The position in `params` of each top-level option, by option index (every option is
    /// there once validation is done, but for those in `none_tail`).
    pub option_positions: Vec<Option<usize>>,
    /// Top-level options (by index, in order) that ansible-core's second pass of defaults
    /// adds last with the value None, left out of `params` by `validate_leaving_none_tail`.
    pub none_tail: Vec<usize>,
}

/// One no_log string, and where ansible-core's set gets its object for the text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoLogValue {
    pub text: String,
    pub source: NoLogSource,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoLogSource {
    /// A str of the parameters (after aliases and fallbacks): that object.
    Given,
    /// A str of an option's default in the spec: that object.
    Default,
    /// A new, plain str: `str()` of an int, or an exact str the delegate found.
    Plain,
}

impl NoLogSource {
    pub fn name(self) -> &'static str {
        match self {
            NoLogSource::Given => "given",
            NoLogSource::Default => "default",
            NoLogSource::Plain => "plain",
        }
    }
}

impl NoLogValue {
    pub fn new(text: &str, source: NoLogSource) -> Self {
        let text = text.to_owned();
        NoLogValue { text, source }
    }
}

/// What validating sub-options carries from one level down to the next: the names of the
/// options above (the context of messages), the outcome being filled, and the alias
/// deprecations kept for its end.
pub(super) struct Descent<'s, 'o> {
    pub(super) context: Vec<&'s str>,
    pub(super) out: &'o mut Outcome,
    pub(super) deferred: &'o mut Vec<Vec<(&'static str, Value)>>,
}

/// Unsupported keys of one parameter dict: each as its path (options context + key; a
/// single name at top level), with the option names and aliases of the spec it was met in.
#[derive(Debug, Clone, Default)]
pub struct UnsupportedGroup {
    pub paths: Vec<Vec<String>>,
    pub supported: Vec<String>,
    pub aliases: Vec<(String, String)>,
}

impl Outcome {
    fn check(&mut self, kind: ErrorKind, message: Option<String>, context: &[&str]) {
        if let Some(message) = message {
            self.errors.push((kind, in_context(message, context)));
        }
    }
}

/// `"<msg> found in a -> b"` inside sub-options.
fn in_context(message: String, context: &[&str]) -> String {
    if context.is_empty() {
        message
    } else {
        format!("{message} found in {}", context.join(" -> "))
    }
}

pub(super) fn alias_deprecation(
    name: &str,
    alias: &super::spec::DeprecatedAlias,
) -> Vec<(&'static str, Value)> {
    vec![
        (
            "msg",
            Value::Str(
                format!("Alias '{name}' is deprecated. See the module docs for more information")
                    .into(),
            ),
        ),
        ("version", alias.version.clone()),
        ("date", alias.date.clone()),
        ("collection_name", alias.collection_name.clone()),
    ]
}

impl CompiledSpec {
    /// `params[name] = value` for option `index` (its name's hash known): the key's position.
    pub fn insert_option(&self, params: &mut Params, index: usize, value: Value) -> usize {
        insert_option(params, &self.options[index], value)
    }

    /// Validate `params` (a deep copy the caller owns).
    pub fn validate(&self, params: Params, cx: &Context<'_>) -> Result<Outcome, Unhandled> {
        self.validate_top(params, cx, false)
    }

    /// `validate`, except that the top-level options the last pass of defaults would add with
    /// the value None (after every other key, in spec order) may be listed in
    /// `Outcome::none_tail` instead of added: a caller building the result adds them for
    /// less than the core's map would cost.
    pub fn validate_leaving_none_tail(
        &self,
        params: Params,
        cx: &Context<'_>,
    ) -> Result<Outcome, Unhandled> {
        self.validate_top(params, cx, true)
    }

    fn validate_top(
        &self,
        mut params: Params,
        cx: &Context<'_>,
        leave_none_tail: bool,
    ) -> Result<Outcome, Unhandled> {
        let mut out = Outcome::default();
        if self.at.deprecated_aliases {
            for alias in self.options.iter().flat_map(|o| &o.deprecated_aliases) {
                if params.contains_key(alias.name.as_str()) {
                    out.deprecations.push(alias_deprecation(&alias.name, alias));
                }
            }
        }
        let (both, shared, given, unknown) = self.resolve_aliases_at(&mut params);
        out.alias_warnings = both;
        self.collect_no_log_at(&params, &given, &mut out)?;
        self.collect_deprecations(&params, "", &mut out);
        if unknown {
            self.collect_unsupported(&params, &[], &mut out);
        }
        // Later steps only change values or add keys already there: positions stay valid.
        out.option_positions =
            self.check_level(&mut params, cx, &[], given, &mut out, leave_none_tail)?;
        let mut deferred = Vec::new();
        let slots = std::mem::take(&mut out.option_positions);
        let mut down = Descent {
            context: Vec::new(),
            out: &mut out,
            deferred: &mut deferred,
        };
        let done = self.validate_sub_options(&mut params, &slots, cx, Prefix::Top, &mut down);
        out.option_positions = slots;
        done?;
        self.share_alias_values(&mut params, shared)?;
        out.deprecations.extend(deferred);
        out.params = params;
        Ok(out)
    }

    /// What ansible-core checks for every parameter dict, top level or sub-options, from the
    /// mutually-exclusive check to the final defaults; the position of each option in `params`.
    /// `leave_none_tail`: see `validate_leaving_none_tail`.
    pub(super) fn check_level(
        &self,
        params: &mut Params,
        cx: &Context<'_>,
        context: &[&str],
        given: Vec<Option<usize>>,
        out: &mut Outcome,
        leave_none_tail: bool,
    ) -> Result<Vec<Option<usize>>, Unhandled> {
        // `given`: each option's position in `params` (`given_slots`): nothing is removed from
        // the dict here, and what is added goes at the end, so positions stay valid.
        let exclusive = checks::mutually_exclusive_given(
            &self.mutually_exclusive,
            &self.mutually_exclusive_at,
            &given,
            params,
        );
        out.check(ErrorKind::MutuallyExclusive, exclusive, context);
        // Every option ends up in the dict (its value or default): room for all at once (if
        // there is not already: reserving more would grow the entries to the table's size).
        if params.capacity() < params.len().max(self.options.len()) {
            params.reserve(self.options.len().saturating_sub(params.len()));
        }
        let mut slots = self.set_defaults(params, out, cx, given)?;
        let missing = checks::required_arguments(
            self.at
                .required
                .iter()
                .filter(|&&i| slots[i].is_none())
                .map(|&i| &*self.options[i].name),
        );
        out.check(ErrorKind::Required, missing, context);
        for (option, slot) in self.options.iter().zip(&slots) {
            if let Some(slot) = *slot {
                self.check_type(option, params, slot, out, cx, context)?;
            }
        }
        for &index in &self.at.choices {
            if let Some(slot) = slots[index] {
                check_choices(&self.options[index], params, slot, out, context)?;
            }
        }
        let p = &*params;
        let found = [
            (
                ErrorKind::RequiredTogether,
                checks::required_together(&self.required_together, p),
            ),
            (
                ErrorKind::RequiredOneOf,
                checks::required_one_of(&self.required_one_of, p),
            ),
            (
                ErrorKind::RequiredIf,
                checks::required_if(&self.required_if, p),
            ),
            (
                ErrorKind::RequiredBy,
                checks::required_by(&self.required_by, p),
            ),
        ];
        for (kind, message) in found {
            out.check(kind, message, context);
        }
        // The second pass of defaults: every option still missing, None included (all of them
        // None: the first pass added every other default).  Sub-option validation, which comes
        // next, adds `{}` for a missing option with `apply_defaults`: then all are added here.
        if leave_none_tail && self.at.apply_defaults.iter().all(|&i| slots[i].is_some()) {
            // Sized first: collecting a filter would grow the vector step by step.
            let missing = slots.iter().filter(|s| s.is_none()).count();
            out.none_tail = Vec::with_capacity(missing);
            out.none_tail
                .extend((0..self.options.len()).filter(|&i| slots[i].is_none()));
            return Ok(slots);
        }
        for (option, slot) in self.options.iter().zip(&mut slots) {
            if slot.is_none() {
                *slot = Some(self.set_default(option, params, out, cx)?);
            }
        }
        Ok(slots)
    }

    /// Keys of `params` that are neither options nor aliases.
    pub(super) fn collect_unsupported(&self, params: &Params, context: &[&str], out: &mut Outcome) {
        let paths: Vec<Vec<String>> = params
            .keys()
            .filter(|k| !self.is_legal(k))
            .map(|k| {
                context
                    .iter()
                    .map(|c| c.to_string())
                    .chain([k.to_string()])
                    .collect()
            })
            .collect();
        if !paths.is_empty() {
            let supported = self.options.iter().map(|o| o.name.to_string()).collect();
            let aliases = self
                .aliases
                .iter()
                .map(|(a, i)| (a.clone(), self.options[*i].name.to_string()))
                .collect();
            out.unsupported.push(UnsupportedGroup {
                paths,
                supported,
                aliases,
            });
        }
    }

    /// `resolve_aliases`, and where each option is afterwards, found once for the listings and
    /// checks that follow (nothing is removed from `params` from then on, and what is added
    /// goes at the end), with whether a key is not an option's name (see `given_slots`).
    /// Where every key is an option's name, no key is an alias: nothing to resolve.
    #[allow(clippy::type_complexity)]
    pub(super) fn resolve_aliases_at(
        &self,
        params: &mut Params,
    ) -> (
        Vec<(String, String)>,
        Vec<SharedAlias>,
        Vec<Option<usize>>,
        bool,
    ) {
        let (given, unknown) = self.given_slots(params);
        if !unknown {
            return (Vec::new(), Vec::new(), given, unknown);
        }
        let (both, shared) = self.resolve_aliases(params);
        let (given, unknown) = self.given_slots(params);
        (both, shared, given, unknown)
    }

    /// Copy each alias's value to its option (the alias key stays, as in ansible-core);
    /// (option, alias) for each option given under both names, and the aliases whose value
    /// ansible-core would share with a sub-options option (see `share_alias_values`).
    pub(super) fn resolve_aliases(
        &self,
        params: &mut Params,
    ) -> (Vec<(String, String)>, Vec<SharedAlias>) {
        let mut both = Vec::new();
        let mut shared = Vec::new();
        // No key an alias (the usual call): nothing to copy, asked once per key rather than
        // once per alias.
        if self.aliases.is_empty() || !params.keys().any(|k| self.is_alias(k)) {
            return (both, shared);
        }
        for (index, option) in self.options.iter().enumerate() {
            let mut last = None;
            for alias in &option.aliases {
                if let Some(value) = params.get(alias.as_str()).cloned() {
                    if params.contains_key(&option.name) {
                        both.push((option.name.to_string(), alias.clone()));
                    }
                    if option.sub.is_some() && matches!(value, Value::Dict(_) | Value::List(_)) {
                        last = Some(SharedAlias {
                            option: index,
                            alias: alias.clone(),
                            given: value.clone(),
                        });
                    } else {
                        last = None;
                    }
                    params.insert(option.name.clone(), value);
                }
            }
            shared.extend(last);
        }
        (both, shared)
    }

    /// In ansible-core an alias and its option hold the same dict/list object, and sub-option
    /// validation changes the dicts in place, so the alias key ends up showing them too.
    pub(super) fn share_alias_values(
        &self,
        params: &mut Params,
        shared: Vec<SharedAlias>,
    ) -> Result<(), Unhandled> {
        for SharedAlias {
            option,
            alias,
            given,
        } in shared
        {
            let option = &self.options[option];
            let Some(now) = params.get(&option.name).cloned() else {
                continue;
            };
            let seen = match (option.kind, given) {
                (_, Value::Dict(_)) => now,
                (TypeKind::Dict, Value::List(_)) => now,
                (_, Value::List(items)) => {
                    // The option got a new list (its elements checked one by one) holding the
                    // same dicts; other elements failed the check and stay only in the alias.
                    let Value::List(converted) = now else {
                        return Err(ALIASED);
                    };
                    let mut converted = converted.into_iter();
                    let mut seen = Vec::with_capacity(items.len());
                    for item in items {
                        seen.push(match item {
                            Value::Dict(_) => converted.next().ok_or(ALIASED)?,
                            Value::Str(_) => return Err(ALIASED),
                            other => other,
                        });
                    }
                    Value::List(seen)
                }
                _ => continue,
            };
            params.insert(alias.into(), seen);
        }
        Ok(())
    }

    /// The first pass of defaults (options not given with a default other than None); the
    /// position of every option in `params` afterwards.
    /// Where each option is in `params` (by option index): the parameters' keys looked up
    /// (fewer than the options, as a rule), rather than every option's name in the parameters;
    /// and whether a key is not an option's name (an alias, or unsupported).
    pub(super) fn given_slots(&self, params: &Params) -> (Vec<Option<usize>>, bool) {
        let mut slots = vec![None; self.options.len()];
        let mut unknown = false;
        for (position, key) in params.keys().enumerate() {
            match self.key_index(key).and_then(|i| slots.get_mut(i)) {
                Some(slot) => *slot = Some(position),
                None => unknown = true,
            }
        }
        (slots, unknown)
    }

    /// `slots`: where each option given is (`given_slots`).  A default only adds its own
    /// option's key, so the positions of the others stay as found.
    fn set_defaults(
        &self,
        params: &mut Params,
        out: &mut Outcome,
        cx: &Context<'_>,
        mut slots: Vec<Option<usize>>,
    ) -> Result<Vec<Option<usize>>, Unhandled> {
        for &index in &self.at.defaulted {
            if slots[index].is_none() {
                slots[index] = Some(self.set_default(&self.options[index], params, out, cx)?);
            }
        }
        Ok(slots)
    }

    /// An option not given gets its default (its no_log strings recorded); its position.
    fn set_default(
        &self,
        option: &OptionSpec,
        params: &mut Params,
        out: &mut Outcome,
        cx: &Context<'_>,
    ) -> Result<usize, Unhandled> {
        if option.no_log && option.default.truthy() {
            match &option.default {
                Value::Str(s) => out
                    .no_log_values
                    .push(NoLogValue::new(s, NoLogSource::Default)),
                _ if cx.flavor.no_log_default_strings => secret_strings(
                    &option.default,
                    NoLogSource::Default,
                    &mut out.no_log_values,
                )?,
                _ => return Err(Unhandled::NoLogDefaultNotStr),
            }
        }
        Ok(insert_option(params, option, option.default.clone()))
    }

    fn check_type(
        &self,
        option: &OptionSpec,
        params: &mut Params,
        slot: usize,
        out: &mut Outcome,
        cx: &Context<'_>,
        context: &[&str],
    ) -> Result<(), Unhandled> {
        let Some((_, value)) = params.get_index(slot) else {
            return Ok(());
        };
        if matches!(value, Value::None) && !option.required && matches!(option.default, Value::None)
        {
            return Ok(());
        }
        if option.elements.is_none() && super::convert::unchanged(option.kind, value) {
            return Ok(()); // the checked value is the value as it is
        }
        if let Value::Kept(kept) = value {
            // Kept only for an option whose check returns it as it is, its elements checked.
            return match (option.kind, kept.dict) {
                (TypeKind::List, false) => Ok(()),
                _ => Err(Unhandled::KeptContainerOtherType),
            };
        }
        if let (TypeKind::List, Some(kind), Value::List(items)) =
            (option.kind, option.elements, value)
        {
            if items
                .iter()
                .all(|item| super::convert::unchanged(kind, item))
            {
                return Ok(()); // the list itself, each element as it is: nothing to change
            }
        }
        let found_in = |quote: &str, stop: &str| {
            if context.is_empty() {
                String::new()
            } else {
                format!(" found in {quote}{}{quote}{stop}", context.join(" -> "))
            }
        };
        // A list given for a list of elements is the list itself (to_list returns it): taken
        // out of `params` rather than copied (the checked list is put back below, and a
        // conversion that is not handled abandons `params` whole).
        let take_list = matches!(
            (option.kind, option.elements, value),
            (TypeKind::List, Some(_), Value::List(_))
        );
        let converted = match take_list {
            true => match params.get_index_mut(slot) {
                Some((_, value)) => std::mem::replace(value, Value::None),
                None => return Ok(()),
            },
            false => match cx.convert_option(option, value, params, context.is_empty())? {
                Ok(converted) => converted,
                Err(reason) => {
                    let message = format!(
                    "argument '{}' is of type {}{} and we were unable to convert to {}: {reason}",
                    option.name,
                    value.type_name(),
                    found_in("'", "."),
                    self.type_name(option.kind)
                );
                    out.errors.push((ErrorKind::ArgumentType, message));
                    return Ok(());
                }
            },
        };
        let converted = match (option.elements, converted) {
            (Some(kind), Value::List(items)) => {
                let mut kept = Vec::with_capacity(items.len());
                for item in items {
                    if super::convert::unchanged(kind, &item) {
                        kept.push(item); // the check returns the element as it is
                        continue;
                    }
                    match cx.convert(kind, &item)? {
                        Ok(v) => kept.push(v),
                        Err(reason) => out.errors.push((
                            ErrorKind::Element,
                            format!(
                                "Elements value for option '{}'{} is of type {} and we were unable to convert to {}: {reason}",
                                option.name,
                                found_in("'", ""),
                                item.type_name(),
                                self.type_name(kind)
                            ),
                        )),
                    }
                }
                Value::List(kept)
            }
            (Some(_), _) => return Err(Unhandled::ElementsOfNonList),
            (None, converted) => converted,
        };
        if let Some((_, value)) = params.get_index_mut(slot) {
            *value = converted;
        }
        Ok(())
    }
}

fn contains(choices: &[Value], value: &Value) -> bool {
    if let Value::Str(text) = value {
        // Only a str equals a str.
        return choices
            .iter()
            .any(|c| matches!(c, Value::Str(choice) if choice == text));
    }
    choices.iter().any(|c| c.py_eq(value))
}

/// `params[option.name] = value` with the name's hash known: the key's position.
pub(super) fn insert_option(params: &mut Params, option: &OptionSpec, value: Value) -> usize {
    use indexmap::map::raw_entry_v1::{RawEntryApiV1, RawEntryMut};
    match params
        .raw_entry_mut_v1()
        .from_key_hashed_nocheck(option.hash, &*option.name)
    {
        RawEntryMut::Occupied(mut entry) => {
            entry.insert(value);
            entry.index()
        }
        RawEntryMut::Vacant(entry) => {
            let index = entry.index();
            entry.insert_hashed_nocheck(option.hash, option.name.clone(), value);
            index
        }
    }
}

fn text_of(value: &Value) -> Result<String, Unhandled> {
    value
        .scalar_text()
        .ok_or(Unhandled::ChoiceErrorShowsFloatOrContainer)
}

fn check_choices(
    option: &OptionSpec,
    params: &mut Params,
    slot: usize,
    out: &mut Outcome,
    context: &[&str],
) -> Result<(), Unhandled> {
    let (Some(choices), Some((_, value))) = (&option.choices, params.get_index(slot)) else {
        return Ok(());
    };
    let choices_text = || -> Result<String, Unhandled> {
        Ok(choices
            .iter()
            .map(text_of)
            .collect::<Result<Vec<_>, _>>()?
            .join(", "))
    };
    if let Value::List(items) = value {
        let diff: Vec<&Value> = items.iter().filter(|i| !contains(choices, i)).collect();
        if !diff.is_empty() {
            let diff_text = diff
                .into_iter()
                .map(text_of)
                .collect::<Result<Vec<_>, _>>()?;
            let message = format!(
                "value of {} must be one or more of: {}. Got no match for: {}",
                option.name,
                choices_text()?,
                diff_text.join(", ")
            );
            out.errors
                .push((ErrorKind::ArgumentValue, in_context(message, context)));
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
                if let Some((_, slot)) = params.get_index_mut(slot) {
                    *slot = value.clone();
                }
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
        out.errors
            .push((ErrorKind::ArgumentValue, in_context(message, context)));
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
            Value::Str(s) if set.contains(&s.as_str()) && !found.contains(&s.as_str()) => {
                found.push(s)
            }
            Value::Int(_) | Value::Bool(_) | Value::Float(_) => {
                return Err(Unhandled::BoolAgainstNumericChoices)
            }
            _ => {}
        }
    }
    Ok((found.len() == 1).then(|| Value::Str(found[0].into())))
}

/// `_return_datastructure_name`: the strings a no_log value contributes; `found`: where its
/// str objects are.
pub(super) fn secret_strings(
    value: &Value,
    found: NoLogSource,
    into: &mut Vec<NoLogValue>,
) -> Result<(), Unhandled> {
    match value {
        Value::Str(s) if !s.is_empty() => into.push(NoLogValue::new(s, found)),
        Value::Str(_) | Value::None | Value::Bool(_) => {}
        Value::Int(i) => into.push(NoLogValue::new(&i.to_string(), NoLogSource::Plain)),
        Value::Float(_) => return Err(Unhandled::NoLogFloat),
        Value::List(items) => items
            .iter()
            .try_for_each(|i| secret_strings(i, found, into))?,
        Value::Dict(map) => map
            .values()
            .try_for_each(|v| secret_strings(v, found, into))?,
        Value::Kept(_) => return Err(Unhandled::NoLogKeptContainer),
    }
    Ok(())
}

#[cfg(test)]
#[path = "validate_tests.rs"]
mod tests;
