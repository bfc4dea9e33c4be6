//! What gets registered for a secret: the stripping rule, and the forms a secret can take in
//! output.  Most output is JSON, and JSON may escape characters, so a secret is also matched as
//! JSON writes it without the quotes: once with every non-ASCII character as `\uXXXX` (what
//! `json.encoder.encode_basestring_ascii` writes) and once with only the required escapes
//! (`encode_basestring`).  All texts are generalized UTF-8 (see `text`).

use super::text::{next_code_point, push_code_point};

/// Characters stripped from both ends of a secret before it is registered.
const STRIP: &[u8] = b" \t\r\n";

/// `secret` without the spaces, tabs, CRs and LFs around it; empty when nothing else is left.
pub fn strip_secret(secret: &[u8]) -> &[u8] {
    let start = secret
        .iter()
        .position(|b| !STRIP.contains(b))
        .unwrap_or(secret.len());
    let end = secret
        .iter()
        .rposition(|b| !STRIP.contains(b))
        .map_or(start, |i| i + 1);
    &secret[start..end]
}

/// Which characters the escaping writes as escapes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Escaping {
    /// Everything outside printable ASCII (`encode_basestring_ascii`).
    Ascii,
    /// Only quotes, backslashes and control characters below 0x20 (`encode_basestring`).
    Minimal,
}

fn push_hex4(out: &mut Vec<u8>, unit: u32) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.extend_from_slice(b"\\u");
    for shift in [12, 8, 4, 0] {
        out.push(HEX[((unit >> shift) & 0xF) as usize]);
    }
}

/// The JSON string body (no quotes) of `text`, or `None` if `text` is not generalized UTF-8.
fn json_body(text: &[u8], escaping: Escaping) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len() + 8);
    let mut rest = text;
    while !rest.is_empty() {
        let (cp, len) = next_code_point(rest)?;
        rest = &rest[len..];
        match cp {
            0x22 => out.extend_from_slice(b"\\\""),
            0x5C => out.extend_from_slice(b"\\\\"),
            0x0A => out.extend_from_slice(b"\\n"),
            0x0D => out.extend_from_slice(b"\\r"),
            0x09 => out.extend_from_slice(b"\\t"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0C => out.extend_from_slice(b"\\f"),
            0x00..=0x1F => push_hex4(&mut out, cp),
            0x20..=0x7E => out.push(cp as u8),
            _ if escaping == Escaping::Minimal => push_code_point(&mut out, cp),
            0x10000.. => {
                let v = cp - 0x10000;
                push_hex4(&mut out, 0xD800 | (v >> 10));
                push_hex4(&mut out, 0xDC00 | (v & 0x3FF));
            }
            _ => push_hex4(&mut out, cp),
        }
    }
    Some(out)
}

/// Every distinct form `secret` (already stripped, non-empty) is matched as: the secret itself
/// first, then its JSON-escaped forms that differ from it.
pub fn secret_forms(secret: &[u8]) -> Option<Vec<Vec<u8>>> {
    let ascii = json_body(secret, Escaping::Ascii)?;
    let mut forms = vec![secret.to_vec()];
    if ascii != secret {
        // Only a secret that needed escaping can have a third form.
        let minimal = json_body(secret, Escaping::Minimal)?;
        if minimal != secret && minimal != ascii {
            forms.push(minimal);
        }
        forms.push(ascii);
    }
    Some(forms)
}

#[cfg(test)]
mod tests {
    use super::super::text::encode;
    use super::*;

    #[test]
    fn strips_only_the_four_characters() {
        assert_eq!(strip_secret(b" \t\r\nab c\n "), b"ab c");
        assert_eq!(strip_secret(b" \t\r\n"), b"");
        assert_eq!(strip_secret(b"\x0bab\x0c"), b"\x0bab\x0c");
        assert_eq!(strip_secret(b""), b"");
    }

    #[test]
    fn plain_ascii_has_one_form() {
        assert_eq!(secret_forms(b"abc").unwrap(), vec![b"abc".to_vec()]);
    }

    #[test]
    fn escapes_like_python_json() {
        let forms = secret_forms(b"a\"b\\c\n\x01\x7f").unwrap();
        assert_eq!(
            forms,
            vec![
                b"a\"b\\c\n\x01\x7f".to_vec(),
                b"a\\\"b\\\\c\\n\\u0001\x7f".to_vec(),
                b"a\\\"b\\\\c\\n\\u0001\\u007f".to_vec()
            ]
        );
    }

    #[test]
    fn non_ascii_astral_and_surrogates() {
        let secret = encode(&[0xE9, 0x1F600, 0xDC00]);
        let forms = secret_forms(&secret).unwrap();
        assert_eq!(
            forms,
            vec![secret.clone(), b"\\u00e9\\ud83d\\ude00\\udc00".to_vec()]
        );
    }
}
