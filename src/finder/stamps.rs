//! Stat stamps of the files and directories a remembered walk depended on, checked in one
//! go.  A stamp is what `os.stat()` says of a path, as the Python side records it:
//! `(st_dev, st_ino, st_size, st_mtime_ns, st_ctime_ns, st_mode)`, or nothing when the path
//! could not be stat'ed.  A remembered walk is replayed only while every stamp is still the
//! same, so the check runs on every warm walk: here it is a loop of stat calls, without a
//! Python object per path.

use std::collections::HashMap;
use std::ffi::{CString, OsStr};
use std::os::unix::ffi::OsStrExt;
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

impl Stamp {
    fn is_dir(&self) -> bool {
        self.mode & libc::S_IFMT == libc::S_IFDIR
    }
}

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
///
/// Most paths are files and directories side by side in a few directories, under a long
/// prefix (a site-packages tree): each directory is opened once and its entries stat'ed
/// relative to it, which spares the kernel walking the same prefix again for every path.
/// A path is grouped only where its directory joined with its last component gives back
/// exactly that path (so `.`, `..`, trailing and doubled slashes are stat'ed whole), and a
/// directory that cannot be opened has its paths stat'ed whole: the answers are those of
/// `stat()` on each path.
#[derive(Clone, Debug, Default)]
pub struct StampSet {
    expected: Vec<(PathBuf, Option<Stamp>)>,
    /// Indexes into `expected`, by directory (with each entry's last component).
    groups: Vec<(CString, Vec<(CString, usize)>)>,
    /// Indexes into `expected` of the paths stat'ed whole.
    whole: Vec<usize>,
}

impl StampSet {
    pub fn new(expected: Vec<(PathBuf, Option<Stamp>)>) -> StampSet {
        let mut groups: Vec<(CString, Vec<(CString, usize)>)> = Vec::new();
        let mut group_of: HashMap<PathBuf, usize> = HashMap::new();
        let mut whole = Vec::new();
        // what each path's stamp says of it: a directory, missing, or something else
        let kinds: HashMap<&OsStr, Option<bool>> = expected
            .iter()
            .map(|(path, stamp)| (path.as_os_str(), stamp.map(|s| s.is_dir())))
            .collect();
        for (index, (path, stamp)) in expected.iter().enumerate() {
            let split = split(path);
            if let (None, Some((dir, _))) = (stamp, &split) {
                // A name missing from a directory whose own stamp is checked: an entry added
                // there changes the directory's mtime and ctime, so that stamp answers for
                // this one (the walk's stamps of directories are there for exactly that).
                // A name under a path that is itself expected missing: while that one cannot
                // be stat'ed, nothing under it can.
                if matches!(kinds.get(dir.as_os_str()), Some(None | Some(true))) {
                    continue;
                }
            }
            match split {
                Some((dir, name)) => {
                    let at = *group_of.entry(dir.to_path_buf()).or_insert_with(|| {
                        let dir = CString::new(dir.as_os_str().as_bytes()).unwrap_or_default();
                        groups.push((dir, Vec::new()));
                        groups.len() - 1
                    });
                    groups[at].1.push((name, index));
                }
                None => whole.push(index),
            }
        }
        // a directory with one path to look at costs an open and a close more than it saves
        groups.retain(|(_, entries)| {
            if let [(_, index)] = entries.as_slice() {
                whole.push(*index);
                return false;
            }
            true
        });
        StampSet {
            expected,
            groups,
            whole,
        }
    }

    /// True while every path still has its stamp: a path that could not be stat'ed then
    /// still cannot be, and every other one has the same device, inode, size, times and mode.
    pub fn unchanged(&self) -> bool {
        let same = |index: usize| {
            let (path, expected) = &self.expected[index];
            stamp(path) == *expected
        };
        if !self.whole.iter().all(|&i| same(i)) {
            return false;
        }
        self.groups
            .iter()
            .all(|(dir, entries)| match Dir::open(dir) {
                Some(dir) => entries
                    .iter()
                    .all(|(name, index)| dir.stamp(name) == self.expected[*index].1),
                None => entries.iter().all(|(_, index)| same(*index)),
            })
    }

    pub fn len(&self) -> usize {
        self.expected.len()
    }

    pub fn is_empty(&self) -> bool {
        self.expected.is_empty()
    }
}

/// `path` as its directory and last component, when joining them gives `path` back byte for
/// byte and the component is a plain name.
fn split(path: &Path) -> Option<(&Path, CString)> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty())?;
    let name = path.file_name()?;
    let bytes = name.as_bytes();
    if bytes == b"." || bytes == b".." || dir.join(name).as_os_str() != path.as_os_str() {
        return None;
    }
    Some((dir, CString::new(bytes).ok()?))
}

/// A directory opened for looking up names in it (`O_PATH`: no read permission needed,
/// as for `stat()` of a path in it), closed when dropped.
struct Dir(libc::c_int);

impl Dir {
    fn open(path: &CString) -> Option<Dir> {
        if path.as_bytes().is_empty() {
            return None;
        }
        // SAFETY: a NUL-terminated path; the descriptor returned is owned by the Dir.
        let fd = unsafe {
            libc::open(
                path.as_ptr(),
                libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
            )
        };
        (fd >= 0).then_some(Dir(fd))
    }

