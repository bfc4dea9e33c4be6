//! Generated archives, read back by an independent reader: every entry's name, data, CRC and
//! sizes are where the zip format says, and the central directory agrees with the local headers.

use std::io::Read;

use proptest::prelude::*;

use super::{build_zip, sanitize_name, Method};

fn u16_at(b: &[u8], at: usize) -> usize {
    u16::from_le_bytes([b[at], b[at + 1]]) as usize
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// (name, method, crc, data) of each entry, read through the central directory.
fn read_back(archive: &[u8]) -> Vec<(Vec<u8>, u16, u32, Vec<u8>)> {
    let end = archive.len() - 22;
    assert_eq!(
        u32_at(archive, end),
        0x0605_4b50,
        "end of central directory"
    );
    let count = u16_at(archive, end + 10);
    let mut at = u32_at(archive, end + 16) as usize;
    let mut entries = Vec::new();
    for _ in 0..count {
        assert_eq!(u32_at(archive, at), 0x0201_4b50, "central directory header");
        let method = u16_at(archive, at + 10) as u16;
        let crc = u32_at(archive, at + 16);
        let compressed = u32_at(archive, at + 20) as usize;
        let size = u32_at(archive, at + 24) as usize;
        let (name_len, extra_len, comment_len) = (
            u16_at(archive, at + 28),
            u16_at(archive, at + 30),
            u16_at(archive, at + 32),
        );
        let local = u32_at(archive, at + 42) as usize;
        let name = archive[at + 46..at + 46 + name_len].to_vec();
        assert_eq!(u32_at(archive, local), 0x0403_4b50, "local header");
        assert_eq!(u32_at(archive, local + 14), crc, "local CRC");
        assert_eq!(
            &archive[local + 30..local + 30 + u16_at(archive, local + 26)],
            &name[..]
        );
        let start = local + 30 + u16_at(archive, local + 26) + u16_at(archive, local + 28);
        let stored = &archive[start..start + compressed];
        let data = match method {
            0 => stored.to_vec(),
            8 => {
                let mut out = Vec::new();
                flate2::read::DeflateDecoder::new(stored)
                    .read_to_end(&mut out)
                    .expect("inflate");
                out
            }
            other => panic!("method {other}"),
        };
        assert_eq!(data.len(), size, "file size");
        entries.push((name, method, crc, data));
        at += 46 + name_len + extra_len + comment_len;
    }
    entries
}

fn entries() -> impl Strategy<Value = Vec<(String, Vec<u8>)>> {
    let name = prop_oneof![
        "[a-z/._]{0,20}",
        any::<String>(),
        Just("dup.py".to_string())
    ];
    let data = prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..2000),
        "(import x\n){0,200}".prop_map(String::into_bytes),
    ];
    proptest::collection::vec((name, data), 0..8)
}

proptest! {

    #[test]
    fn archives_read_back(entries in entries(), deflated in any::<bool>(), year in 1980i64..2107, rest in proptest::array::uniform5(0i64..60)) {
        let method = if deflated { Method::Deflated } else { Method::Stored };
        let date_time = [year, rest[0] % 12 + 1, rest[1] % 28 + 1, rest[2] % 24, rest[3], rest[4]];
        let borrowed: Vec<(&str, &[u8])> = entries.iter().map(|(n, d)| (n.as_str(), d.as_slice())).collect();
        let archive = build_zip(&borrowed, date_time, method).expect("build");
        let read = read_back(&archive);
        prop_assert_eq!(read.len(), entries.len());
        for ((name, data), (read_name, read_method, crc, read_data)) in entries.iter().zip(&read) {
            prop_assert_eq!(sanitize_name(name).as_bytes(), &read_name[..]);
            prop_assert_eq!(*read_method, method.code());
            prop_assert_eq!(crc32fast::hash(data), *crc);
            prop_assert_eq!(data, read_data);
        }
    }

    #[test]
    fn odd_dates_fail_cleanly(date_time in proptest::array::uniform6(any::<i64>()), deflated in any::<bool>()) {
        let method = if deflated { Method::Deflated } else { Method::Stored };
        // Out-of-range parts must be an error, never a panic or an overflow.
        let _ = build_zip(&[("a", b"data")], date_time, method);
    }
}

/// zipfile's `_strip_extra` before 3.13 (fields walked by their lengths; slices clamp).
fn strip_extra_reference(extra: &[u8]) -> Vec<u8> {
    let (mut buffer, mut start, mut i, mut modified) = (Vec::new(), 0usize, 0usize, false);
    while i + 4 <= extra.len() {
        let id = u16::from_le_bytes([extra[i], extra[i + 1]]);
        let j = i + 4 + u16::from_le_bytes([extra[i + 2], extra[i + 3]]) as usize;
        if id == 1 {
            if i != start {
                buffer.extend_from_slice(&extra[start.min(extra.len())..i]);
            }
            start = j;
            modified = true;
        }
        i = j;
    }
    if !modified {
        return extra.to_vec();
    }
    if start < extra.len() {
        buffer.extend_from_slice(&extra[start..]);
    }
    buffer
}

proptest! {
    #[test]
    fn extra_fields_strip_like_zipfile(extra in proptest::collection::vec(prop_oneof![Just(0u8), Just(1u8), Just(4u8), any::<u8>()], 0..64)) {
        use super::entry::strip_zip64_extra;
        prop_assert_eq!(strip_zip64_extra(&extra, super::ExtraStripStyle::Skipping), strip_extra_reference(&extra));
        // The 3.13 style must at least never panic on any bytes.
        let _ = strip_zip64_extra(&extra, super::ExtraStripStyle::Splitting);
    }
}
