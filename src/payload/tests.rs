//! Golden tests: archives written by CPython's zipfile (`testdata/make_fixtures.py`, the
//! same inputs made by the same generators) must come out byte for byte.

use super::entry::{strip_zip64_extra, ExtraStripStyle};
use super::*;

fn text(n: usize) -> Vec<u8> {
    let mut out = Vec::new();
    let mut i = 0;
    while out.len() < n {
        out.extend_from_slice(
            format!("line {i}: the quick brown fox jumps over the lazy dog\n").as_bytes(),
        );
        i += 1;
    }
    out.truncate(n);
    out
}

fn noise(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed;
    (0..n)
        .map(|_| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (x >> 56) as u8
        })
        .collect()
}

fn ansible_like() -> Vec<(String, Vec<u8>)> {
    vec![
        ("ansible/__init__.py".into(), text(200)),
        ("ansible/module_utils/__init__.py".into(), text(80)),
        ("ansible/module_utils/basic.py".into(), text(100_000)),
        ("ansible/modules/ping.py".into(), noise(5000, 7)),
        ("ansible/modules/__init__.py".into(), Vec::new()),
    ]
}

fn odd_names() -> Vec<(String, Vec<u8>)> {
    vec![
        (
            "\u{fc}n\u{ef}code/\u{444}\u{430}\u{439}\u{43b}.py".into(),
            text(300),
        ),
        ("cut\0here.py".into(), noise(10, 1)),
        ("dir/".into(), Vec::new()),
    ]
}

fn small() -> Vec<(String, Vec<u8>)> {
    (0..5u64)
        .map(|i| {
            let mut data = noise(400 * i as usize, i);
            data.extend(text(300 * i as usize));
            (format!("f{i}.bin"), data)
        })
        .collect()
}

fn build(entries: &[(String, Vec<u8>)], date_time: [i64; 6], method: Method) -> Vec<u8> {
    let borrowed: Vec<(&str, &[u8])> = entries
        .iter()
        .map(|(n, d)| (n.as_str(), d.as_slice()))
        .collect();
    build_zip(&borrowed, date_time, method).expect("the fixtures' inputs are valid")
}

fn build_with_limits(
    entries: &[(String, Vec<u8>)],
    date_time: [i64; 6],
    method: Method,
    limits: Limits,
) -> Vec<u8> {
    let mut writer = ZipWriter::new(limits);
    for (name, data) in entries {
        writer
            .add(EntryInfo::new(name, date_time, method).unwrap(), data)
            .unwrap();
    }
    writer.finish(b"", ExtraStripStyle::Splitting).unwrap()
}

macro_rules! golden {
    ($($test:ident: $file:literal => $built:expr;)*) => {$(
        #[test]
        fn $test() {
            let expected: &[u8] = include_bytes!(concat!("testdata/", $file));
            let got: Vec<u8> = $built;
            assert_eq!(got.len(), expected.len(), "length differs from CPython's {}", $file);
            if let Some(at) = got.iter().zip(expected).position(|(a, b)| a != b) {
                panic!("first difference from CPython's {} at byte {at}", $file);
            }
        }
    )*};
}

const LEAP_DAY: [i64; 6] = [2024, 2, 29, 13, 45, 59];
const SMALL_LIMITS: Limits = Limits {
    zip64: 1000,
    file_count: 3,
};

golden! {
    empty_archive: "empty.zip" => build(&[], [2024, 1, 1, 0, 0, 0], Method::Stored);
    ansible_like_stored: "ansible_like_stored.zip" => build(&ansible_like(), LEAP_DAY, Method::Stored);
    ansible_like_deflated: "ansible_like_deflated.zip" => build(&ansible_like(), LEAP_DAY, Method::Deflated);
    utf8_nul_and_directory_names: "odd_names_deflated.zip" => build(&odd_names(), [1980, 1, 1, 0, 0, 0], Method::Deflated);
    date_parts_spill_like_zipfile: "spilling_date_stored.zip" => build(&odd_names(), [2000, 13, 40, 25, 70, 99], Method::Stored);
    zip64_records_stored: "zip64_stored.zip" => build_with_limits(&small(), [2030, 6, 15, 8, 0, 1], Method::Stored, SMALL_LIMITS);
    zip64_records_deflated: "zip64_deflated.zip" => build_with_limits(&small(), [2030, 6, 15, 8, 0, 1], Method::Deflated, SMALL_LIMITS);
}

#[test]
fn years_before_1980_are_refused() {
    let err = build_zip(&[("a", b"x")], [1979, 12, 31, 23, 59, 59], Method::Stored).unwrap_err();
    assert_eq!(err, ZipError::TimestampBefore1980);
    assert_eq!(
        err.to_string(),
        "ZIP does not support timestamps before 1980"
    );
}

