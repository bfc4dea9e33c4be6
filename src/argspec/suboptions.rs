//! Sub-options (`options` on a dict or list-of-dicts option): the recursive no_log and
//! deprecation listings ansible-core makes over the raw parameters, and the validation of
//! each sub-parameter dict once the top level is done.

use super::spec::CompiledSpec;
use super::validate::{secret_strings, Context, Outcome};
use super::value::{Params, Value};
use super::Unhandled;

const NOT_A_DICT: Unhandled = Unhandled("value: sub-option value that is not a dict");

/// The dicts a sub-option value holds: the value itself, or the items of a list.
fn sub_dicts(value: &Value) -> Result<Vec<&Params>, Unhandled> {
    match value {
        Value::Dict(d) => Ok(vec![d]),
        Value::List(items) => items
            .iter()
            .map(|i| match i {
                Value::Dict(d) => Ok(d),
                _ => Err(NOT_A_DICT),
            })
            .collect(),
        _ => Err(NOT_A_DICT),
    }
}

impl CompiledSpec {
    /// `_list_no_log_values`: no_log option values, sub-options included (as given: their
    /// aliases are not resolved yet).
    pub(super) fn collect_no_log(
        &self,
        params: &Params,
        out: &mut Outcome,
    ) -> Result<(), Unhandled> {
        for option in &self.options {
            if !option.no_log && option.sub.is_none() {
                continue;
            }
            let value = params.get(&option.name);
            if option.no_log {
                if let Some(value) = value.filter(|v| v.truthy()) {
                    secret_strings(value, &mut out.no_log_values)?;
                }
            }
            let (Some(sub), Some(value)) = (&option.sub, value) else {
                continue;
            };
            if !matches!(value, Value::None) {
                for dict in sub_dicts(value)? {
                    sub.spec.collect_no_log(dict, out)?;
                }
            }
        }
        Ok(())
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
                    ("msg", Value::Str(format!("Param '{name}' is deprecated. See the module docs for more information"))),
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
    /// options context in messages; alias deprecations are collected into `deferred`.
    pub(super) fn validate_sub_options(
        &self,
        params: &mut Params,
        cx: &Context<'_>,
        prefix: &str,
        context: &mut Vec<String>,
        out: &mut Outcome,
        deferred: &mut Vec<Vec<(&'static str, Value)>>,
    ) -> Result<(), Unhandled> {
        for option in &self.options {
            let Some(sub) = &option.sub else { continue };
            if sub.apply_defaults {
                if matches!(params.get(&option.name), None | Some(Value::None)) {
                    params.insert(option.name.clone(), Value::Dict(Params::default()));
                }
            } else if matches!(params.get(&option.name), None | Some(Value::None)) {
                continue;
            }
            let listed = option.kind == super::spec::TypeKind::List;
            context.push(option.name.to_string());
            let dicts: Vec<&mut Params> = match params.get_mut(&option.name) {
                Some(Value::Dict(d)) => vec![d],
                Some(Value::List(items)) => items
                    .iter_mut()
                    .map(|i| match i {
                        Value::Dict(d) => Ok(d),
                        _ => Err(NOT_A_DICT),
                    })
                    .collect::<Result<_, _>>()?,
                _ => return Err(NOT_A_DICT),
            };
            // The prefix only shows in the messages of aliases and of deeper sub-options:
            // not made for a sub-spec with neither.
            let named = !sub.spec.aliases.is_empty()
                || sub
                    .spec
                    .options
                    .iter()
                    .any(|o| o.sub.is_some() || !o.deprecated_aliases.is_empty());
            for (index, dict) in dicts.into_iter().enumerate() {
                let new_prefix = match (named, listed) {
                    (false, _) => String::new(),
                    (true, true) => format!("{prefix}{}[{index}].", option.name),
                    (true, false) => format!("{prefix}{}.", option.name),
                };
                if let (Some(source), true) = (sub.spec.source, sub.spec.has_fallbacks()) {
                    let (added, secrets) = cx.delegate.fallbacks(source, dict)?;
                    dict.extend(added.into_iter().map(|(k, v)| (k.into(), v)));
                    out.no_log_values.extend(secrets);
                }
                sub.spec
                    .validate_sub_level(dict, cx, &new_prefix, context, out, deferred)?;
            }
            context.pop();
        }
        Ok(())
    }

    fn validate_sub_level(
        &self,
        params: &mut Params,
        cx: &Context<'_>,
        prefix: &str,
        context: &mut Vec<String>,
        out: &mut Outcome,
        deferred: &mut Vec<Vec<(&'static str, Value)>>,
    ) -> Result<(), Unhandled> {
        let mut found_deprecated = Vec::new();
        for alias in self.options.iter().flat_map(|o| &o.deprecated_aliases) {
            if params.contains_key(alias.name.as_str()) {
                found_deprecated.push(alias);
            }
        }
        let (both, shared) = self.resolve_aliases(params);
        for (option, alias) in both {
            out.warnings_to_emit.push(format!(
                "Both option {prefix}{option} and its alias {prefix}{alias} are set."
            ));
        }
        for alias in found_deprecated {
            deferred.push(super::validate::alias_deprecation(
                &format!("{prefix}{}", alias.name),
                alias,
            ));
        }
        self.collect_no_log(params, out)?;
        self.collect_unsupported(params, context, out);
        self.check_level(params, cx, context, out, false)?;
        self.validate_sub_options(params, cx, prefix, context, out, deferred)?;
        self.share_alias_values(params, shared)
    }
}
