//! The `check_type_*` conversions of ansible-core's `validation.py`, for the inputs whose
//! result (value or error text) is certain; anything subtler is `Unhandled`.

use super::spec::TypeKind;
use super::value::{Params, Text, Value};
use super::{CoreFlavor, Unhandled};

/// Converted value, or the text of the `TypeError` ansible-core raises.
pub type Converted = Result<Result<Value, String>, Unhandled>;

pub fn convert(kind: TypeKind, value: &Value, flavor: &CoreFlavor) -> Converted {
    if matches!(value, Value::Kept(_)) && kind != TypeKind::Raw {
        // Its contents are not the core's to read (see `Value::Kept`).
        return Err(Unhandled::KeptContainerConverted);
    }
    match kind {
        TypeKind::Str => to_str(value),
        TypeKind::Int => to_int(value),
        TypeKind::Bool => to_bool(value, flavor),
        TypeKind::Float => to_float(value),
        TypeKind::List => to_list(value),
        TypeKind::Dict => to_dict(value),
        TypeKind::Path => to_path(value),
        TypeKind::Raw => Ok(Ok(value.clone())),
        TypeKind::JsonArg
        | TypeKind::Json
        | TypeKind::Bytes
        | TypeKind::Bits
        | TypeKind::Callable(_) => Err(Unhandled::TypeOnlyCoreConverts),
    }
}

/// Whether `convert(kind, value)` is `value` itself (a clone): the check has nothing to change.
pub fn unchanged(kind: TypeKind, value: &Value) -> bool {
    match (kind, value) {
        (TypeKind::Raw, _)
        | (TypeKind::Str, Value::Str(_))
        | (TypeKind::Int, Value::Int(_) | Value::Bool(_))
        | (TypeKind::Bool, Value::Bool(_))
        | (TypeKind::Float, Value::Float(_))
        | (TypeKind::List, Value::List(_))
        | (TypeKind::Dict, Value::Dict(_)) => true,
        (TypeKind::List, Value::Kept(k)) => !k.dict,
        (TypeKind::Dict, Value::Kept(k)) => k.dict,
        (TypeKind::Path, Value::Str(s)) => !s.contains('$') && !s.starts_with('~'),
        _ => false,
    }
}

fn to_str(value: &Value) -> Converted {
    match value {
        Value::Str(_) => Ok(Ok(value.clone())),
        Value::None => Ok(Ok(Value::Str(Text::default()))),
        _ => match value.scalar_text() {
            Some(text) => Ok(Ok(Value::Str(text.into()))),
            None => Err(Unhandled::StrOfFloatOrContainer),
        },
    }
}

fn to_path(value: &Value) -> Converted {
    let text = match to_str(value)? {
        Ok(Value::Str(s)) => s,
        other => return Ok(other),
    };
    // expandvars acts only on '$', expanduser only on a leading '~': otherwise identity.
    if text.contains('$') || text.starts_with('~') {
        return Err(Unhandled::PathToExpand);
    }
    Ok(Ok(Value::Str(text)))
}

fn to_int(value: &Value) -> Converted {
    match value {
        Value::Int(_) | Value::Bool(_) => Ok(Ok(value.clone())),
        Value::Str(s) => match plain_int(s) {
            Some(i) => Ok(Ok(Value::Int(i))),
            None => Err(Unhandled::StrToIntBeyondDigits),
        },
        Value::Float(f) if f.is_finite() && f.fract() == 0.0 && f.abs() < 9.0e18 => {
            Ok(Ok(Value::Int(*f as i64)))
        }
        Value::None => Ok(Err("\"None\" cannot be converted to an int".into())),
        _ => Err(Unhandled::IntFromFloatOrContainer),
    }
}

/// `[+-]?[0-9]+` fitting in i64: what `int(Decimal(s))` surely gives for it.
fn plain_int(s: &str) -> Option<i64> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse::<i64>().ok()
}

