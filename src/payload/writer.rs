//! The archive: local headers and data as `ZipFile.writestr` leaves them in a seekable
//! file, then the central directory and end record of `ZipFile.close()`.

use super::deflate::{compress_entry, Compressed};
use super::disk_cache::DiskCache;
use super::entry::{
    check_field, strip_zip64_extra, EntryInfo, ExtraStripStyle, DEFAULT_EXTERNAL_ATTR,
    ZIP64_VERSION,
};
use super::{Method, ZipError};

const LOCAL_HEADER_SIGNATURE: &[u8; 4] = b"PK\x03\x04";
const CENTRAL_HEADER_SIGNATURE: &[u8; 4] = b"PK\x01\x02";
const END_SIGNATURE: &[u8; 4] = b"PK\x05\x06";
const END64_SIGNATURE: &[u8; 4] = b"PK\x06\x06";
const END64_LOCATOR_SIGNATURE: &[u8; 4] = b"PK\x06\x07";
const ZIP64_EXTRA_ID: u16 = 1;

/// zipfile's module-level limits.  They are read at call time, so a test can lower them on
/// zipfile and here alike to reach the ZIP64 paths without gigabytes of data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// `ZIP64_LIMIT`: sizes and offsets above it need ZIP64 records.
    pub zip64: u64,
    /// `ZIP_FILECOUNT_LIMIT`: more entries than this need a ZIP64 end record.
    pub file_count: u64,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            zip64: (1 << 31) - 1,
            file_count: (1 << 16) - 1,
        }
    }
}

/// What `writestr` leaves in the `ZipInfo` it was given, so the glue can set it there too.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WrittenEntry {
    pub header_offset: u64,
    pub crc: u32,
    pub compress_size: u64,
    pub file_size: u64,
    pub flag_bits: i64,
    pub external_attr: i64,
    pub create_version: i64,
    pub extract_version: i64,
}

#[derive(Clone)]
pub(super) struct Recorded {
    pub(super) info: EntryInfo,
    pub(super) written: WrittenEntry,
}

/// An archive being written, as a `ZipFile(BytesIO(), mode='w')` holds it.
pub struct ZipWriter {
    /// The BytesIO's buffer: what `getvalue()` would return.
    pub(super) out: Vec<u8>,
    /// Where the next header goes; zipfile's `start_dir`.
    pub(super) start_dir: usize,
    pub(super) entries: Vec<Recorded>,
    pub(super) limits: Limits,
    disk_cache: Option<DiskCache>,
}

impl ZipWriter {
    pub fn new(limits: Limits) -> ZipWriter {
        ZipWriter {
            out: Vec::new(),
            start_dir: 0,
            entries: Vec::new(),
            limits,
            disk_cache: None,
        }
    }

    /// Deflated streams are also looked for in, and left in, `disk_cache`.
    pub fn with_disk_cache(mut self, disk_cache: Option<DiskCache>) -> ZipWriter {
        self.disk_cache = disk_cache;
        self
    }

