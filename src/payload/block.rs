//! The entries of an archive, kept to be written again.  A remembered module walk writes
//! the same files into every payload of its module, and the only thing in those entries
//! that may differ from one payload to the next is their date (ansible-core dates each
//! payload with the time it is built).  A [`Block`] is the local headers and data an empty
//! archive was given, with what its central directory needs of them;
//! [`ZipWriter::add_block`] puts them into another empty archive with that archive's date
//! written into each header: byte for byte what writing the same entries again gives.

use super::entry::check_field;
use super::writer::{Limits, Recorded, WrittenEntry, ZipWriter};

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
}
