//! The entries of an archive, kept to be written again.  A remembered module walk writes
//! the same files into every payload of its module, and the only thing in those entries
//! that may differ from one payload to the next is their date (ansible-core dates each
//! payload with the time it is built).  A [`Block`] is the local headers and data an empty
//! archive was given, with what its central directory needs of them;
//! [`ZipWriter::add_block`] puts them into another empty archive with that archive's date
//! written into each header: byte for byte what writing the same entries again gives.

use super::entry::{check_field, EntryInfo};
use super::writer::{Limits, Recorded, WrittenEntry, ZipWriter};
use super::Method;

/// Where a local header holds its DOS time and date (after the signature, the extract
/// version and reserved bytes, the flags and the compression method).
const DOS_STAMP_AT: usize = 10;

/// Whole entries written at the start of an archive, as that archive holds them.
#[derive(Clone)]
pub struct Block {
    bytes: Vec<u8>,
    entries: Vec<Recorded>,
    limits: Limits,
}

impl Block {
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The bytes of headers and data it holds.
    pub fn nbytes(&self) -> usize {
        self.bytes.len()
    }
}

impl ZipWriter {
    /// Everything written so far as a block, when the archive holds whole entries from its
    /// start and nothing else (None otherwise).
    pub fn block(&self) -> Option<Block> {
        let starts_at_zero = self.entries.first()?.written.header_offset == 0;
        if !starts_at_zero || self.out.len() != self.start_dir {
            return None;
        }
        Some(Block {
            bytes: self.out.clone(),
            entries: self.entries.clone(),
            limits: self.limits,
        })
    }

    /// `block`'s entries written into this archive, every one dated `date_time`; returns
    /// what each entry's `ZipInfo` gets.  Only into an empty archive with the same limits,
    /// and only for a date its headers can hold: otherwise nothing is written and None is
    /// returned, so the entries are written the ordinary way (with zipfile's own errors).
    pub fn add_block(&mut self, block: &Block, date_time: [i64; 6]) -> Option<Vec<WrittenEntry>> {
        if !self.entries.is_empty() || !self.out.is_empty() || self.start_dir != 0 {
            return None;
        }
        if block.limits != self.limits || date_time[0] < 1980 {
            return None;
        }
        let first = block.entries.first()?;
        let mut dated = first.info.clone();
        dated.date_time = date_time;
        let (dostime, dosdate) = dated.dos_stamp();
        check_field("dostime", 'H', dostime).ok()?;
        check_field("dosdate", 'H', dosdate).ok()?;
        let mut bytes = block.bytes.clone();
        let mut stamp = [0u8; 4];
        stamp[..2].copy_from_slice(&(dostime as u16).to_le_bytes());
        stamp[2..].copy_from_slice(&(dosdate as u16).to_le_bytes());
        for entry in &block.entries {
            let at = usize::try_from(entry.written.header_offset).ok()? + DOS_STAMP_AT;
            bytes.get_mut(at..at + 4)?.copy_from_slice(&stamp);
        }
        let mut entries = block.entries.clone();
        for entry in &mut entries {
            entry.info.date_time = date_time;
        }
        let written = entries.iter().map(|e| e.written).collect();
        self.start_dir = bytes.len();
        self.out = bytes;
        self.entries = entries;
        Some(written)
    }
}

/// What a block file starts with (bump when the file's layout or what the writer puts in
/// headers changes, so blocks written by another build are never taken).
const FILE_MAGIC: &[u8; 8] = b"AABLK001";
/// A local header's fixed part: the name's length is at 26, the extra's at 28.
const LOCAL_HEADER_LEN: usize = 30;