    /// The names written so far, in order (`ZipFile.namelist()`).
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|e| e.info.name.as_str())
    }

    /// `writestr(info, data)`: compress and append one entry.
    pub fn add(&mut self, info: EntryInfo, data: &[u8]) -> Result<WrittenEntry, ZipError> {
        let compressed = compress_entry(info.method, data, self.disk_cache.as_ref())?;
        self.add_compressed(info, data, &compressed)
    }

    /// `writestr(info, data)` with the data already compressed by [`compress_entry`], so
    /// entries can be compressed away from the writer (in parallel, without the GIL).
    pub fn add_compressed(
        &mut self,
        info: EntryInfo,
        data: &[u8],
        compressed: &Compressed,
    ) -> Result<WrittenEntry, ZipError> {
        let file_size = compressed.file_size;
        // zipfile compares `file_size * 1.05` (a float) with the limit.
        let zip64 = (file_size as f64) * 1.05 > self.limits.zip64 as f64;
        let mut written = WrittenEntry {
            header_offset: self.start_dir as u64,
            crc: compressed.crc,
            compress_size: 0,
            file_size,
            flag_bits: 0,
            external_attr: if info.external_attr == 0 {
                DEFAULT_EXTERNAL_ATTR
            } else {
                info.external_attr
            },
            create_version: info.create_version,
            extract_version: info.extract_version,
        };
        // zipfile first writes the header with CRC and compressed size zeroed (its fields
        // are checked then, before any data), then the data, then the header again.
        let mut placeholder = WrittenEntry { crc: 0, ..written };
        let first_header = local_header(&info, &mut placeholder, zip64)?;
        let body = compressed.stored_bytes(data);
        written.compress_size = body.len() as u64;
        if !zip64 && (file_size > self.limits.zip64 || written.compress_size > self.limits.zip64) {
            // zipfile fails before rewriting the header and leaves both in the file, where
            // its next entry or the central directory overwrites them.
            self.overwrite_at(self.start_dir, &first_header);
            self.overwrite_at(self.start_dir + first_header.len(), body);
            let too_large = if file_size > self.limits.zip64 {
                ZipError::FileTooLarge
            } else {
                ZipError::CompressedTooLarge
            };
            return Err(too_large);
        }
        let header = local_header(&info, &mut written, zip64)?;
        let at = self.start_dir;
        self.overwrite_at(at, &header);
        self.overwrite_at(at + header.len(), body);
        self.start_dir = at + header.len() + body.len();
        self.entries.push(Recorded { info, written });
        Ok(written)
    }

    /// `close()`: the central directory and end record after the last entry; returns the
    /// whole buffer (`BytesIO.getvalue()`).
    pub fn finish(
        mut self,
        comment: &[u8],
        strip_style: ExtraStripStyle,
    ) -> Result<Vec<u8>, ZipError> {
        let mut tail = Vec::with_capacity(self.entries.len() * 100 + 100);
        for entry in &self.entries {
            central_header(&mut tail, entry, self.limits, strip_style)?;
        }
        let dir_offset = self.start_dir as u64;
        let dir_size = tail.len() as u64;
        let count = self.entries.len() as u64;
        let (mut end_count, mut end_size, mut end_offset) = (
            i128::from(count),
            i128::from(dir_size),
            i128::from(dir_offset),
        );
        if count > self.limits.file_count
            || dir_offset > self.limits.zip64
            || dir_size > self.limits.zip64
        {
            let end64_at = dir_offset + dir_size;
            tail.extend_from_slice(END64_SIGNATURE);
            tail.extend_from_slice(&44u64.to_le_bytes());
            tail.extend_from_slice(&45u16.to_le_bytes());
            tail.extend_from_slice(&45u16.to_le_bytes());
            tail.extend_from_slice(&0u32.to_le_bytes());
            tail.extend_from_slice(&0u32.to_le_bytes());
            for value in [count, count, dir_size, dir_offset] {
                tail.extend_from_slice(&value.to_le_bytes());
            }
            tail.extend_from_slice(END64_LOCATOR_SIGNATURE);
            tail.extend_from_slice(&0u32.to_le_bytes());
            tail.extend_from_slice(&end64_at.to_le_bytes());
            tail.extend_from_slice(&1u32.to_le_bytes());
            end_count = end_count.min(0xFFFF);
            end_size = end_size.min(0xFFFF_FFFF);
            end_offset = end_offset.min(0xFFFF_FFFF);
        }
        check_field("entry count", 'H', end_count)?;
        check_field("central directory size", 'L', end_size)?;
        check_field("central directory offset", 'L', end_offset)?;
        check_field("comment length", 'H', comment.len() as i128)?;
        tail.extend_from_slice(END_SIGNATURE);
        tail.extend_from_slice(&[0, 0, 0, 0]);
        tail.extend_from_slice(&(end_count as u16).to_le_bytes());
        tail.extend_from_slice(&(end_count as u16).to_le_bytes());
        tail.extend_from_slice(&(end_size as u32).to_le_bytes());
        tail.extend_from_slice(&(end_offset as u32).to_le_bytes());
        tail.extend_from_slice(&(comment.len() as u16).to_le_bytes());
        tail.extend_from_slice(comment);
        let at = self.start_dir;
        self.overwrite_at(at, &tail);
        Ok(self.out)
    }

    /// A write at `at` into the buffer, as `BytesIO.seek(at); write(bytes)`: overwrite what
    /// is there, extend past the end.
    fn overwrite_at(&mut self, at: usize, bytes: &[u8]) {
        if at == self.out.len() {
            // The usual case: appending.
            self.out.extend_from_slice(bytes);
            return;
        }
        let end = at + bytes.len();
        if self.out.len() < end {
            self.out.resize(end, 0);
        }
        self.out[at..end].copy_from_slice(bytes);
    }
}

/// `ZipInfo.FileHeader(zip64)`, which also raises the entry's versions for ZIP64.
fn local_header(
    info: &EntryInfo,
    written: &mut WrittenEntry,
    zip64: bool,
) -> Result<Vec<u8>, ZipError> {
    let mut extra = info.extra.clone();
    let (mut compress_size, mut file_size) = (
        i128::from(written.compress_size),
        i128::from(written.file_size),
    );
    if zip64 {
        extra.extend_from_slice(&ZIP64_EXTRA_ID.to_le_bytes());
        extra.extend_from_slice(&16u16.to_le_bytes());
        extra.extend_from_slice(&written.file_size.to_le_bytes());
        extra.extend_from_slice(&written.compress_size.to_le_bytes());
        file_size = 0xFFFF_FFFF;
        compress_size = 0xFFFF_FFFF;
        written.extract_version = written.extract_version.max(ZIP64_VERSION);
        written.create_version = written.create_version.max(ZIP64_VERSION);
    }
    let (name, flag_bits) = info.name_and_flags();
    written.flag_bits = flag_bits;
    let sizes = (compress_size, file_size);
    let head = [("extract_version", 'B', i128::from(written.extract_version))];
    let shared = shared_fields(info, (name, flag_bits), written.crc, sizes, &extra);
    let mut header = Vec::with_capacity(30 + name.len() + extra.len());
    header.extend_from_slice(LOCAL_HEADER_SIGNATURE);
    pack_fields(&mut header, &[&head, &shared])?;
    header.extend_from_slice(name);
    header.extend_from_slice(&extra);
    Ok(header)
}

