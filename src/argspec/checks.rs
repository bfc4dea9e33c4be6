//! The cross-option checks of `validation.py`, top level only: each returns the message of
//! the `TypeError` ansible-core raises (the first failing entry), or `None`.

use super::spec::RequiredIf;
use super::value::{Params, Value};

/// How many distinct terms are keys of `params` (`len(set(terms) & params.keys())`).
fn count_terms(terms: &[String], params: &Params) -> usize {
    let mut seen: Vec<&str> = Vec::new();
    for t in terms {
        if params.contains_key(t.as_str()) && !seen.contains(&t.as_str()) {
            seen.push(t);
        }
    }
    seen.len()
}

fn one(term: &String, params: &Params) -> usize {
    count_terms(std::slice::from_ref(term), params)
}

/// `check_mutually_exclusive` by lookups alone: what `mutually_exclusive_given` is tested
/// against.
#[cfg(test)]
pub fn mutually_exclusive(groups: &[Vec<String>], params: &Params) -> Option<String> {
    let failing: Vec<String> = groups
        .iter()
        .filter(|g| count_terms(g, params) > 1)
        .map(|g| g.join("|"))
        .collect();
    (!failing.is_empty())
        .then(|| format!("parameters are mutually exclusive: {}", failing.join(", ")))
}

/// `mutually_exclusive` where the options given are known: `given[i]` for a term naming
/// option `i` (`at`), a lookup in `params` for any other term.
pub fn mutually_exclusive_given(
    groups: &[Vec<String>],
    at: &[Vec<Option<usize>>],
    given: &[Option<usize>],
    params: &Params,
) -> Option<String> {
    let present = |term: &String, index: &Option<usize>| match index {
        Some(i) => given.get(*i).is_some_and(Option::is_some),
        None => params.contains_key(term.as_str()),
    };
    let mut failing: Vec<String> = Vec::new();
    for (group, indexes) in groups.iter().zip(at) {
        // Terms counted with repeats first: at most one present is the usual answer.
        let found = group
            .iter()
            .zip(indexes)
            .filter(|(t, i)| present(t, i))
            .count();
        if found > 1 && count_terms(group, params) > 1 {
            failing.push(group.join("|"));
        }
    }
    (!failing.is_empty())
        .then(|| format!("parameters are mutually exclusive: {}", failing.join(", ")))
}

pub fn required_one_of(groups: &[Vec<String>], params: &Params) -> Option<String> {
    groups
        .iter()
        .find(|g| count_terms(g, params) == 0)
        .map(|g| format!("one of the following is required: {}", g.join(", ")))
}

pub fn required_together(groups: &[Vec<String>], params: &Params) -> Option<String> {
    groups
        .iter()
        .find(|g| {
            let counts: Vec<usize> = g.iter().map(|t| one(t, params)).collect();
            counts.iter().any(|c| *c > 0) && counts.contains(&0)
        })
        .map(|g| format!("parameters are required together: {}", g.join(", ")))
}

pub fn required_if(entries: &[RequiredIf], params: &Params) -> Option<String> {
    entries.iter().find_map(|entry| {
        let triggered = params
            .get(entry.key.as_str())
            .is_some_and(|v| v.py_eq(&entry.value));
        let missing: Vec<&str> = if triggered {
            entry
                .requirements
                .iter()
                .filter(|r| one(r, params) == 0)
                .map(String::as_str)
                .collect()
        } else {
            Vec::new()
        };
        let threshold = if entry.any {
            entry.requirements.len()
        } else {
            0
        };
        (!missing.is_empty() && missing.len() >= threshold).then(|| {
            format!(
                "{} is {} but {} of the following are missing: {}",
                entry.key,
                entry.value.scalar_text().unwrap_or_default(),
                if entry.any { "any" } else { "all" },
                missing.join(", ")
            )
        })
    })
}

