//! Generated specs and parameters: compiling and validating answer or refuse, never panic.

use proptest::prelude::*;

use super::{CompiledSpec, Context, CoreFlavor, NoDelegate, OptionInput, Params, SpecInput, Value};

const NAMES: [&str; 5] = ["a", "b", "name", "state", "x"];

fn name() -> impl Strategy<Value = String> {
    prop_oneof![
        proptest::sample::select(&NAMES[..]).prop_map(str::to_string),
        "[a-z]{0,3}"
    ]
}

fn value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::None),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::Int),
        any::<f64>().prop_map(Value::Float),
        prop_oneof![
            name(),
            Just("str".into()),
            Just("int".into()),
            Just("list".into()),
            Just("dict".into()),
            Just("bool".into()),
            Just("raw".into()),
            Just("path".into()),
            Just("bits".into()),
            Just("jsonarg".into()),
            Just("float".into()),
            Just("1k".into()),
            Just("1,2".into()),
            Just("~/x".into()),
            Just("$HOME/x".into()),
        ]
        .prop_map(|s| Value::Str(s.into())),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::List),
            proptest::collection::vec((name(), inner), 0..4).prop_map(|items| Value::Dict(
                items
                    .into_iter()
                    .map(|(k, v)| (k.into(), v))
                    .collect::<Params>()
            )),
        ]
    })
}

const KEYS: [&str; 16] = [
    "type",
    "elements",
    "required",
    "default",
    "choices",
    "aliases",
    "no_log",
    "options",
    "apply_defaults",
    "deprecated_aliases",
    "removed_in_version",
    "removed_at_date",
    "removed_from_collection",
    "fallback",
    "mutually_exclusive",
    "required_if",
];

fn option() -> impl Strategy<Value = OptionInput> {
    let key = prop_oneof![
        proptest::sample::select(&KEYS[..]).prop_map(str::to_string),
        "[a-z_]{1,6}"
    ];
    proptest::collection::vec((key, proptest::option::weighted(0.95, value())), 0..5)
        .prop_map(|fields| fields.into_iter().collect())
}

fn spec_input() -> impl Strategy<Value = SpecInput> {
    let check = proptest::option::weighted(0.9, prop_oneof![Just(Value::None), value()]);
    (
        proptest::collection::vec((name(), option()), 0..5),
        [
            check.clone(),
            check.clone(),
            check.clone(),
            check.clone(),
            check,
        ],
    )
        .prop_map(|(options, [me, rt, roo, ri, rb])| SpecInput {
            options,
            mutually_exclusive: me,
            required_together: rt,
            required_one_of: roo,
            required_if: ri,
            required_by: rb,
            ..SpecInput::default()
        })
}

proptest! {

    #[test]
    fn compile_and_validate_never_panic(input in spec_input(), params in proptest::collection::vec((name(), value()), 0..5), strings in any::<bool>()) {
        let flavor = CoreFlavor { booleans_text: "'y', 'yes'".into(), no_log_default_strings: strings };
        if let Ok(spec) = CompiledSpec::compile(&input) {
            let cx = Context { flavor: &flavor, delegate: &NoDelegate };
            let _ = spec.validate(params.into_iter().map(|(k, v)| (k.into(), v)).collect(), &cx);
        }
    }
}

proptest! {
    /// The shortcut check_type takes for a value it would not change agrees with `convert`.
    #[test]
    fn unchanged_means_converted_to_itself(value in value(), strings in any::<bool>()) {
        use super::convert::{convert, unchanged};
        use super::TypeKind;
        let flavor = CoreFlavor { booleans_text: "'y', 'yes'".into(), no_log_default_strings: strings };
        for kind in [TypeKind::Str, TypeKind::Int, TypeKind::Bool, TypeKind::Float, TypeKind::List,
                     TypeKind::Dict, TypeKind::Path, TypeKind::Raw, TypeKind::Json, TypeKind::Bits] {
            if unchanged(kind, &value) {
                prop_assert_eq!(convert(kind, &value, &flavor), Ok(Ok(value.clone())));
            }
        }
    }
}
