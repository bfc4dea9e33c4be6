//! The `ZipInfo` fields that reach the bytes, and the conversions zipfile applies to them.

use super::{Method, ZipError};

/// zipfile's `DEFAULT_VERSION`: "made by" and "needed to extract" for plain entries.
pub const DEFAULT_VERSION: i64 = 20;
/// zipfile's `ZIP64_VERSION`, required by entries with ZIP64 extra fields.
pub const ZIP64_VERSION: i64 = 45;
/// zipfile's `_MASK_UTF_FILENAME`: the name is UTF-8, not ASCII.
const UTF8_NAME_FLAG: i64 = 1 << 11;
/// `ZipInfo.create_system` everywhere but Windows ("unix").
const CREATE_SYSTEM_UNIX: i64 = 3;
/// `?rw-------`, what zipfile gives an entry whose `external_attr` is 0.
pub const DEFAULT_EXTERNAL_ATTR: i64 = 0o600 << 16;

/// The fields of one `ZipInfo` that zipfile writes.  Integers are kept as Python gave them
/// (i64), so a value that does not fit its header field fails where zipfile's `struct.pack`
/// fails, with the same field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EntryInfo {
    /// `ZipInfo.filename` (already sanitized by the `ZipInfo` that carried it).
    pub name: String,
    /// `ZipInfo.date_time`: year, month, day, hour, minute, second.
    pub date_time: [i64; 6],
    pub method: Method,
    pub create_system: i64,
    pub create_version: i64,
    pub extract_version: i64,
    pub reserved: i64,
    pub internal_attr: i64,
    pub external_attr: i64,
    pub extra: Vec<u8>,
    pub comment: Vec<u8>,
}

impl EntryInfo {
    /// What `ZipInfo(filename=name, date_time=date_time)` holds once `compress_type` is set
    /// (ansible-core's `_make_zinfo`): the name sanitized, every other field at its default.
    pub fn new(name: &str, date_time: [i64; 6], method: Method) -> Result<EntryInfo, ZipError> {
        if date_time[0] < 1980 {
            return Err(ZipError::TimestampBefore1980);
        }
        Ok(EntryInfo {
            name: sanitize_name(name).to_owned(),
            date_time,
            method,
            create_system: CREATE_SYSTEM_UNIX,
            create_version: DEFAULT_VERSION,
            extract_version: DEFAULT_VERSION,
            reserved: 0,
            internal_attr: 0,
            external_attr: 0,
            extra: Vec::new(),
            comment: Vec::new(),
        })
    }

    /// The name's bytes and the flag bits zipfile writes for them (`_encodeFilenameFlags`
    /// with `flag_bits` reset to 0 by `_open_to_write`).
    pub fn name_and_flags(&self) -> (&[u8], i64) {
        let flags = if self.name.is_ascii() {
            0
        } else {
            UTF8_NAME_FLAG
        };
        (self.name.as_bytes(), flags)
    }

    /// `(dostime, dosdate)` computed as zipfile computes them, unchecked: zipfile lets
    /// out-of-range parts spill into their neighbours and only `struct.pack` objects.
    pub fn dos_stamp(&self) -> (i128, i128) {
        let dt = self.date_time.map(i128::from);
        let dosdate = ((dt[0] - 1980) << 9) | (dt[1] << 5) | dt[2];
        let dostime = (dt[3] << 11) | (dt[4] << 5) | dt[5].div_euclid(2);
        (dostime, dosdate)
    }
}

/// `ZipInfo`'s sanitizing on a POSIX system: the name ends at its first NUL (`os.sep` is
/// already `/` and there is no `os.altsep`).
pub fn sanitize_name(name: &str) -> &str {
    match name.find('\0') {
        Some(nul) => &name[..nul],
        None => name,
    }
}

/// How an interpreter's zipfile removes ZIP64 fields from an entry's own extra data before
/// writing a fresh one into the central directory.  The algorithms differ (a skipping loop,
/// a split into fields) and are kept apart so each interpreter's own is followed; on the
/// malformed data tried (lengths past the end, stubs shorter than a header) they agree.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExtraStripStyle {
    /// 3.11 and 3.12 (`_strip_extra`): fields are skipped by their length; a trailing
    /// stub shorter than a header is kept.
    Skipping,
    /// 3.13 (`_Extra.strip`): the data is split into fields, a stub counts as a field
    /// without an id, and fields are kept unless their id is stripped.
    Splitting,
}

/// `extra` without its ZIP64 (id 1) fields, as `style`'s zipfile does it.
pub fn strip_zip64_extra(extra: &[u8], style: ExtraStripStyle) -> Vec<u8> {
    match style {
        ExtraStripStyle::Skipping => strip_skipping(extra),
        ExtraStripStyle::Splitting => strip_splitting(extra),
    }
}

fn field_header(extra: &[u8], at: usize) -> Option<(u16, usize)> {
    let bytes = extra.get(at..at + 4)?;
    let id = u16::from_le_bytes([bytes[0], bytes[1]]);
    let len = u16::from_le_bytes([bytes[2], bytes[3]]) as usize;
    Some((id, len))
}

fn strip_skipping(extra: &[u8]) -> Vec<u8> {
    let mut kept = Vec::with_capacity(extra.len());
    let (mut start, mut at, mut modified) = (0usize, 0usize, false);
    while let Some((id, len)) = field_header(extra, at) {
        let next = at + 4 + len;
        if id == 1 {
            // Python slices clamp: a field running past the end removes the rest.
            kept.extend_from_slice(&extra[start.min(extra.len())..at]);
            start = next;
            modified = true;
        }
        at = next;
    }
    if !modified {
        return extra.to_vec();
    }
    if start < extra.len() {
        kept.extend_from_slice(&extra[start..]);
    }
    kept
}

fn strip_splitting(extra: &[u8]) -> Vec<u8> {
    let mut kept = Vec::with_capacity(extra.len());
    let mut rest = extra;
    while !rest.is_empty() {
        let (id, len) = match field_header(rest, 0) {
            Some((id, len)) => (Some(id), len),
            None => (None, 0),
        };
        let end = (4 + len).min(rest.len());
        if id != Some(1) {
            kept.extend_from_slice(&rest[..end]);
        }
        rest = &rest[end..];
    }
    kept
}

/// Fails as `struct.pack` would if `value` does not fit the struct code `format`.
pub fn check_field(field: &'static str, format: char, value: i128) -> Result<(), ZipError> {
    let max: i128 = match format {
        'B' => 0xFF,
        'H' => 0xFFFF,
        'L' => 0xFFFF_FFFF,
        _ => i128::from(u64::MAX),
    };
    if (0..=max).contains(&value) {
        Ok(())
    } else {
        Err(ZipError::FieldOutOfRange {
            field,
            format,
            value,
        })
    }
}