pub fn required_by(entries: &[(String, Vec<String>)], params: &Params) -> Option<String> {
    let absent = |name: &str| matches!(params.get(name), None | Some(Value::None));
    entries.iter().find_map(|(key, required)| {
        if absent(key) {
            return None;
        }
        let missing: Vec<&str> = required
            .iter()
            .map(String::as_str)
            .filter(|r| absent(r))
            .collect();
        (!missing.is_empty()).then(|| {
            format!(
                "missing parameter(s) required by '{key}': {}",
                missing.join(", ")
            )
        })
    })
}

/// `check_required_arguments`, given the required options that are missing.
pub fn required_arguments<'a>(missing: impl Iterator<Item = &'a str>) -> Option<String> {
    let mut missing: Vec<&str> = missing.collect();
    missing.sort_unstable();
    (!missing.is_empty()).then(|| format!("missing required arguments: {}", missing.join(", ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(keys: &[&str]) -> Params {
        keys.iter()
            .map(|k| ((*k).into(), Value::Str("x".into())))
            .collect()
    }

    fn groups(g: &[&[&str]]) -> Vec<Vec<String>> {
        g.iter()
            .map(|g| g.iter().map(|s| s.to_string()).collect())
            .collect()
    }

    #[test]
    fn group_checks() {
        let p = params(&["a", "b"]);
        assert_eq!(
            mutually_exclusive(&groups(&[&["a", "b"], &["a", "c"]]), &p).as_deref(),
            Some("parameters are mutually exclusive: a|b")
        );
        assert_eq!(
            required_one_of(&groups(&[&["a"], &["c", "d"]]), &p).as_deref(),
            Some("one of the following is required: c, d")
        );
        assert_eq!(
            required_together(&groups(&[&["a", "c"]]), &p).as_deref(),
            Some("parameters are required together: a, c")
        );
        assert_eq!(mutually_exclusive(&groups(&[&["a", "a"]]), &p), None);
    }

    #[test]
    fn mutually_exclusive_with_known_options_agrees_with_lookups() {
        // Options a, b, c (indexes 0..3); terms also name an alias "x" and repeat names.
        let options = ["a", "b", "c"];
        let all_groups = groups(&[
            &["a", "b"],
            &["a", "a"],
            &["a", "x"],
            &["x", "y"],
            &["c", "b", "a"],
            &["b", "b", "c"],
            &["y"],
        ]);
        let at: Vec<Vec<Option<usize>>> = all_groups
            .iter()
            .map(|g| {
                g.iter()
                    .map(|t| options.iter().position(|o| o == t))
                    .collect()
            })
            .collect();
        let keys = ["a", "b", "c", "x", "y", "z"];
        for mask in 0u32..(1 << keys.len()) {
            let present: Vec<&str> = (0..keys.len())
                .filter(|i| mask & (1 << i) != 0)
                .map(|i| keys[i])
                .collect();
            let p = params(&present);
            let given: Vec<Option<usize>> = options.iter().map(|o| p.get_index_of(*o)).collect();
            assert_eq!(
                mutually_exclusive_given(&all_groups, &at, &given, &p),
                mutually_exclusive(&all_groups, &p),
                "{present:?}"
            );
        }
    }

    #[test]
    fn conditional_checks() {
        let mut p = params(&["state"]);
        p.insert("state".into(), Value::Str("present".into()));
        let entry = RequiredIf {
            key: "state".into(),
            value: Value::Str("present".into()),
            requirements: vec!["path".into(), "src".into()],
            any: true,
        };
        assert_eq!(
            required_if(&[entry], &p).as_deref(),
            Some("state is present but any of the following are missing: path, src")
        );
        let by = vec![("state".to_string(), vec!["path".to_string()])];
        assert_eq!(
            required_by(&by, &p).as_deref(),
            Some("missing parameter(s) required by 'state': path")
        );
        assert_eq!(
            required_arguments(["b", "a"].into_iter()).as_deref(),
            Some("missing required arguments: a, b")
        );
    }
}
