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

    /// The paths, in the order given.
    pub fn paths(&self) -> impl Iterator<Item = &Path> {
        self.expected.iter().map(|(path, _)| path.as_path())
    }

    pub fn is_empty(&self) -> bool {
        self.expected.is_empty()
    }
}

/// What [`encode`] output starts with.
const ENCODED_MAGIC: &[u8; 8] = b"AASTMP01";

/// `stamps` as bytes, for a record on disk: each path front-coded against the one before
/// (the length of their common prefix, then the rest), then its stamp.  [`decode`] gives
/// them back in order.
pub fn encode(stamps: &[(PathBuf, Option<Stamp>)]) -> Vec<u8> {
    let mut out = Vec::with_capacity(16 + stamps.len() * 80);
    out.extend_from_slice(ENCODED_MAGIC);
    out.extend_from_slice(&(stamps.len() as u64).to_le_bytes());
    let mut previous: &[u8] = b"";
    for (path, stamp) in stamps {
        let bytes = path.as_os_str().as_bytes();
        let shared = previous
            .iter()
            .zip(bytes)
            .take_while(|(a, b)| a == b)
            .count();
        out.extend_from_slice(&(shared as u32).to_le_bytes());
        out.extend_from_slice(&((bytes.len() - shared) as u32).to_le_bytes());
        out.extend_from_slice(&bytes[shared..]);
        match stamp {
            None => out.push(0),
            Some(s) => {
                out.push(1);
                out.extend_from_slice(&s.dev.to_le_bytes());
                out.extend_from_slice(&s.ino.to_le_bytes());
                out.extend_from_slice(&s.size.to_le_bytes());
                out.extend_from_slice(&s.mtime_ns.to_le_bytes());
                out.extend_from_slice(&s.ctime_ns.to_le_bytes());
                out.extend_from_slice(&s.mode.to_le_bytes());
            }
        }
        previous = bytes;
    }
    out
}

/// The stamps [`encode`] wrote into `bytes`; None for anything else (cut, trailing bytes,
/// a prefix longer than the path before, a path with a NUL).
pub fn decode(bytes: &[u8]) -> Option<Vec<(PathBuf, Option<Stamp>)>> {
    let mut rest = bytes.strip_prefix(ENCODED_MAGIC.as_slice())?;
    let mut take = |n: usize| -> Option<&[u8]> {
        if rest.len() < n {
            return None;
        }
        let (head, tail) = rest.split_at(n);
        rest = tail;
        Some(head)
    };
    let count = usize::try_from(u64::from_le_bytes(take(8)?.try_into().ok()?)).ok()?;
    if count > bytes.len() / 9 {
        return None;
    }
    let mut stamps: Vec<(PathBuf, Option<Stamp>)> = Vec::with_capacity(count);
    let mut path: Vec<u8> = Vec::new();
    for _ in 0..count {
        let shared = u32::from_le_bytes(take(4)?.try_into().ok()?) as usize;
        let len = u32::from_le_bytes(take(4)?.try_into().ok()?) as usize;
        if shared > path.len() {
            return None;
        }
        path.truncate(shared);
        path.extend_from_slice(take(len)?);
        if path.contains(&0) {
            return None;
        }
        let stamp = match take(1)?[0] {
            0 => None,
            1 => {
                let u64_of = |b: &[u8]| u64::from_le_bytes(b.try_into().unwrap_or_default());
                let i128_of = |b: &[u8]| i128::from_le_bytes(b.try_into().unwrap_or_default());
                Some(Stamp {
                    dev: u64_of(take(8)?),
                    ino: u64_of(take(8)?),
                    size: u64_of(take(8)?),
                    mtime_ns: i128_of(take(16)?),
                    ctime_ns: i128_of(take(16)?),
                    mode: u32::from_le_bytes(take(4)?.try_into().ok()?),
                })
            }
            _ => return None,
        };
        stamps.push((PathBuf::from(OsStr::from_bytes(&path)), stamp));
    }
    rest.is_empty().then_some(stamps)
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

    #[test]
    fn encoded_stamps_decode_to_the_same_in_order_and_anything_else_is_refused() {
        let stamp = |n: u64| Stamp {
            dev: n,
            ino: n * 3,
            size: 1 << 40,
            mtime_ns: -5,
            ctime_ns: i128::from(u64::MAX) * 7,
            mode: 0o100644,
        };
        let stamps = vec![
            (
                PathBuf::from("/a/site-packages/ansible/module_utils"),
                Some(stamp(1)),
            ),
            (
                PathBuf::from("/a/site-packages/ansible/module_utils/basic.py"),
                Some(stamp(2)),
            ),
            (
                PathBuf::from("/a/site-packages/ansible/module_utils/x.py"),
                None,
            ),
            (PathBuf::from("/a/site-packages/ansible"), None),
            (PathBuf::from("relative/\u{e9}"), Some(stamp(3))),
            (
                PathBuf::from(OsStr::from_bytes(b"/bytes/\xff\xfe")),
                Some(stamp(4)),
            ),
            (PathBuf::from(""), None),
        ];
        let bytes = encode(&stamps);
        assert_eq!(decode(&bytes), Some(stamps.clone()));
        assert_eq!(decode(&encode(&[])), Some(Vec::new()));
        for len in [0, 7, 8, 15, bytes.len() / 2, bytes.len() - 1] {
            assert_eq!(decode(&bytes[..len]), None, "{len}");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert_eq!(decode(&longer), None);
        let mut bad_prefix = encode(&stamps[..1]);
        bad_prefix[16] = 200; // a first path sharing 200 bytes with nothing
        assert_eq!(decode(&bad_prefix), None);
        let mut bad_flag = encode(&stamps[2..3]);
        let last = bad_flag.len() - 1;
        bad_flag[last] = 2;
        assert_eq!(decode(&bad_flag), None);
    }
}