fn to_float(value: &Value) -> Converted {
    match value {
        Value::Float(_) => Ok(Ok(value.clone())),
        Value::Int(i) => Ok(Ok(Value::Float(*i as f64))),
        Value::Bool(b) => Ok(Ok(Value::Float(if *b { 1.0 } else { 0.0 }))),
        Value::Str(s) if plain_decimal(s) => match s.parse::<f64>() {
            Ok(f) if f.is_finite() => Ok(Ok(Value::Float(f))),
            _ => Err(Unhandled::StrToFloatBeyondDecimals),
        },
        Value::Str(_) => Err(Unhandled::StrToFloatBeyondDecimals),
        _ => Ok(Err(format!(
            "{} cannot be converted to a float",
            value.class_text()
        ))),
    }
}

/// `[+-]?(digits[.digits]|.digits)([eE][+-]?digits)?`: parsed alike by Rust and Python.
fn plain_decimal(s: &str) -> bool {
    let body = s.strip_prefix(['+', '-']).unwrap_or(s);
    let (mantissa, exponent) = match body.find(['e', 'E']) {
        Some(at) => (&body[..at], Some(&body[at + 1..])),
        None => (body, None),
    };
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits = |p: &str| p.bytes().all(|b| b.is_ascii_digit());
    let mantissa_ok =
        digits(whole) && digits(fraction) && !(whole.is_empty() && fraction.is_empty());
    let exponent_ok = exponent.is_none_or(|e| {
        let e = e.strip_prefix(['+', '-']).unwrap_or(e);
        !e.is_empty() && digits(e)
    });
    mantissa_ok && exponent_ok
}

fn to_bool(value: &Value, flavor: &CoreFlavor) -> Converted {
    let normalized = match value {
        Value::Bool(_) => return Ok(Ok(value.clone())),
        Value::Str(s) if s.is_ascii() => {
            let mut lower = Text::from(python_ascii_strip(s));
            lower.as_mut_str().make_ascii_lowercase();
            Value::Str(lower)
        }
        Value::Str(_) => return Err(Unhandled::NonAsciiStrToBool),
        Value::Int(_) | Value::Float(_) => value.clone(),
        _ => {
            return Ok(Err(format!(
                "{} cannot be converted to a bool",
                value.class_text()
            )))
        }
    };
    let is = |set: &[&str], numbers: f64| match &normalized {
        Value::Str(s) => set.contains(&s.as_str()),
        Value::Int(i) => *i as f64 == numbers,
        Value::Float(f) => *f == numbers,
        _ => false,
    };
    if is(&["y", "yes", "on", "1", "true", "t"], 1.0) {
        return Ok(Ok(Value::Bool(true)));
    }
    if is(&["n", "no", "off", "0", "false", "f"], 0.0) {
        return Ok(Ok(Value::Bool(false)));
    }
    let Some(text) = value.scalar_text() else {
        return Err(Unhandled::FloatNotBoolean);
    };
    Ok(Err(format!(
        "The value '{text}' is not a valid boolean. Valid booleans include: {}",
        flavor.booleans_text
    )))
}

/// `str.strip()` for an ASCII string (Python also strips \x1c-\x1f).
fn python_ascii_strip(s: &str) -> &str {
    s.trim_matches(|c: char| {
        matches!(
            c,
            ' ' | '\t' | '\n' | '\r' | '\x0b' | '\x0c' | '\x1c'..='\x1f'
        )
    })
}

fn to_list(value: &Value) -> Converted {
    match value {
        Value::List(_) => Ok(Ok(value.clone())),
        Value::Str(s) => Ok(Ok(Value::List(
            s.split(',').map(|p| Value::Str(p.into())).collect(),
        ))),
        Value::Int(_) | Value::Bool(_) => Ok(to_str(value)?.map(|text| Value::List(vec![text]))),
        Value::Float(_) => Err(Unhandled::ListFromFloat),
        _ => Ok(Err(format!(
            "{} cannot be converted to a list",
            value.class_text()
        ))),
    }
}

fn to_dict(value: &Value) -> Converted {
    match value {
        Value::Dict(_) => Ok(Ok(value.clone())),
        Value::Str(s) if s.starts_with('{') => Err(Unhandled::DictFromJson),
        Value::Str(s) if s.contains('=') => Ok(key_value_text(s)),
        Value::Str(_) => Ok(Err(
            "dictionary requested, could not parse JSON or key=value".into(),
        )),
        _ => Ok(Err(format!(
            "{} cannot be converted to a dict",
            value.class_text()
        ))),
    }
}

