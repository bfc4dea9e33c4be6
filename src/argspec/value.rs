//! Plain parameter values: exactly the builtin types the glue accepts.

use indexmap::IndexMap;

/// A parameter dict: insertion-ordered like a Python dict.  Keys are option names, hashed
/// often per call, so with a fast hasher.
pub type Params = IndexMap<Key, Value, rustc_hash::FxBuildHasher>;

pub use super::key::Key;

/// A str value: up to 24 bytes held inline, as most parameter values are (no allocation to
/// make, clone or free one).
pub type Text = compact_str::CompactString;

#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    None,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(Text),
    List(Vec<Value>),
    Dict(Params),
    /// A list or dict the caller kept aside as given (see `Kept`).
    Kept(Kept),
}

/// A list or dict given for an option whose checks never look inside it (`OptionSpec::keeps`):
/// the caller keeps it aside (its elements checked already where the option has `elements`)
/// and gives the core its type and length only.  `slot` is the caller's: equal slots, equal
/// containers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Kept {
    pub dict: bool,
    pub len: usize,
    pub slot: usize,
}

impl Value {
    /// Python truthiness.
    pub fn truthy(&self) -> bool {
        match self {
            Value::None => false,
            Value::Bool(b) => *b,
            Value::Int(i) => *i != 0,
            Value::Float(f) => *f != 0.0,
            Value::Str(s) => !s.is_empty(),
            Value::List(l) => !l.is_empty(),
            Value::Dict(d) => !d.is_empty(),
            Value::Kept(k) => k.len > 0,
        }
    }

    /// Python `==`, where `True == 1 == 1.0`.
    pub fn py_eq(&self, other: &Value) -> bool {
        match (self.as_number(), other.as_number()) {
            (Some(a), Some(b)) => return a.eq(&b),
            (Some(_), None) | (None, Some(_)) => return false,
            _ => {}
        }
        match (self, other) {
            (Value::None, Value::None) => true,
            (Value::Str(a), Value::Str(b)) => a == b,
            (Value::List(a), Value::List(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.py_eq(y))
            }
            (Value::Dict(a), Value::Dict(b)) => {
                a.len() == b.len() && a.iter().all(|(k, v)| b.get(k).is_some_and(|w| v.py_eq(w)))
            }
            (Value::Kept(a), Value::Kept(b)) if a.slot == b.slot => true,
            // A kept container is compared only with scalars (a `required_if` value): a list
            // or dict never equals one.  Options compared with containers (`choices`) are
            // never kept.
            _ => false,
        }
    }

    fn as_number(&self) -> Option<Number> {
        match self {
            Value::Bool(b) => Some(Number::Int(i64::from(*b))),
            Value::Int(i) => Some(Number::Int(*i)),
            Value::Float(f) => Some(Number::Float(*f)),
            _ => None,
        }
    }

    /// `type(value).__name__` for the builtin types.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::None => "NoneType",
            Value::Bool(_) => "bool",
            Value::Int(_) => "int",
            Value::Float(_) => "float",
            Value::Str(_) => "str",
            Value::List(_) => "list",
            Value::Dict(_) => "dict",
            Value::Kept(k) if k.dict => "dict",
            Value::Kept(_) => "list",
        }
    }

    /// `str(type(value))`, as error messages print it.
    pub fn class_text(&self) -> String {
        format!("<class '{}'>", self.type_name())
    }

    /// `str(value)` for the scalars whose Python text is certain; floats and containers
    /// have Python-specific formatting, so they are `None`.
    pub fn scalar_text(&self) -> Option<String> {
        match self {
            Value::None => Some("None".into()),
            Value::Bool(true) => Some("True".into()),
            Value::Bool(false) => Some("False".into()),
            Value::Int(i) => Some(i.to_string()),
            Value::Str(s) => Some(s.to_string()),
            _ => None,
        }
    }
}

#[derive(Clone, Copy)]
enum Number {
    Int(i64),
    Float(f64),
}

impl Number {
    fn eq(&self, other: &Number) -> bool {
        match (*self, *other) {
            (Number::Int(a), Number::Int(b)) => a == b,
            (Number::Float(a), Number::Float(b)) => a == b,
            (Number::Int(i), Number::Float(f)) | (Number::Float(f), Number::Int(i)) => {
                int_eq_float(i, f)
            }
        }
    }
}

/// Exact comparison, as Python compares an int with a float (no rounding of the int).
fn int_eq_float(i: i64, f: f64) -> bool {
    if !f.is_finite() || f.fract() != 0.0 || f.abs() >= 9.3e18 {
        return false;
    }
    (f as i128) == i128::from(i)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_equality_across_numbers() {
        assert!(Value::Bool(true).py_eq(&Value::Int(1)));
        assert!(Value::Float(1.0).py_eq(&Value::Int(1)));
        assert!(!Value::Float(1.5).py_eq(&Value::Int(1)));
        assert!(!Value::Str("1".into()).py_eq(&Value::Int(1)));
        assert!(!Value::Int(i64::MAX).py_eq(&Value::Float(i64::MAX as f64)));
    }

    #[test]
    fn truthiness_and_text() {
        assert!(!Value::Str(Text::default()).truthy());
        assert!(Value::Float(0.1).truthy());
        assert_eq!(Value::Bool(false).scalar_text().as_deref(), Some("False"));
        assert_eq!(Value::Float(0.1).scalar_text(), None);
        assert_eq!(Value::None.class_text(), "<class 'NoneType'>");
    }
}
