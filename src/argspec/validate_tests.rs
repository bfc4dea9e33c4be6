//! The validation order, messages and refusals of `validate.rs`.

use super::*;
use crate::argspec::spec::SpecInput;
use crate::argspec::NoDelegate;

fn cx() -> Context<'static> {
    static FLAVOR: std::sync::OnceLock<CoreFlavor> = std::sync::OnceLock::new();
    Context {
        flavor: FLAVOR.get_or_init(CoreFlavor::default),
        delegate: &NoDelegate,
    }
}

fn s(text: &str) -> Value {
    Value::Str(text.into())
}

fn option(fields: &[(&str, Value)]) -> crate::argspec::OptionInput {
    fields
        .iter()
        .map(|(k, v)| (k.to_string(), Some(v.clone())))
        .collect()
}

fn spec(options: Vec<(&str, crate::argspec::OptionInput)>) -> SpecInput {
    SpecInput {
        options: options
            .into_iter()
            .map(|(n, o)| (n.to_string(), o))
            .collect(),
        mutually_exclusive: Some(Value::None),
        required_together: Some(Value::None),
        required_one_of: Some(Value::None),
        required_if: Some(Value::None),
        required_by: Some(Value::None),
        ..SpecInput::default()
    }
}

fn params(items: &[(&str, Value)]) -> Params {
    items
        .iter()
        .map(|(k, v)| ((*k).into(), v.clone()))
        .collect()
}

fn sample() -> CompiledSpec {
    let input = spec(vec![
        (
            "name",
            option(&[
                ("required", Value::Bool(true)),
                ("aliases", Value::List(vec![s("n")])),
            ]),
        ),
        (
            "count",
            option(&[("type", s("int")), ("default", Value::Int(3))]),
        ),
        (
            "state",
            option(&[("choices", Value::List(vec![s("present"), s("absent")]))]),
        ),
        ("secret", option(&[("no_log", Value::Bool(true))])),
    ]);
    CompiledSpec::compile(&input).unwrap()
}

#[test]
fn aliases_defaults_and_conversion() {
    let out = sample()
        .validate(
            params(&[("n", s("x")), ("name", s("y")), ("count", s("7"))]),
            &cx(),
        )
        .unwrap();
    assert!(out.errors.is_empty());
    assert_eq!(
        out.alias_warnings,
        vec![("name".to_string(), "n".to_string())]
    );
    let keys: Vec<&str> = out.params.keys().map(|k| &**k).collect();
    assert_eq!(keys, ["n", "name", "count", "state", "secret"]);
    assert_eq!(out.params["name"], s("x"));
    assert_eq!(out.params["count"], Value::Int(7));
    assert_eq!(out.params["state"], Value::None);
}

#[test]
fn errors_in_ansible_core_order() {
    let out = sample()
        .validate(
            params(&[
                ("count", s("many")),
                ("state", s("gone")),
                ("bogus", Value::Int(1)),
                ("secret", s("pw")),
            ]),
            &cx(),
        )
        .unwrap_err();
    // "many" is not plain digits: int() of it is left to ansible-core.
    assert_eq!(out, Unhandled::StrToIntBeyondDigits);
    let out = sample()
        .validate(
            params(&[
                ("count", Value::None),
                ("state", s("gone")),
                ("bogus", Value::Int(1)),
                ("secret", s("pw")),
            ]),
            &cx(),
        )
        .unwrap();
    let kinds: Vec<ErrorKind> = out.errors.iter().map(|(k, _)| *k).collect();
    assert_eq!(
        kinds,
        [
            ErrorKind::Required,
            ErrorKind::ArgumentType,
            ErrorKind::ArgumentValue
        ]
    );
    assert_eq!(out.errors[0].1, "missing required arguments: name");
    assert_eq!(
        out.errors[1].1,
        "argument 'count' is of type NoneType and we were unable to convert to int: \"None\" cannot be converted to an int"
    );
    assert_eq!(
        out.errors[2].1,
        "value of state must be one of: present, absent, got: gone"
    );
    assert_eq!(out.unsupported.len(), 1);
    assert_eq!(out.unsupported[0].paths, [vec!["bogus".to_string()]]);
    assert_eq!(
        out.unsupported[0].aliases,
        [("n".to_string(), "name".to_string())]
    );
    assert_eq!(
        out.no_log_values,
        [NoLogValue::new("pw", NoLogSource::Given)]
    );
}

#[test]
fn unhandled_specs_name_their_reason() {
    let sub = spec(vec![(
        "a",
        option(&[("options", Value::Dict(Params::default()))]),
    )]);
    assert_eq!(
        CompiledSpec::compile(&sub).unwrap_err(),
        Unhandled::SpecOptionsOnNonDict
    );
    let both = spec(vec![(
        "a",
        option(&[("required", Value::Bool(true)), ("default", s("x"))]),
    )]);
    assert_eq!(
        CompiledSpec::compile(&both).unwrap_err(),
        Unhandled::SpecRequiredWithDefault
    );
    let mut callable = spec(vec![("a", option(&[]))]);
    callable.options[0].1.insert("type".into(), None);
    assert_eq!(
        CompiledSpec::compile(&callable).unwrap_err(),
        Unhandled::SpecCallableType
    );
}

