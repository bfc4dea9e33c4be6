//! Deflated entries shared through a directory, between the processes of one run.
//!
//! ansible-playbook builds each module's payload in a forked worker that exits after its
//! task, so what one worker deflated dies with it.  Here each stream is also left in a file
//! the next worker can read: named by the data's CRC-32 and length, holding the data itself
//! and its stream.  A file is used only when the data in it equals the new data byte for
//! byte, so a damaged, foreign or colliding file is a miss, never wrong bytes.  Every I/O
//! error is a miss too: the cache can only save time.  The directory must be private to
//! the run and to one zlib (the caller puts it under ansible's local temporary directory,
//! named with zlib's version).

use std::fs;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

const MAGIC: &[u8; 8] = b"AAZDEF01";
/// Below this, reading a file costs about what deflating does.
const SMALLEST_SHARED: usize = 4096;
/// How much of the stored data is read and compared at a time.
const COMPARE_CHUNK: usize = 64 * 1024;

static TEMP_NAMES: AtomicU64 = AtomicU64::new(0);
static HITS: AtomicU64 = AtomicU64::new(0);

/// Streams this process took from a directory, for `payload_cache_stats()`.
pub fn hits() -> u64 {
    HITS.load(Ordering::Relaxed)
}

/// Zero the count of `hits()`.
pub fn reset_hits() {
    HITS.store(0, Ordering::Relaxed);
}

/// A directory of deflated streams.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DiskCache {
    dir: PathBuf,
}

impl DiskCache {
    pub fn new(dir: impl Into<PathBuf>) -> DiskCache {
        DiskCache { dir: dir.into() }
    }

    fn path_for(&self, crc: u32, len: usize) -> PathBuf {
        self.dir.join(format!("{crc:08x}-{len}.deflate"))
    }

    /// The stream stored for exactly `data`, if a file holds it.  The stored data is compared
    /// as it is read, through a small buffer: a module_utils file can be megabytes, and a copy
    /// of it all (fresh memory, faulted in page by page) cost a cold worker about a millisecond
    /// per such file.
    pub fn load(&self, crc: u32, data: &[u8]) -> Option<Vec<u8>> {
        if data.len() < SMALLEST_SHARED {
            return None;
        }
        let mut file = fs::File::open(self.path_for(crc, data.len())).ok()?;
        let mut header = [0u8; MAGIC.len() + 8];
        file.read_exact(&mut header).ok()?;
        if &header[..MAGIC.len()] != MAGIC {
            return None;
        }
        let stored_len = u64::from_le_bytes(header[MAGIC.len()..].try_into().ok()?);
        if stored_len != data.len() as u64 || !next_bytes_are(&mut file, data) {
            return None;
        }
        let mut stream = Vec::new();
        file.read_to_end(&mut stream).ok()?;
        // (a stream of data this long is never empty: a file cut after its data is damaged)
        if stream.is_empty() {
            return None;
        }
        HITS.fetch_add(1, Ordering::Relaxed);
        Some(stream)
    }

    /// Leave `deflated` for `data` in the directory (written aside, then renamed into place,
    /// so a reader sees a whole file or none).
    pub fn store(&self, crc: u32, data: &[u8], deflated: &[u8]) {
        if data.len() < SMALLEST_SHARED {
            return;
        }
        let target = self.path_for(crc, data.len());
        if target.exists() {
            return;
        }
        let temp = self.dir.join(format!(
            ".{crc:08x}-{}-{}-{}.part",
            data.len(),
            std::process::id(),
            TEMP_NAMES.fetch_add(1, Ordering::Relaxed)
        ));
        if write_file(&self.dir, &temp, data, deflated).is_err()
            || fs::rename(&temp, &target).is_err()
        {
            let _ = fs::remove_file(&temp);
        }
    }
}

/// Whether the next `expected.len()` bytes of `file` are `expected`.
fn next_bytes_are(file: &mut fs::File, expected: &[u8]) -> bool {
    let mut buffer = vec![0u8; COMPARE_CHUNK.min(expected.len())];
    for chunk in expected.chunks(COMPARE_CHUNK) {
        let part = &mut buffer[..chunk.len()];
        if file.read_exact(part).is_err() || part != chunk {
            return false;
        }
    }
    true
}

fn write_file(dir: &Path, temp: &Path, data: &[u8], deflated: &[u8]) -> std::io::Result<()> {
    private_dir(dir)?;
    let mut file = fs::File::create(temp)?;
    file.write_all(MAGIC)?;
    file.write_all(&(data.len() as u64).to_le_bytes())?;
    file.write_all(data)?;
    file.write_all(deflated)
}

#[cfg(unix)]
fn private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

#[cfg(not(unix))]
fn private_dir(dir: &Path) -> std::io::Result<()> {
    fs::create_dir_all(dir)
}