/// One central directory record, as `_write_end_record` writes it.
fn central_header(
    tail: &mut Vec<u8>,
    entry: &Recorded,
    limits: Limits,
    strip_style: ExtraStripStyle,
) -> Result<(), ZipError> {
    let (info, written) = (&entry.info, &entry.written);
    let mut zip64_values: Vec<u64> = Vec::new();
    let (mut file_size, mut compress_size) = (
        i128::from(written.file_size),
        i128::from(written.compress_size),
    );
    if written.file_size > limits.zip64 || written.compress_size > limits.zip64 {
        zip64_values.extend([written.file_size, written.compress_size]);
        file_size = 0xFFFF_FFFF;
        compress_size = 0xFFFF_FFFF;
    }
    let mut header_offset = i128::from(written.header_offset);
    if written.header_offset > limits.zip64 {
        zip64_values.push(written.header_offset);
        header_offset = 0xFFFF_FFFF;
    }
    let mut min_version = 0;
    let extra = if zip64_values.is_empty() {
        info.extra.clone()
    } else {
        min_version = ZIP64_VERSION;
        let mut extra = Vec::with_capacity(4 + 8 * zip64_values.len() + info.extra.len());
        extra.extend_from_slice(&ZIP64_EXTRA_ID.to_le_bytes());
        extra.extend_from_slice(&(8 * zip64_values.len() as u16).to_le_bytes());
        for value in &zip64_values {
            extra.extend_from_slice(&value.to_le_bytes());
        }
        extra.extend_from_slice(&strip_zip64_extra(&info.extra, strip_style));
        extra
    };
    let (name, flag_bits) = info.name_and_flags();
    let head = [
        (
            "create_version",
            'B',
            i128::from(written.create_version.max(min_version)),
        ),
        ("create_system", 'B', i128::from(info.create_system)),
        (
            "extract_version",
            'B',
            i128::from(written.extract_version.max(min_version)),
        ),
    ];
    let sizes = (compress_size, file_size);
    let shared = shared_fields(info, (name, flag_bits), written.crc, sizes, &extra);
    let rest = [
        ("comment length", 'H', info.comment.len() as i128),
        ("disk number", 'H', 0),
        ("internal_attr", 'H', i128::from(info.internal_attr)),
        ("external_attr", 'L', i128::from(written.external_attr)),
        ("header_offset", 'L', header_offset),
    ];
    tail.extend_from_slice(CENTRAL_HEADER_SIGNATURE);
    pack_fields(tail, &[&head, &shared, &rest])?;
    tail.extend_from_slice(name);
    tail.extend_from_slice(&extra);
    tail.extend_from_slice(&info.comment);
    Ok(())
}

/// One field of a header: its name (for the error), its `struct` format and its value.
type Field = (&'static str, char, i128);

/// The fields a local header and a central directory record share, from `reserved` to
/// `extra length`, with the sizes `(compress_size, file_size)` as the record gives them.
fn shared_fields(
    info: &EntryInfo,
    (name, flag_bits): (&[u8], i64),
    crc: u32,
    (compress_size, file_size): (i128, i128),
    extra: &[u8],
) -> [Field; 10] {
    let (dostime, dosdate) = info.dos_stamp();
    [
        ("reserved", 'B', i128::from(info.reserved)),
        ("flag_bits", 'H', i128::from(flag_bits)),
        ("compress_type", 'H', i128::from(info.method.code())),
        ("dostime", 'H', dostime),
        ("dosdate", 'H', dosdate),
        ("CRC", 'L', i128::from(crc)),
        ("compress_size", 'L', compress_size),
        ("file_size", 'L', file_size),
        ("filename length", 'H', name.len() as i128),
        ("extra length", 'H', extra.len() as i128),
    ]
}

/// Little-endian fields after checking them all in order, as one `struct.pack` call does.
fn pack_fields(out: &mut Vec<u8>, groups: &[&[Field]]) -> Result<(), ZipError> {
    let fields = || groups.iter().flat_map(|group| group.iter());
    for &(field, format, value) in fields() {
        check_field(field, format, value)?;
    }
    for &(_, format, value) in fields() {
        match format {
            'B' => out.push(value as u8),
            'H' => out.extend_from_slice(&(value as u16).to_le_bytes()),
            _ => out.extend_from_slice(&(value as u32).to_le_bytes()),
        }
    }
    Ok(())
}

/// A whole archive of `entries` (name, data), every one with `date_time` and `method`,
/// exactly as ansible-core's payload is built: `ZipInfo(name, date_time)` with
/// `compress_type = method`, `writestr`, then `close()`.
pub fn build_zip(
    entries: &[(&str, &[u8])],
    date_time: [i64; 6],
    method: Method,
) -> Result<Vec<u8>, ZipError> {
    let mut writer = ZipWriter::new(Limits::default());
    for (name, data) in entries {
        writer.add(EntryInfo::new(name, date_time, method)?, data)?;
    }
    writer.finish(b"", ExtraStripStyle::Splitting)
}