#[test]
fn a_date_past_2107_overflows_the_dos_date_field() {
    let err = build_zip(&[("a", b"x")], [2108, 1, 1, 0, 0, 0], Method::Stored).unwrap_err();
    assert!(
        matches!(
            err,
            ZipError::FieldOutOfRange {
                field: "dosdate",
                format: 'H',
                ..
            }
        ),
        "{err:?}"
    );
}

#[test]
fn negative_time_parts_fail_like_struct_pack() {
    let err = build_zip(&[("a", b"x")], [2000, 1, 1, 0, 0, -1], Method::Stored).unwrap_err();
    assert_eq!(
        err,
        ZipError::FieldOutOfRange {
            field: "dostime",
            format: 'H',
            value: -1
        }
    );
}

#[test]
fn a_name_longer_than_65535_bytes_fails_in_the_local_header() {
    let name = "n".repeat(65536);
    let err = build_zip(&[(name.as_str(), b"")], LEAP_DAY, Method::Stored).unwrap_err();
    assert!(
        matches!(
            err,
            ZipError::FieldOutOfRange {
                field: "filename length",
                ..
            }
        ),
        "{err:?}"
    );
}

#[test]
fn a_compressed_size_over_the_limit_fails_and_the_next_entry_overwrites_it() {
    // 38 bytes of noise deflate to more than 40 (no ZIP64 below 40 / 1.05 bytes).
    let limits = Limits {
        zip64: 40,
        file_count: 100,
    };
    let mut writer = ZipWriter::new(limits);
    let info = EntryInfo::new("noise", LEAP_DAY, Method::Deflated).unwrap();
    assert_eq!(
        writer.add(info, &noise(38, 3)),
        Err(ZipError::CompressedTooLarge)
    );
    assert_eq!(writer.names().count(), 0);
}

#[test]
fn written_entry_reports_what_writestr_leaves_in_the_zipinfo() {
    let mut writer = ZipWriter::new(Limits::default());
    let first = writer
        .add(
            EntryInfo::new("a.py", LEAP_DAY, Method::Stored).unwrap(),
            b"hello",
        )
        .unwrap();
    let second = writer
        .add(
            EntryInfo::new("\u{e9}.py", LEAP_DAY, Method::Deflated).unwrap(),
            b"",
        )
        .unwrap();
    assert_eq!(first.header_offset, 0);
    assert_eq!(
        (first.crc, first.file_size, first.compress_size),
        (0x3610a686, 5, 5)
    );
    assert_eq!(first.external_attr, 0o600 << 16);
    assert_eq!(second.header_offset, 30 + 4 + 5);
    assert_eq!((second.flag_bits, second.compress_size), (0x800, 2));
    assert_eq!(writer.names().collect::<Vec<_>>(), ["a.py", "\u{e9}.py"]);
}

#[test]
fn zip64_fields_are_stripped_from_extra_data_as_each_python_does() {
    let well_formed = [1, 0, 2, 0, 9, 9, 7, 0, 1, 0, 5];
    for style in [ExtraStripStyle::Skipping, ExtraStripStyle::Splitting] {
        assert_eq!(strip_zip64_extra(&well_formed, style), [7, 0, 1, 0, 5]);
    }
    // Malformed data: a field whose length runs past the end, a stub shorter than a header.
    let overrun = [1, 0, 0, 0, 7, 0, 9, 0, 1];
    assert_eq!(
        strip_zip64_extra(&overrun, ExtraStripStyle::Skipping),
        [7, 0, 9, 0, 1]
    );
    assert_eq!(
        strip_zip64_extra(&overrun, ExtraStripStyle::Splitting),
        [7, 0, 9, 0, 1]
    );
    let stub = [1, 0, 0, 0, 7, 0];
    assert_eq!(strip_zip64_extra(&stub, ExtraStripStyle::Skipping), [7, 0]);
    assert_eq!(strip_zip64_extra(&stub, ExtraStripStyle::Splitting), [7, 0]);
}

#[test]
fn stored_and_deflated_entries_round_trip_through_zlib() {
    let data = text(70_000);
    let compressed = compress_entry(Method::Deflated, &data, None).unwrap();
    let mut inflated = Vec::with_capacity(data.len());
    flate2::Decompress::new(false)
        .decompress_vec(
            compressed.deflated.as_deref().unwrap().as_slice(),
            &mut inflated,
            flate2::FlushDecompress::Finish,
        )
        .unwrap();
    assert_eq!(inflated, data);
    assert_eq!(compressed.crc, crc32fast::hash(&data));
}

