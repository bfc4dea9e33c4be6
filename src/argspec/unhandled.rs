//! Why a spec or a call is left to ansible-core's pure-Python validator: one variant per
//! reason.  The text of each is what `status()` counts under `argspec`, so it never changes
//! with a variant's name.  Some variants are given by the extension's conversion of Python
//! objects (tagged values, `str` with surrogates, a validator of another shape); they are here
//! so that one type says every reason the argspec path has.

macro_rules! reasons {
    ($($(#[$doc:meta])* $name:ident => $text:literal,)*) => {
        /// Why a spec or a call is left to ansible-core's own validator.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum Unhandled {
            $($(#[$doc])* $name,)*
        }

        impl Unhandled {
            /// The reason as counted under `argspec` in `status()`.
            pub fn reason(self) -> &'static str {
                match self {
                    $(Unhandled::$name => $text,)*
                }
            }
        }

        #[cfg(test)]
        const EVERY_REASON: &[Unhandled] = &[$(Unhandled::$name),*];
    };
}

reasons! {
    // Found when a spec is compiled.
    SpecAliasAlsoAnotherName => "spec: alias that is also another name",
    SpecAliasesNotStrList => "spec: aliases not a list of str",
    SpecCallableType => "spec: callable type",
    SpecCallableTypeUnnamed => "spec: callable type without a printable name",
    SpecCheckNotPlainData => "spec: check that is not plain data",
    SpecCheckTermsNotStrLists => "spec: check terms not a list of lists of str",
    SpecChoicesNotList => "spec: choices not a list",
    SpecChoicesNotScalars => "spec: choices not all str/int/bool/None",
    SpecCompileError => "spec: native compile error",
    SpecDeprecatedAliasLikeOption => "spec: deprecated alias named like an option",
    SpecDeprecatedAliasesNone => "spec: deprecated_aliases is None",
    SpecDeprecatedAliasesMalformed => "spec: deprecated_aliases not a list of dicts with a str name",
    SpecElementsWithoutList => "spec: elements without type list",
    SpecFallbackInsideOptions => "spec: fallback inside options",
    SpecNestedTooDeeply => "spec: nested too deeply",
    SpecNonBoolFlag => "spec: non-bool flag",
    SpecNotDict => "spec: not a dict",
    SpecOptionKeyNotStr => "spec: option key not a str",
    SpecOptionNameNotStr => "spec: option name not a str",
    SpecOptionNameSurrogates => "spec: option name with surrogates",
    SpecOptionNotDict => "spec: option not a dict",
    SpecOptionsNestedTooDeeply => "spec: options nested too deeply",
    SpecOptionsNotDict => "spec: options not a dict",
    SpecOptionsOnNonDict => "spec: options on an option that is not a dict",
    SpecRequiredByMalformed => "spec: required_by not a dict of str lists",
    SpecRequiredIfMalformed => "spec: required_if entry not [str, value, [str...], bool?]",
    SpecRequiredWithDefault => "spec: required with default",
    SpecTypeNotName => "spec: type that is not a name",
    SpecUnknownType => "spec: unknown type name",
    SpecUnusualValidator => "spec: validator without its usual attributes",
    SpecValueNotPlainData => "spec: value that is not plain data",
    // Found in one call's values.
    AliasedSubOptionsMixed => "value: aliased sub-options list of mixed items",
    BoolAgainstNumericChoices => "value: True/False against numeric choices",
    CheckerFailed => "value: ansible-core's checker failed unexpectedly",
    CheckerRaisedOther => "value: checker raised another exception",
    CheckerResultNotPlainData => "value: checker result not plain data",
    ChoiceErrorShowsFloatOrContainer => "value: choice error showing a float or container",
    ContainerWithoutLength => "value: container without a length",
    DictFromJson => "value: dict from JSON text",
    DictKeyNotStr => "value: dict key that is not a str",
    ElementsOfNonList => "value: elements of a non-list",
    FallbackRaised => "value: fallback raised",
    FloatNotBoolean => "value: float that is not a boolean",
    IntBeyond64Bits => "value: int beyond 64 bits",
    IntFromFloatOrContainer => "value: int from float or container",
    KeptContainerConverted => "value: container kept aside converted",
    KeptContainerOtherType => "value: container kept aside for another type",
    ListFromFloat => "value: list from float",
    NestedTooDeeply => "value: nested too deeply",
    NoLogDefaultNotStr => "value: no_log default that is not a str (before 2.22)",
    NoLogFallbackNotStr => "value: no_log fallback value that is not a str",
    NoLogFloat => "value: no_log float",
    NoLogKeptContainer => "value: no_log container kept aside",
    NonAsciiStrToBool => "value: non-ASCII str to bool",
    NotPlainData => "value: not plain builtin data",
    ParametersNotDict => "value: parameters not a dict",
    PathToExpand => "value: path to expand",
    SharedContainer => "value: container shared between parameters",
    StrOfFloatOrContainer => "value: str() of a float or container",
    StrToFloatBeyondDecimals => "value: str to float beyond plain decimals",
    StrToIntBeyondDigits => "value: str to int beyond plain digits",
    StrWithSurrogates => "value: str with surrogates",
    SubOptionNotDict => "value: sub-option value that is not a dict",
    TaggedFallback => "value: tagged fallback value",
    TaggedFallbackInOptions => "value: tagged fallback value inside options",
    TaggedForCallableType => "value: tagged value for a callable type",
    TaggedFromChecker => "value: tagged value from a checker",
    TypeOnlyCoreConverts => "value: type only ansible-core converts",
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_reason_is_its_own_and_says_what_it_is_about() {
        let mut seen = std::collections::HashSet::new();
        for why in EVERY_REASON {
            let text = why.reason();
            assert!(seen.insert(text), "{text:?} given twice");
            let spec = format!("{why:?}").starts_with("Spec");
            let prefix = if spec { "spec: " } else { "value: " };
            assert!(text.starts_with(prefix), "{why:?}: {text:?}");
        }
    }
}
