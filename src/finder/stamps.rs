//! Stat stamps of the files and directories a remembered walk depended on, checked in one
//! go.  A stamp is what `os.stat()` says of a path, as the Python side records it:
//! `(st_dev, st_ino, st_size, st_mtime_ns, st_ctime_ns, st_mode)`, or nothing when the path
//! could not be stat'ed.  A remembered walk is replayed only while every stamp is still the
//! same, so the check runs on every warm walk: here it is a loop of stat calls, without a
//! Python object per path.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// `(st_dev, st_ino, st_size, st_mtime_ns, st_ctime_ns, st_mode)`, as `os.stat()` gives them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stamp {
    pub dev: u64,
    pub ino: u64,
    pub size: u64,
    pub mtime_ns: i128,
    pub ctime_ns: i128,
    pub mode: u32,
}

const NS_PER_S: i128 = 1_000_000_000;

/// The stamp of `path` (symlinks followed, as `os.stat()` does), or None when it cannot be
/// stat'ed.
pub fn stamp(path: &Path) -> Option<Stamp> {
    let meta = std::fs::metadata(path).ok()?;
    Some(Stamp {
        dev: meta.dev(),
        ino: meta.ino(),
        size: meta.size(),
        mtime_ns: i128::from(meta.mtime()) * NS_PER_S + i128::from(meta.mtime_nsec()),
        ctime_ns: i128::from(meta.ctime()) * NS_PER_S + i128::from(meta.ctime_nsec()),
        mode: meta.mode(),
    })
}

/// Paths with the stamps they had when a walk was remembered.
#[derive(Clone, Debug, Default)]
pub struct StampSet {
    expected: Vec<(PathBuf, Option<Stamp>)>,
}

impl StampSet {
    pub fn new(expected: Vec<(PathBuf, Option<Stamp>)>) -> StampSet {
        StampSet { expected }
    }

    /// True while every path still has its stamp: a path that could not be stat'ed then
    /// still cannot be, and every other one has the same device, inode, size, times and mode.
    pub fn unchanged(&self) -> bool {
        self.expected
            .iter()
            .all(|(path, expected)| stamp(path) == *expected)
    }

    pub fn len(&self) -> usize {
        self.expected.len()
    }

    pub fn is_empty(&self) -> bool {
        self.expected.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "ansible-accel-stamps-{}-{name}",
            std::process::id()
        ));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_missing_path_stays_missing() {
        let dir = temp_dir("missing");
        let path = dir.join("absent.py");
        let set = StampSet::new(vec![(path.clone(), stamp(&path))]);
        assert!(set.unchanged());
        fs::write(&path, b"x").unwrap();
        assert!(!set.unchanged());
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_rewritten_file_changes_its_stamp() {
        let dir = temp_dir("rewrite");
        let path = dir.join("file.py");
        fs::write(&path, b"one").unwrap();
        let set = StampSet::new(vec![
            (path.clone(), stamp(&path)),
            (dir.clone(), stamp(&dir)),
        ]);
        assert_eq!(set.len(), 2);
        assert!(set.unchanged());
        fs::write(&path, b"two!").unwrap();
        assert!(!set.unchanged());
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn an_entry_added_changes_the_directory() {
        let dir = temp_dir("entry");
        let set = StampSet::new(vec![(dir.clone(), stamp(&dir))]);
        assert!(!set.is_empty());
        // a directory's ctime may share a clock tick with the stamp: wait for the next one
        std::thread::sleep(std::time::Duration::from_millis(20));
        fs::write(dir.join("new.py"), b"").unwrap();
        assert!(!set.unchanged());
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn an_existing_path_never_matches_a_missing_stamp() {
        let dir = temp_dir("exists");
        assert!(!StampSet::new(vec![(dir.clone(), None)]).unchanged());
        fs::remove_dir_all(&dir).unwrap();
    }
}