    /// `os.stat(dir/name)`'s stamp (symlinks followed), or None when it cannot be stat'ed.
    fn stamp(&self, name: &CString) -> Option<Stamp> {
        // SAFETY: an open descriptor, a NUL-terminated name and a zeroed stat buffer that
        // fstatat fills.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        let done = unsafe { libc::fstatat(self.0, name.as_ptr(), &mut st, 0) };
        if done != 0 {
            return None;
        }
        Some(Stamp {
            dev: st.st_dev,
            ino: st.st_ino,
            size: st.st_size as u64,
            mtime_ns: i128::from(st.st_mtime) * NS_PER_S + i128::from(st.st_mtime_nsec),
            ctime_ns: i128::from(st.st_ctime) * NS_PER_S + i128::from(st.st_ctime_nsec),
            mode: st.st_mode,
        })
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        // SAFETY: the descriptor was opened by Dir::open and is closed once.
        unsafe {
            libc::close(self.0);
        }
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

    /// The grouped check answers as `stat()` of each whole path does, on the paths that
    /// must not be grouped too, before and after each change.
    #[test]
    fn grouped_checks_answer_as_whole_paths_do() {
        let dir = temp_dir("grouped");
        fs::create_dir_all(dir.join("pkg/sub")).unwrap();
        fs::write(dir.join("pkg/a.py"), b"a").unwrap();
        fs::write(dir.join("pkg/sub/b.py"), b"b").unwrap();
        fs::write(dir.join("file"), b"f").unwrap();
        std::os::unix::fs::symlink(dir.join("pkg"), dir.join("link")).unwrap();
        let text = |p: &str| PathBuf::from(format!("{}/{p}", dir.display()));
        let paths: Vec<PathBuf> = [
            "pkg/a.py",
            "pkg/sub",
            "pkg/sub/b.py",
            "pkg/sub/../a.py",
            "pkg/./a.py",
            "pkg/sub/.",
            "pkg/sub/..",
            "pkg//a.py",
            "pkg/sub/",
            "file/x",
            "file/.",
            "link/a.py",
            "missing/a.py",
            "pkg/absent.py",
            "link/sub/b.py",
        ]
        .iter()
        .map(|p| text(p))
        .chain([PathBuf::from("relative-absent"), PathBuf::from("/")])
        .collect();
        let naive =
            |expected: &[(PathBuf, Option<Stamp>)]| expected.iter().all(|(p, s)| stamp(p) == *s);
        let recorded: Vec<(PathBuf, Option<Stamp>)> =
            paths.iter().map(|p| (p.clone(), stamp(p))).collect();
        let set = StampSet::new(recorded.clone());
        assert!(set.unchanged());
        assert!(!set.whole.is_empty() && !set.groups.is_empty());
        type Change = Box<dyn Fn()>;
        let changes: Vec<Change> = {
            let (a, b, link, file, sub) = (
                text("pkg/a.py"),
                text("pkg/sub/b.py"),
                text("link"),
                text("file"),
                text("pkg/sub"),
            );
            vec![
                Box::new(move || fs::write(&a, b"changed").unwrap()),
                Box::new(move || fs::remove_file(&b).unwrap()),
                Box::new(move || {
                    fs::remove_file(&link).unwrap();
                    std::os::unix::fs::symlink(&sub, &link).unwrap();
                }),
                Box::new(move || {
                    fs::remove_file(&file).unwrap();
                    fs::create_dir(&file).unwrap();
                }),
            ]
        };
        for change in changes {
            // each change on a copy of the original state's stamps: the answers must agree
            std::thread::sleep(std::time::Duration::from_millis(20));
            change();
            for single in &recorded {
                let one = vec![single.clone()];
                assert_eq!(
                    StampSet::new(one.clone()).unchanged(),
                    naive(&one),
                    "{}",
                    single.0.display()
                );
            }
            assert_eq!(set.unchanged(), naive(&recorded));
        }
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_name_added_to_a_checked_directory_is_seen_through_the_directory() {
        let dir = temp_dir("implied");
        let absent = dir.join("absent.py");
        let set = StampSet::new(vec![(absent.clone(), None), (dir.clone(), stamp(&dir))]);
        assert!(set.whole == [1] && set.groups.is_empty()); // only the directory is stat'ed
        assert!(set.unchanged());
        std::thread::sleep(std::time::Duration::from_millis(20));
        fs::write(&absent, b"").unwrap();
        assert!(!set.unchanged());
        // under a directory that is not checked, the name is stat'ed itself
        let alone = StampSet::new(vec![(dir.join("other.py"), None)]);
        assert!(alone.unchanged());
        fs::write(dir.join("other.py"), b"").unwrap();
        assert!(!alone.unchanged());
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_name_under_a_missing_path_is_seen_through_that_path() {
        let dir = temp_dir("under-missing");
        let parent = dir.join("pkg");
        let child = parent.join("mod.py");
        let set = StampSet::new(vec![(child.clone(), None), (parent.clone(), None)]);
        assert!(set.whole == [1] && set.groups.is_empty()); // only the parent is stat'ed
        assert!(set.unchanged());
        fs::create_dir(&parent).unwrap();
        assert!(!set.unchanged());
        fs::write(&child, b"").unwrap();
        assert!(!set.unchanged());
        fs::remove_dir_all(&dir).unwrap();
    }
}
