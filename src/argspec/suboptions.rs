//! Sub-options (`options` on a dict or list-of-dicts option): the recursive no_log and
//! deprecation listings ansible-core makes over the raw parameters, and the validation of
//! each sub-parameter dict once the top level is done.

use super::prefix::Prefix;
use super::spec::CompiledSpec;
use super::validate::{secret_strings, Context, Descent, NoLogSource, Outcome};

use super::value::{Params, Value};
use super::Unhandled;

const NOT_A_DICT: Unhandled = Unhandled::SubOptionNotDict;

impl CompiledSpec {
    /// `_list_no_log_values`: no_log option values, sub-options included (as given: their
    /// aliases are not resolved yet).
    pub(super) fn collect_no_log(
        &self,
        params: &Params,
        out: &mut Outcome,
    ) -> Result<(), Unhandled> {
        for &index in &self.at.listed {
            let option = &self.options[index];
            self.list_no_log(option, params.get(&option.name), out)?;
        }
        Ok(())
    }

    /// `collect_no_log` where each option's position in `params` is known (`given_slots`).
    pub(super) fn collect_no_log_at(
        &self,
        params: &Params,
        slots: &[Option<usize>],
        out: &mut Outcome,
    ) -> Result<(), Unhandled> {
        for &index in &self.at.listed {
            let value = slots[index]
                .and_then(|p| params.get_index(p))
                .map(|(_, v)| v);
            self.list_no_log(&self.options[index], value, out)?;
        }
        Ok(())
    }

    fn list_no_log(
        &self,
        option: &super::spec::OptionSpec,
        value: Option<&Value>,
        out: &mut Outcome,
    ) -> Result<(), Unhandled> {
        if option.no_log {
            if let Some(value) = value.filter(|v| v.truthy()) {
                secret_strings(value, NoLogSource::Given, &mut out.no_log_values)?;
            }
        }
        let (Some(sub), Some(value)) = (&option.sub, value) else {
            return Ok(());
        };
        match value {
            Value::None => Ok(()),
            Value::Dict(dict) => sub.spec.collect_no_log(dict, out),
            Value::List(items) => {
                // Every item a dict, or the call left to ansible-core.
                if !items.iter().all(|i| matches!(i, Value::Dict(_))) {
                    return Err(NOT_A_DICT);
                }
                for item in items {
                    if let Value::Dict(dict) = item {
                        sub.spec.collect_no_log(dict, out)?;
                    }
                }
                Ok(())
            }
            _ => Err(NOT_A_DICT),
        }
    }

    /// `_list_deprecations`: options marked for removal that were given, sub-options named
    /// `parent["child"]`; sub-option values that are not dicts are passed over.
    pub(super) fn collect_deprecations(&self, params: &Params, prefix: &str, out: &mut Outcome) {
        if !self.has_removals {
            return; // nothing to find (and no error to meet: non-dicts are passed over)
        }
        for option in &self.options {
            let below = option.sub.as_ref().is_some_and(|s| s.spec.has_removals);
            if option.removal.is_none() && !below {
                continue;
            }
            let Some(value) = params.get(&option.name) else {
                continue;
            };
            let name = if prefix.is_empty() {
                option.name.to_string()
            } else {
                format!("{prefix}[\"{}\"]", option.name)
            };
            if let Some(removal) = &option.removal {
                out.deprecations.push(vec![
                    ("msg", Value::Str(format!("Param '{name}' is deprecated. See the module docs for more information").into())),
                    (if removal.at_date { "date" } else { "version" }, removal.when.clone()),
                    ("collection_name", removal.collection_name.clone()),
                ]);
            }
            let Some(sub) = &option.sub else { continue };
            let dicts: Vec<&Params> = match value {
                Value::Dict(d) => vec![d],
                Value::List(items) => items
                    .iter()
                    .filter_map(|i| match i {
                        Value::Dict(d) => Some(d),
                        _ => None,
                    })
                    .collect(),
                _ => Vec::new(),
            };
            for dict in dicts {
                sub.spec.collect_deprecations(dict, &name, out);
            }
        }
    }