#[test]
fn the_cache_answers_only_for_equal_data() {
    let mut cache = cache::DeflateCache::new(1 << 20);
    let stream = std::sync::Arc::new(vec![1u8, 2, 3]);
    let data = text(2000);
    cache.insert(7, &data, &stream);
    assert_eq!(cache.get(7, &data).as_deref(), Some(&vec![1u8, 2, 3]));
    // Same key (CRC, length), other bytes: a miss, never the other data's stream.
    let mut other = data.clone();
    other[0] ^= 1;
    assert_eq!(cache.get(7, &other), None);
    assert_eq!(
        cache.stats(),
        cache::CacheStats {
            hits: 1,
            misses: 1,
            bytes: 2003
        }
    );
}

#[test]
fn the_cache_keeps_to_its_budget() {
    let mut cache = cache::DeflateCache::new(3000);
    let stream = std::sync::Arc::new(vec![0u8; 100]);
    cache.insert(1, &text(2000), &stream);
    cache.insert(2, &text(2001), &stream);
    assert_eq!(cache.stats().bytes, 2100);
    assert_eq!(cache.get(2, &text(2001)), None);
}

#[test]
fn a_cached_entry_is_the_stream_zlib_gives() {
    let data = noise(50_000, 11);
    let first = compress_entry(Method::Deflated, &data, None).unwrap();
    let second = compress_entry(Method::Deflated, &data, None).unwrap();
    let fresh = deflate_raw(&data).unwrap();
    assert_eq!(first.deflated.as_deref(), Some(&fresh));
    assert_eq!(second.deflated.as_deref(), Some(&fresh));
}

fn scratch_dir(label: &str) -> std::path::PathBuf {
    let dir =
        std::env::temp_dir().join(format!("ansible-accel-test-{label}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

#[test]
fn the_disk_cache_gives_back_a_stream_only_for_the_same_data() {
    let dir = scratch_dir("disk");
    let disk = DiskCache::new(&dir);
    let data = text(20_000);
    let crc = crc32fast::hash(&data);
    assert_eq!(disk.load(crc, &data), None);
    disk.store(crc, &data, b"stream");
    assert_eq!(disk.load(crc, &data).as_deref(), Some(&b"stream"[..]));
    // The same name for other bytes (a CRC collision): a miss.
    let mut other = data.clone();
    other[100] ^= 0xFF;
    assert_eq!(disk.load(crc, &other), None);
    // A damaged file: a miss.
    let file = std::fs::read_dir(&dir)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    std::fs::write(&file, b"AAZDEF01 cut").unwrap();
    assert_eq!(disk.load(crc, &data), None);
    // Cut inside the data, or right after it (no stream): a miss.
    let mut whole = b"AAZDEF01".to_vec();
    whole.extend_from_slice(&(data.len() as u64).to_le_bytes());
    whole.extend_from_slice(&data);
    std::fs::write(&file, &whole[..whole.len() - 1]).unwrap();
    assert_eq!(disk.load(crc, &data), None);
    std::fs::write(&file, &whole).unwrap();
    assert_eq!(disk.load(crc, &data), None);
    // Data longer than one compared chunk, differing only in its last chunk: a miss; the
    // same data: a hit.
    let long = text(300_000);
    let long_crc = crc32fast::hash(&long);
    disk.store(long_crc, &long, b"long stream");
    let mut near = long.clone();
    near[299_999] ^= 0xFF;
    assert_eq!(disk.load(long_crc, &near), None);
    assert_eq!(
        disk.load(long_crc, &long).as_deref(),
        Some(&b"long stream"[..])
    );
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777,
        0o700
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn archives_built_through_the_disk_cache_are_the_same() {
    let dir = scratch_dir("archive");
    // Data no other test uses, so only this test puts it in the process cache.
    let entries = [
        ("a.py", noise(30_000, 4242)),
        ("b.py", text(50_000)[7..].to_vec()),
    ];
    let build_with_disk = || {
        let mut writer =
            ZipWriter::new(Limits::default()).with_disk_cache(Some(DiskCache::new(&dir)));
        for (name, data) in &entries {
            writer
                .add(
                    EntryInfo::new(name, LEAP_DAY, Method::Deflated).unwrap(),
                    data,
                )
                .unwrap();
        }
        writer.finish(b"", ExtraStripStyle::Splitting).unwrap()
    };
    let from_zlib = build_with_disk();
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 2);
    cache::clear();
    let from_disk = build_with_disk();
    assert_eq!(from_disk, from_zlib);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn fallback_reasons_are_the_texts_status_counts() {
    use super::Fallback;
    assert_eq!(
        Fallback::BuildZipInternalError.reason(),
        "build_zip: internal error in the native writer"
    );
    assert_eq!(
        Fallback::WriterInternalError.reason(),
        "the payload archive was handed over to zipfile"
    );
}