/// Why a block file was not taken (every reason is a miss for the caller).
#[derive(Debug, PartialEq, Eq)]
pub struct BadBlock(pub &'static str);

impl Block {
    /// The `EntryInfo` of each entry, in order.
    pub fn infos(&self) -> impl Iterator<Item = &EntryInfo> {
        self.entries.iter().map(|e| &e.info)
    }

    /// The block as the bytes of a file: its entries' fields, its headers and data, and a
    /// CRC-32 of all that (so a damaged file is refused by [`Block::from_file_bytes`]).
    pub fn to_file_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.bytes.len() + self.entries.len() * 160 + 64);
        out.extend_from_slice(FILE_MAGIC);
        put_u64(&mut out, self.limits.zip64);
        put_u64(&mut out, self.limits.file_count);
        put_u64(&mut out, self.entries.len() as u64);
        for entry in &self.entries {
            let (info, w) = (&entry.info, &entry.written);
            put_bytes(&mut out, info.name.as_bytes());
            for part in info.date_time {
                put_i64(&mut out, part);
            }
            put_i64(&mut out, i64::from(info.method.code()));
            for value in [
                info.create_system,
                info.create_version,
                info.extract_version,
                info.reserved,
                info.internal_attr,
                info.external_attr,
            ] {
                put_i64(&mut out, value);
            }
            put_bytes(&mut out, &info.extra);
            put_bytes(&mut out, &info.comment);
            put_u64(&mut out, w.header_offset);
            put_u64(&mut out, u64::from(w.crc));
            put_u64(&mut out, w.compress_size);
            put_u64(&mut out, w.file_size);
            for value in [
                w.flag_bits,
                w.external_attr,
                w.create_version,
                w.extract_version,
            ] {
                put_i64(&mut out, value);
            }
        }
        put_bytes(&mut out, &self.bytes);
        let crc = crc32fast::hash(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        out
    }

    /// The block a file made by [`Block::to_file_bytes`] holds, checked: its CRC, and every
    /// entry's local header where its offset says, with its name, method, CRC and sizes,
    /// the entries one after the other from 0 to the end of the bytes.
    pub fn from_file_bytes(file: &[u8]) -> Result<Block, BadBlock> {
        if file.len() < FILE_MAGIC.len() + 4 || &file[..FILE_MAGIC.len()] != FILE_MAGIC {
            return Err(BadBlock("not a block file"));
        }
        let (body, crc) = file.split_at(file.len() - 4);
        if crc32fast::hash(body).to_le_bytes() != crc {
            return Err(BadBlock("damaged"));
        }
        let mut r = Reader {
            rest: &body[FILE_MAGIC.len()..],
        };
        let limits = Limits {
            zip64: r.u64()?,
            file_count: r.u64()?,
        };
        let count = usize::try_from(r.u64()?).map_err(|_| BadBlock("count"))?;
        if count == 0 || count > r.rest.len() / 100 {
            return Err(BadBlock("count"));
        }
        let mut entries = Vec::with_capacity(count);
        for _ in 0..count {
            let name = String::from_utf8(r.bytes()?.to_vec()).map_err(|_| BadBlock("name"))?;
            let mut date_time = [0i64; 6];
            for part in &mut date_time {
                *part = r.i64()?;
            }
            let method = Method::from_code(r.i64()?).ok_or(BadBlock("method"))?;
            let mut fields = [0i64; 6];
            for field in &mut fields {
                *field = r.i64()?;
            }
            let [create_system, create_version, extract_version, reserved, internal_attr, external_attr] =
                fields;
            let extra = r.bytes()?.to_vec();
            let comment = r.bytes()?.to_vec();
            let header_offset = r.u64()?;
            let crc = u32::try_from(r.u64()?).map_err(|_| BadBlock("crc"))?;
            let compress_size = r.u64()?;
            let file_size = r.u64()?;
            let mut written = [0i64; 4];
            for field in &mut written {
                *field = r.i64()?;
            }
            entries.push(Recorded {
                info: EntryInfo {
                    name,
                    date_time,
                    method,
                    create_system,
                    create_version,
                    extract_version,
                    reserved,
                    internal_attr,
                    external_attr,
                    extra,
                    comment,
                },
                written: WrittenEntry {
                    header_offset,
                    crc,
                    compress_size,
                    file_size,
                    flag_bits: written[0],
                    external_attr: written[1],
                    create_version: written[2],
                    extract_version: written[3],
                },
            });
        }
        let bytes = r.bytes()?.to_vec();
        if !r.rest.is_empty() {
            return Err(BadBlock("trailing bytes"));
        }
        let block = Block {
            bytes,
            entries,
            limits,
        };
        let mut at = 0usize;
        for entry in &block.entries {
            let data = block.entry_data(entry).ok_or(BadBlock("entry"))?;
            if usize::try_from(entry.written.header_offset).ok() != Some(at) {
                return Err(BadBlock("offsets"));
            }
            at = data.as_ptr() as usize - block.bytes.as_ptr() as usize + data.len();
        }
        if at != block.bytes.len() {
            return Err(BadBlock("length"));
        }
        Ok(block)
    }

    /// An entry's stored bytes (after its local header), when its header is there and says
    /// what the entry does: name, method, CRC (sizes too, unless they are in a ZIP64 extra).
    fn entry_data(&self, entry: &Recorded) -> Option<&[u8]> {
        let at = usize::try_from(entry.written.header_offset).ok()?;
        let header = self.bytes.get(at..at.checked_add(LOCAL_HEADER_LEN)?)?;
        let u16_at = |i: usize| u16::from_le_bytes([header[i], header[i + 1]]);
        let u32_at =
            |i: usize| u32::from_le_bytes([header[i], header[i + 1], header[i + 2], header[i + 3]]);
        if &header[..4] != b"PK\x03\x04"
            || u16_at(8) != entry.info.method.code()
            || u32_at(14) != entry.written.crc
        {
            return None;
        }
        let (name_len, extra_len) = (usize::from(u16_at(26)), usize::from(u16_at(28)));
        let name_at = at + LOCAL_HEADER_LEN;
        if self.bytes.get(name_at..name_at + name_len)? != entry.info.name.as_bytes() {
            return None;
        }
        let sizes = (u32_at(18), u32_at(22));
        if sizes != (u32::MAX, u32::MAX)
            && (u64::from(sizes.0), u64::from(sizes.1))
                != (entry.written.compress_size, entry.written.file_size)
        {
            return None;
        }
        let data_at = name_at + name_len + extra_len;
        let end = data_at.checked_add(usize::try_from(entry.written.compress_size).ok()?)?;
        self.bytes.get(data_at..end)
    }

    /// Each entry's data (what was written), in order: inflated from the stored stream, its
    /// size and CRC checked.
    pub fn datas(&self) -> Result<Vec<Vec<u8>>, BadBlock> {
        self.entries
            .iter()
            .map(|entry| {
                let stored = self.entry_data(entry).ok_or(BadBlock("entry"))?;
                let size =
                    usize::try_from(entry.written.file_size).map_err(|_| BadBlock("size"))?;
                let data = match entry.info.method {
                    Method::Stored => stored.to_vec(),
                    Method::Deflated => inflate_raw(stored, size)?,
                };
                if data.len() != size || crc32fast::hash(&data) != entry.written.crc {
                    return Err(BadBlock("data"));
                }
                Ok(data)
            })
            .collect()
    }
}

