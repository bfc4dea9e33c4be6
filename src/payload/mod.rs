//! The payload engine: zip archives byte-identical to what CPython's `zipfile` writes.
//!
//! ansible-core builds each AnsiBallZ payload with `zipfile.ZipFile(BytesIO(), mode='w',
//! compression=...)`, one `writestr(ZipInfo(name, date_time), data)` per file and `close()`.
//! [`ZipWriter`] reproduces those bytes: the same local headers (written once, with the
//! final CRC and sizes, where zipfile writes a placeholder and seeks back), the same
//! central directory and end record, the same ZIP64 decisions, and deflate through the same
//! system zlib with the same parameters as `zlib.compressobj(-1, DEFLATED, -15)`.
//!
//! Errors carry enough for the glue to raise what zipfile would raise (see [`ZipError`]).

mod block;
pub mod cache;
mod deflate;
pub mod disk_cache;
mod entry;
mod writer;

#[cfg(test)]
mod proptests;
#[cfg(test)]
mod tests;

pub use block::{BadBlock, Block};
pub use deflate::{compress_entry, deflate_raw, Compressed};
pub use disk_cache::DiskCache;
pub use entry::{sanitize_name, EntryInfo, ExtraStripStyle};
pub use writer::{build_zip, Limits, WrittenEntry, ZipWriter};

use std::fmt;

/// The compression methods written natively: zipfile's `ZIP_STORED` and `ZIP_DEFLATED`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    Stored,
    Deflated,
}

impl Method {
    /// The method number stored in the headers (and zipfile's constant's value).
    pub fn code(self) -> u16 {
        match self {
            Method::Stored => 0,
            Method::Deflated => 8,
        }
    }

    /// The method for zipfile's constant, or None for one this engine does not write.
    pub fn from_code(code: i64) -> Option<Method> {
        match code {
            0 => Some(Method::Stored),
            8 => Some(Method::Deflated),
            _ => None,
        }
    }
}

/// Why an archive is left to zipfile after the native writer was asked (the reasons found
/// before it is asked are the Python side's).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fallback {
    /// `build_zip`'s writer failed inside (a panic, which the extension catches): zipfile
    /// writes the whole archive.
    BuildZipInternalError,
    /// A `PayloadZipFile`'s writer failed inside: zipfile carries on from the entries kept.
    WriterInternalError,
}

impl Fallback {
    /// The reason as counted under `payload` in `status()`.
    pub fn reason(self) -> &'static str {
        match self {
            Fallback::BuildZipInternalError => "build_zip: internal error in the native writer",
            Fallback::WriterInternalError => "the payload archive was handed over to zipfile",
        }
    }
}

/// Why an archive could not be written.  Each variant maps to the exception zipfile raises.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ZipError {
    /// `ZipInfo` refuses a year before 1980 (`ValueError`).
    TimestampBefore1980,
    /// A value does not fit its field in a header: zipfile's `struct.pack` raises
    /// `struct.error`.  `format` is the struct code (`B`, `H`, `L` or `Q`) so the glue can
    /// let the interpreter's own `struct` word the message.
    FieldOutOfRange {
        field: &'static str,
        format: char,
        value: i128,
    },
    /// Data over the ZIP64 limit in an entry not opened as ZIP64 (`RuntimeError`).
    FileTooLarge,
    /// Compressed data over the ZIP64 limit in an entry not opened as ZIP64 (`RuntimeError`).
    CompressedTooLarge,
    /// zlib reported an error (`zlib.error`).
    Deflate(String),
}

impl fmt::Display for ZipError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ZipError::TimestampBefore1980 => {
                f.write_str("ZIP does not support timestamps before 1980")
            }
            ZipError::FieldOutOfRange {
                field,
                format,
                value,
            } => {
                write!(f, "{field} {value} does not fit struct format {format:?}")
            }
            ZipError::FileTooLarge => f.write_str("File size too large, try using force_zip64"),
            ZipError::CompressedTooLarge => {
                f.write_str("Compressed size too large, try using force_zip64")
            }
            ZipError::Deflate(msg) => write!(f, "Error while compressing data: {msg}"),
        }
    }
}

impl std::error::Error for ZipError {}