    /// `_validate_sub_spec`: each sub-parameter dict validated like the top level, with the
    /// options context in messages; alias deprecations are collected into `down.deferred`.
    /// `slots`: where each option is in `params` (`check_level`'s answer).
    pub(super) fn validate_sub_options<'s>(
        &'s self,
        params: &mut Params,
        slots: &[Option<usize>],
        cx: &Context<'_>,
        prefix: Prefix<'_>,
        down: &mut Descent<'s, '_>,
    ) -> Result<(), Unhandled> {
        for &index in &self.at.sub {
            let option = &self.options[index];
            let Some(sub) = &option.sub else { continue };
            let mut slot = match slots.get(index) {
                Some(slot) => *slot,
                None => params.get_index_of(&*option.name),
            };
            let missing =
                slot.is_none_or(|p| matches!(params.get_index(p), None | Some((_, Value::None))));
            if missing {
                if !sub.apply_defaults {
                    continue;
                }
                slot = Some(super::validate::insert_option(
                    params,
                    option,
                    Value::Dict(Params::default()),
                ));
            }
            let listed = option.kind == super::spec::TypeKind::List;
            down.context.push(&option.name);
            let value = slot.and_then(|p| params.get_index_mut(p)).map(|(_, v)| v);
            match value {
                Some(Value::Dict(dict)) => {
                    let prefix = Prefix::Below {
                        parent: &prefix,
                        name: &option.name,
                        index: None,
                    };
                    sub.spec.validate_sub_dict(dict, cx, prefix, down)?;
                }
                Some(Value::List(items)) => {
                    // Every item a dict, or nothing done (no fallback run) before giving up.
                    if !items.iter().all(|i| matches!(i, Value::Dict(_))) {
                        return Err(NOT_A_DICT);
                    }
                    for (at, item) in items.iter_mut().enumerate() {
                        let Value::Dict(dict) = item else {
                            return Err(NOT_A_DICT);
                        };
                        let prefix = Prefix::Below {
                            parent: &prefix,
                            name: &option.name,
                            index: listed.then_some(at),
                        };
                        sub.spec.validate_sub_dict(dict, cx, prefix, down)?;
                    }
                }
                _ => return Err(NOT_A_DICT),
            }
            down.context.pop();
        }
        Ok(())
    }

    /// One sub-parameter dict: its fallbacks (ansible-core's own), then its validation.
    fn validate_sub_dict<'s>(
        &'s self,
        params: &mut Params,
        cx: &Context<'_>,
        prefix: Prefix<'_>,
        down: &mut Descent<'s, '_>,
    ) -> Result<(), Unhandled> {
        if let (Some(source), true) = (self.source, self.has_fallbacks()) {
            let (added, secrets) = cx.delegate.fallbacks(source, params)?;
            params.extend(added.into_iter().map(|(k, v)| (k.into(), v)));
            down.out.no_log_values.extend(secrets);
        }
        let mut found_deprecated = Vec::new();
        if self.at.deprecated_aliases {
            for alias in self.options.iter().flat_map(|o| &o.deprecated_aliases) {
                if params.contains_key(alias.name.as_str()) {
                    found_deprecated.push(alias);
                }
            }
        }
        let (both, shared, given, unknown) = self.resolve_aliases_at(params);
        if !both.is_empty() {
            let prefix = prefix.text();
            for (option, alias) in both {
                down.out.warnings_to_emit.push(format!(
                    "Both option {prefix}{option} and its alias {prefix}{alias} are set."
                ));
            }
        }
        if !found_deprecated.is_empty() {
            let prefix = prefix.text();
            for alias in found_deprecated {
                down.deferred.push(super::validate::alias_deprecation(
                    &format!("{prefix}{}", alias.name),
                    alias,
                ));
            }
        }
        self.collect_no_log_at(params, &given, down.out)?;
        if unknown {
            self.collect_unsupported(params, &down.context, down.out);
        }
        let slots = self.check_level(params, cx, &down.context, given, down.out, false)?;
        self.validate_sub_options(params, &slots, cx, prefix, down)?;
        self.share_alias_values(params, shared)
    }
}
