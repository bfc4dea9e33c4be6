//! Turning a file's bytes (or a str) into the text compile() would parse, or saying why we
//! will not try.

use super::Fallback;

const UTF8_BOM: &[u8] = b"\xef\xbb\xbf";

/// What ansible-core hands to ModuleDepFinder: file bytes, or (2.19, the main module) a str.
#[derive(Clone, Copy, Debug)]
pub enum Source<'a> {
    Bytes(&'a [u8]),
    /// Text already decoded by the caller; compile() ignores coding declarations in a str.
    Text(&'a str),
}

impl<'a> Source<'a> {
    /// The text compile() would parse.
    pub fn decode(self) -> Result<&'a str, Fallback> {
        match self {
            Source::Bytes(bytes) => decode_bytes(bytes),
            Source::Text(text) => {
                if text.contains('\0') {
                    Err(Fallback::NulByte)
                } else if text.contains('\u{feff}') {
                    // compile() refuses a U+FEFF outside literals; the parser takes it as space.
                    Err(Fallback::TextBom)
                } else {
                    Ok(text)
                }
            }
        }
    }
}

fn decode_bytes(bytes: &[u8]) -> Result<&str, Fallback> {
    if bytes.contains(&0) {
        return Err(Fallback::NulByte);
    }
    let body = bytes.strip_prefix(UTF8_BOM).unwrap_or(bytes);
    if declares_other_coding(body) {
        return Err(Fallback::CodingDeclaration);
    }
    let text = std::str::from_utf8(body).map_err(|_| Fallback::InvalidUtf8)?;
    // Only the first BOM is compile()'s; any other U+FEFF outside literals is its SyntaxError,
    // and the parser takes it as space.
    if text.contains('\u{feff}') {
        return Err(Fallback::TextBom);
    }
    Ok(text)
}

/// True when the first two lines hold anything that could be a PEP 263 declaration naming
/// another codec than UTF-8.  Deliberately wider than CPython's rule (any `coding[:=]`, in a
/// comment or not): a false alarm only costs a fallback, a miss would decode wrongly.
fn declares_other_coding(bytes: &[u8]) -> bool {
    let head = first_two_lines(bytes);
    let mut rest = head;
    while let Some(at) = find(rest, b"coding") {
        let after = &rest[at + b"coding".len()..];
        if let Some((&sep, name)) = after.split_first() {
            if (sep == b':' || sep == b'=') && !is_utf8_name(declared_name(name)) {
                return true;
            }
        }
        rest = after;
    }
    false
}

fn first_two_lines(bytes: &[u8]) -> &[u8] {
    let mut newlines = 0;
    for (i, &b) in bytes.iter().enumerate() {
        if b == b'\n' {
            newlines += 1;
            if newlines == 2 {
                return &bytes[..i];
            }
        }
    }
    bytes
}

fn declared_name(after_separator: &[u8]) -> &[u8] {
    let start = after_separator
        .iter()
        .position(|&b| b != b' ' && b != b'\t')
        .unwrap_or(after_separator.len());
    let name = &after_separator[start..];
    let len = name
        .iter()
        .position(|&b| !(b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.'))
        .unwrap_or(name.len());
    &name[..len]
}

/// CPython's tokenizer maps "utf-8" and "utf-8-*" (any case, `_` for `-`) to its own UTF-8
/// decoding; every other name goes through a codec, which we leave to CPython.
fn is_utf8_name(name: &[u8]) -> bool {
    let normal: Vec<u8> = name
        .iter()
        .map(|&b| {
            if b == b'_' {
                b'-'
            } else {
                b.to_ascii_lowercase()
            }
        })
        .collect();
    normal == b"utf-8" || normal.starts_with(b"utf-8-")
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}
