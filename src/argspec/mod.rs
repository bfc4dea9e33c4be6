//! The argspec engine: an argument spec compiled once ([`CompiledSpec`]) validates many
//! parameter sets with the result ansible-core's `ArgumentSpecValidator.validate` gives.
//!
//! Only the common part of the spec language is compiled; `CompiledSpec::compile` refuses
//! everything else with a reason, and `validate` gives up (`Unhandled`) on any value whose
//! handling it cannot reproduce exactly, so the caller can run ansible-core's own code instead.

mod checks;
pub mod convert;
mod key;
mod prefix;
#[cfg(test)]
mod proptests;
mod spec;
mod suboptions;
mod unhandled;
mod validate;
mod value;

pub use spec::{CompiledSpec, OptionInput, OptionSpec, SpecInput, TypeKind, OPTION_KEYS};
pub use validate::{Context, ErrorKind, NoLogSource, NoLogValue, Outcome};
pub use value::{Kept, Key, Params, Value};

pub use unhandled::Unhandled;

/// Conversions the core leaves to someone else (the glue calls ansible-core's own
/// `check_type_*`): given the reason the core gave up, the converted value, the
/// conversion error text, or `Unhandled`.
pub trait Delegate {
    fn convert(&self, kind: TypeKind, value: &Value, why: Unhandled) -> convert::Converted;

    /// `convert` for the value of a top-level option (not an element) named `name`, given
    /// under the key `given_as` of the caller's parameters (the name, or the alias whose value
    /// ansible-core copied over the option's; a key the caller did not give for a default):
    /// the glue can hand a callable the very object the caller gave.
    fn convert_option(
        &self,
        kind: TypeKind,
        value: &Value,
        why: Unhandled,
        _name: &str,
        _given_as: &str,
    ) -> convert::Converted {
        self.convert(kind, value, why)
    }

    /// ansible-core's own `set_fallbacks` for the sub-spec the glue numbered `source`, on
    /// one sub-parameter dict: the (key, value) pairs it adds and the no_log strings it finds.
    fn fallbacks(&self, _source: usize, _params: &Params) -> Result<FallbackValues, Unhandled> {
        Err(Unhandled::SpecFallbackInsideOptions)
    }
}

/// What `set_fallbacks` adds to a parameter dict, and the no_log values it reports.
pub type FallbackValues = (Vec<(String, Value)>, Vec<NoLogValue>);

/// No one to delegate to: what the core cannot convert stays unhandled.
pub struct NoDelegate;

impl Delegate for NoDelegate {
    fn convert(&self, _kind: TypeKind, _value: &Value, why: Unhandled) -> convert::Converted {
        Err(why)
    }
}

/// Differences between the supported ansible-core versions that change a result.
#[derive(Debug, Clone, Default)]
pub struct CoreFlavor {
    /// `', '.join(repr(i) for i in BOOLEANS)` as the running interpreter iterates that set:
    /// part of the bool conversion error, and set order depends on the hash seed.
    pub booleans_text: String,
    /// A no_log default contributes its strings (2.22); 2.19 and 2.21 add the default whole.
    pub no_log_default_strings: bool,
}