#[test]
fn sub_options_carry_their_context() {
    let child = |fields: &[(&str, Value)]| {
        Value::Dict(
            fields
                .iter()
                .map(|(k, v)| ((*k).into(), v.clone()))
                .collect(),
        )
    };
    let options = child(&[
        ("host", child(&[("required", Value::Bool(true))])),
        (
            "port",
            child(&[("type", s("dict")), ("aliases", Value::List(vec![s("p")]))]),
        ),
    ]);
    let input = spec(vec![(
        "conn",
        option(&[
            ("type", s("list")),
            ("elements", s("dict")),
            ("options", options),
        ]),
    )]);
    let compiled = CompiledSpec::compile(&input).unwrap();
    let given = Value::List(vec![child(&[
        ("port", Value::Int(1)),
        ("p", s("plain")),
        ("extra", Value::None),
    ])]);
    let out = compiled
        .validate(params(&[("conn", given)]), &cx())
        .unwrap();
    let messages: Vec<&str> = out.errors.iter().map(|(_, m)| m.as_str()).collect();
    assert_eq!(
        messages,
        [
            "missing required arguments: host found in conn",
            "argument 'port' is of type str found in 'conn'. and we were unable to convert to dict: dictionary requested, could not parse JSON or key=value",
        ]
    );
    assert_eq!(
        out.warnings_to_emit,
        ["Both option conn[0].port and its alias conn[0].p are set."]
    );
    assert_eq!(
        out.unsupported[0].paths,
        [vec!["conn".to_string(), "extra".to_string()]]
    );
}

#[test]
fn options_inserted_with_their_known_hash_are_found_by_name() {
    let compiled = sample();
    let mut map = params(&[("other", Value::Int(1))]);
    for index in 0..compiled.options.len() {
        let at = compiled.insert_option(&mut map, index, Value::Int(index as i64));
        assert_eq!(at, index + 1);
    }
    for (index, option) in compiled.options.iter().enumerate() {
        assert_eq!(map.get_index_of(&*option.name), Some(index + 1));
        // Inserted again: the value replaced in place.
        assert_eq!(
            compiled.insert_option(&mut map, index, Value::None),
            index + 1
        );
        assert_eq!(map.get(&*option.name), Some(&Value::None));
    }
    assert_eq!(map.len(), compiled.options.len() + 1);
}

/// Records the key each top-level conversion left to it was given under.
#[derive(Default)]
struct GivenAs(std::cell::RefCell<Vec<(String, String)>>);

impl Delegate for GivenAs {
    fn convert(&self, _kind: TypeKind, _value: &Value, why: Unhandled) -> Converted {
        Err(why)
    }

    fn convert_option(
        &self,
        _kind: TypeKind,
        value: &Value,
        _why: Unhandled,
        name: &str,
        given_as: &str,
    ) -> Converted {
        self.0.borrow_mut().push((name.into(), given_as.into()));
        Ok(Ok(value.clone()))
    }
}

#[test]
fn callable_types_are_told_the_key_the_value_came_from() {
    let mut input = spec(vec![
        (
            "b",
            option(&[("aliases", Value::List(vec![s("y"), s("z")]))]),
        ),
        ("c", option(&[("default", Value::Int(1))])),
    ]);
    input.callable_fields = [((0, "type".to_string()), 0), ((1, "type".to_string()), 0)].into();
    input.callable_names = vec!["int".into()];
    let compiled = CompiledSpec::compile(&input).unwrap();
    let flavor = CoreFlavor::default();
    for (given, expected) in [
        (&[("b", s("1"))][..], "b"),
        (&[("z", Value::Bool(false)), ("b", Value::None)][..], "z"),
        (&[("b", Value::None), ("z", Value::Bool(false))][..], "z"),
        // The last alias of the spec's list wins, whatever the order given.
        (&[("z", s("2")), ("y", s("3")), ("b", s("4"))][..], "z"),
        (&[("y", s("3"))][..], "y"),
    ] {
        let delegate = GivenAs::default();
        let cx = Context {
            flavor: &flavor,
            delegate: &delegate,
        };
        compiled.validate(params(given), &cx).unwrap();
        let seen = delegate.0.take();
        assert_eq!(
            seen,
            [("b".into(), expected.into()), ("c".into(), "c".into())],
            "{given:?}"
        );
    }
}

#[test]
fn no_log_strings_say_where_their_objects_are() {
    let input = spec(vec![
        ("a", option(&[("no_log", Value::Bool(true))])),
        (
            "b",
            option(&[("no_log", Value::Bool(true)), ("type", s("raw"))]),
        ),
        (
            "c",
            option(&[("no_log", Value::Bool(true)), ("default", s("d"))]),
        ),
    ]);
    let compiled = CompiledSpec::compile(&input).unwrap();
    let given = params(&[
        ("a", s("7")),
        (
            "b",
            Value::List(vec![Value::Int(7), s("x"), Value::Bool(true)]),
        ),
    ]);
    let out = compiled.validate(given, &cx()).unwrap();
    let found: Vec<(&str, NoLogSource)> = out
        .no_log_values
        .iter()
        .map(|v| (v.text.as_str(), v.source))
        .collect();
    assert_eq!(
        found,
        [
            ("7", NoLogSource::Given),
            ("7", NoLogSource::Plain),
            ("x", NoLogSource::Given),
            ("d", NoLogSource::Default),
        ]
    );
}