/// `k1=v1, k2="v 2"` text: fields split on unquoted commas and spaces, backslash escapes.
fn key_value_text(text: &str) -> Result<Value, String> {
    let mut fields: Vec<String> = Vec::new();
    let mut field = String::new();
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for c in python_strip(text).chars() {
        if escaped {
            field.push(c);
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if quote.is_none() && (c == '\'' || c == '"') {
            quote = Some(c);
        } else if quote == Some(c) {
            quote = None;
        } else if quote.is_none() && (c == ',' || c == ' ') {
            if !field.is_empty() {
                fields.push(std::mem::take(&mut field));
            }
        } else {
            field.push(c);
        }
    }
    if !field.is_empty() {
        fields.push(field);
    }
    let mut dict = Params::default();
    for f in fields {
        let Some((key, val)) = f.split_once('=') else {
            return Err(
                "unable to evaluate string in the \"key=value\" format as dictionary".into(),
            );
        };
        dict.insert(key.into(), Value::Str(val.into()));
    }
    Ok(Value::Dict(dict))
}

/// `str.strip()`: Python's whitespace is Unicode White_Space plus \x1c-\x1f.
fn python_strip(s: &str) -> &str {
    s.trim_matches(|c: char| c.is_whitespace() || ('\x1c'..='\x1f').contains(&c))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(kind: TypeKind, v: Value) -> Value {
        convert(kind, &v, &CoreFlavor::default()).unwrap().unwrap()
    }

    fn s(t: &str) -> Value {
        Value::Str(t.into())
    }

    #[test]
    fn str_and_list_conversions() {
        assert_eq!(ok(TypeKind::Str, Value::Int(5)), s("5"));
        assert_eq!(ok(TypeKind::Str, Value::None), s(""));
        assert_eq!(
            ok(TypeKind::List, s("a,b")),
            Value::List(vec![s("a"), s("b")])
        );
        assert_eq!(
            ok(TypeKind::List, Value::Bool(true)),
            Value::List(vec![s("True")])
        );
        assert!(convert(TypeKind::Str, &Value::Float(1.5), &CoreFlavor::default()).is_err());
    }

    #[test]
    fn int_and_float_conversions() {
        assert_eq!(ok(TypeKind::Int, s("-12")), Value::Int(-12));
        assert_eq!(ok(TypeKind::Int, Value::Float(3.0)), Value::Int(3));
        assert_eq!(ok(TypeKind::Int, Value::Bool(true)), Value::Bool(true));
        assert!(convert(TypeKind::Int, &s(" 1"), &CoreFlavor::default()).is_err());
        assert_eq!(ok(TypeKind::Float, s("1.5e3")), Value::Float(1500.0));
        assert!(convert(TypeKind::Float, &s("nan"), &CoreFlavor::default()).is_err());
        assert!(!plain_decimal("."));
        assert!(plain_decimal(".5"));
    }

    #[test]
    fn bool_conversions() {
        assert_eq!(ok(TypeKind::Bool, s(" YES ")), Value::Bool(true));
        assert_eq!(ok(TypeKind::Bool, Value::Int(0)), Value::Bool(false));
        let err = convert(TypeKind::Bool, &Value::Int(2), &CoreFlavor::default()).unwrap();
        assert!(err
            .unwrap_err()
            .starts_with("The value '2' is not a valid boolean"));
    }

    #[test]
    fn dict_from_key_value_text() {
        let d = ok(TypeKind::Dict, s("a=1, b='x y' c=\\,"));
        let Value::Dict(d) = d else { panic!() };
        assert_eq!(d.get("b"), Some(&s("x y")));
        assert_eq!(d.get("c"), Some(&s(",")));
        let err = convert(TypeKind::Dict, &s("a=1, b"), &CoreFlavor::default()).unwrap();
        assert!(err.is_err());
    }
}