fn inflate_raw(stream: &[u8], size: usize) -> Result<Vec<u8>, BadBlock> {
    let mut inflater = flate2::Decompress::new(false);
    let mut out = Vec::with_capacity(size + 1);
    loop {
        let taken = usize::try_from(inflater.total_in()).unwrap_or(usize::MAX);
        let status = inflater
            .decompress_vec(
                stream.get(taken..).unwrap_or_default(),
                &mut out,
                flate2::FlushDecompress::Finish,
            )
            .map_err(|_| BadBlock("stream"))?;
        match status {
            flate2::Status::StreamEnd => return Ok(out),
            _ if out.len() > size => return Err(BadBlock("stream")),
            _ if out.len() == out.capacity() => out.reserve(64),
            _ if usize::try_from(inflater.total_in()).ok() == Some(taken) => {
                return Err(BadBlock("stream"))
            }
            _ => {}
        }
    }
}

fn put_u64(out: &mut Vec<u8>, value: u64) {
    out.extend_from_slice(&value.to_le_bytes());
}

fn put_i64(out: &mut Vec<u8>, value: i64) {
    out.extend_from_slice(&value.to_le_bytes());
}

fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    put_u64(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

struct Reader<'a> {
    rest: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], BadBlock> {
        if self.rest.len() < n {
            return Err(BadBlock("truncated"));
        }
        let (head, tail) = self.rest.split_at(n);
        self.rest = tail;
        Ok(head)
    }

    fn u64(&mut self) -> Result<u64, BadBlock> {
        let bytes = self.take(8)?;
        Ok(u64::from_le_bytes(
            bytes.try_into().map_err(|_| BadBlock("truncated"))?,
        ))
    }

    fn i64(&mut self) -> Result<i64, BadBlock> {
        Ok(self.u64()? as i64)
    }

    fn bytes(&mut self) -> Result<&'a [u8], BadBlock> {
        let len = usize::try_from(self.u64()?).map_err(|_| BadBlock("length"))?;
        self.take(len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::payload::{EntryInfo, ExtraStripStyle, Method};

    const FIRST: [i64; 6] = [2024, 5, 6, 7, 8, 10];
    const LATER: [i64; 6] = [2031, 12, 31, 23, 59, 59];

    fn written(date_time: [i64; 6], method: Method) -> ZipWriter {
        let mut writer = ZipWriter::new(Limits::default());
        let text = b"import os\n".repeat(300);
        for (name, data) in [
            ("a/__init__.py", &b""[..]),
            ("a/b.py", &text[..]),
            ("\u{e9}.py", b"x = 1\n"),
        ] {
            writer
                .add(EntryInfo::new(name, date_time, method).unwrap(), data)
                .unwrap();
        }
        writer
    }

    fn finished(writer: ZipWriter) -> Vec<u8> {
        writer.finish(b"", ExtraStripStyle::Splitting).unwrap()
    }

    #[test]
    fn a_block_redated_is_the_entries_written_again() {
        for method in [Method::Stored, Method::Deflated] {
            let block = written(FIRST, method).block().unwrap();
            for date_time in [FIRST, LATER] {
                let mut writer = ZipWriter::new(Limits::default());
                let fields = writer.add_block(&block, date_time).unwrap();
                let expected = written(date_time, method);
                let expected_fields: Vec<WrittenEntry> =
                    expected.entries.iter().map(|e| e.written).collect();
                assert_eq!(fields, expected_fields);
                assert_eq!(finished(writer), finished(expected));
            }
        }
    }

    #[test]
    fn a_block_goes_only_into_an_empty_archive_of_the_same_limits_and_a_date_that_fits() {
        let block = written(FIRST, Method::Deflated).block().unwrap();
        let mut busy = written(FIRST, Method::Stored);
        assert!(busy.add_block(&block, FIRST).is_none());
        let other = Limits {
            zip64: 1000,
            file_count: 10,
        };
        assert!(ZipWriter::new(other).add_block(&block, FIRST).is_none());
        for date_time in [
            [1979, 1, 1, 0, 0, 0],
            [2108, 1, 1, 0, 0, 0],
            [2024, 1, 1, 24, 0, 0],
        ] {
            let mut writer = ZipWriter::new(Limits::default());
            let before = writer.start_dir;
            // 24:00 fits the DOS fields (zipfile writes it too): only the year 2108 must not
            let taken = writer.add_block(&block, date_time).is_some();
            assert_eq!(taken, date_time[3] == 24, "{date_time:?}");
            if !taken {
                assert_eq!(
                    (writer.start_dir, writer.out.len(), writer.entries.len()),
                    (before, 0, 0)
                );
            }
        }
        assert!(ZipWriter::new(Limits::default()).block().is_none());
    }

    #[test]
    fn a_block_file_gives_the_same_block_back_and_its_data() {
        for method in [Method::Stored, Method::Deflated] {
            let block = written(FIRST, method).block().unwrap();
            let file = block.to_file_bytes();
            let again = Block::from_file_bytes(&file).unwrap();
            assert_eq!(again.bytes, block.bytes);
            assert_eq!(again.limits, block.limits);
            let infos: Vec<_> = again.infos().cloned().collect();
            assert_eq!(infos, block.infos().cloned().collect::<Vec<_>>());
            let mut writer = ZipWriter::new(Limits::default());
            let fields = writer.add_block(&again, LATER).unwrap();
            let expected = written(LATER, method);
            let expected_fields: Vec<WrittenEntry> =
                expected.entries.iter().map(|e| e.written).collect();
            assert_eq!(fields, expected_fields);
            assert_eq!(finished(writer), finished(expected));
            let text = b"import os\n".repeat(300);
            assert_eq!(
                again.datas().unwrap(),
                vec![Vec::new(), text, b"x = 1\n".to_vec()]
            );
        }
    }

    #[test]
    fn a_damaged_or_cut_block_file_is_refused() {
        let file = written(FIRST, Method::Deflated)
            .block()
            .unwrap()
            .to_file_bytes();
        for at in [0, 9, file.len() / 2, file.len() - 40, file.len() - 1] {
            let mut damaged = file.clone();
            damaged[at] ^= 0x20;
            assert!(Block::from_file_bytes(&damaged).is_err(), "{at}");
        }
        for len in [0, 8, 12, file.len() / 2, file.len() - 1] {
            assert!(Block::from_file_bytes(&file[..len]).is_err(), "{len}");
        }
        let mut longer = file[..file.len() - 4].to_vec();
        longer.push(0);
        let crc = crc32fast::hash(&longer);
        longer.extend_from_slice(&crc.to_le_bytes());
        assert!(Block::from_file_bytes(&longer).is_err());
    }

    #[test]
    fn a_block_file_whose_headers_disagree_with_its_entries_is_refused() {
        let block = written(FIRST, Method::Deflated).block().unwrap();
        // a well-formed file (its CRC right) whose second entry's stored CRC is not its header's
        let mut wrong = block.clone();
        wrong.entries[1].written.crc ^= 1;
        assert!(Block::from_file_bytes(&wrong.to_file_bytes()).is_err());
        let mut renamed = block.clone();
        renamed.entries[0].info.name = "b/__init__.py".into();
        assert!(Block::from_file_bytes(&renamed.to_file_bytes()).is_err());
        let mut moved = block;
        moved.entries[2].written.header_offset += 1;
        assert!(Block::from_file_bytes(&moved.to_file_bytes()).is_err());
    }
}
