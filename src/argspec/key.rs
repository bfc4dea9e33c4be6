//! Parameter names.  A validated dict holds one key per option, call after call: the spec's
//! option names are interned once (kept for the life of the process, as Python keeps its
//! interned identifiers) so that putting one in a dict is a copy of a reference, with no
//! reference count to change (an atomic one costs about as much as the rest of an insert).
//! Any other key (an alias, an unsupported name, a key of a free-form dict) is held by value,
//! inline up to 24 bytes.

use std::borrow::Borrow;
use std::hash::{Hash, Hasher};
use std::sync::Mutex;

use compact_str::CompactString;

/// A parameter name; equal, ordered and hashed by its text, as `str` is.
#[derive(Clone)]
pub enum Key {
    /// A spec's option name, interned (`Key::interned`).
    Interned(&'static str),
    /// Any other name.
    Owned(CompactString),
}

/// The interned names: bounded, so that a process compiling endless generated specs does not
/// grow without end; past the bound, names are held by value (slower to copy, the same keys).
struct Interned {
    names: rustc_hash::FxHashSet<&'static str>,
    bytes: usize,
}

static INTERNED: Mutex<Option<Interned>> = Mutex::new(None);

const MAX_NAMES: usize = 1 << 16;
const MAX_BYTES: usize = 4 << 20;

impl Key {
    /// The key for an option name of a spec: interned while the bound allows.
    pub fn interned(name: &str) -> Key {
        let mut table = INTERNED.lock().unwrap_or_else(|p| p.into_inner());
        let table = table.get_or_insert_with(|| Interned {
            names: Default::default(),
            bytes: 0,
        });
        if let Some(&kept) = table.names.get(name) {
            return Key::Interned(kept);
        }
        if table.names.len() >= MAX_NAMES || table.bytes + name.len() > MAX_BYTES {
            return Key::Owned(name.into());
        }
        let kept: &'static str = Box::leak(name.into());
        table.names.insert(kept);
        table.bytes += name.len();
        Key::Interned(kept)
    }

    pub fn as_str(&self) -> &str {
        match self {
            Key::Interned(name) => name,
            Key::Owned(name) => name,
        }
    }

    /// Where an interned name's text is (the same for every key of that name); `None` for a
    /// key held by value.
    pub fn interned_address(&self) -> Option<usize> {
        match self {
            Key::Interned(name) => Some(name.as_ptr() as usize),
            Key::Owned(_) => None,
        }
    }

    /// Whether both are the same interned name (equal text found without reading it).
    pub fn same_interned(&self, other: &Key) -> bool {
        match (self, other) {
            (Key::Interned(a), Key::Interned(b)) => std::ptr::eq(a.as_ptr(), b.as_ptr()),
            _ => false,
        }
    }
}

impl std::ops::Deref for Key {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl Borrow<str> for Key {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for Key {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl PartialEq for Key {
    fn eq(&self, other: &Key) -> bool {
        self.same_interned(other) || self.as_str() == other.as_str()
    }
}

impl Eq for Key {}

impl PartialEq<str> for Key {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Key {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialOrd for Key {
    fn partial_cmp(&self, other: &Key) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Key {
    fn cmp(&self, other: &Key) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl Hash for Key {
    // As `str` hashes, so that a map of keys is searched by `&str` (`Borrow`).
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_str().hash(state)
    }
}

impl From<&str> for Key {
    fn from(name: &str) -> Key {
        Key::Owned(name.into())
    }
}

impl From<String> for Key {
    fn from(name: String) -> Key {
        Key::Owned(name.into())
    }
}

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self.as_str(), f)
    }
}

impl std::fmt::Display for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self.as_str(), f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::BuildHasher;

    #[test]
    fn interned_and_owned_keys_of_one_text_are_one_key() {
        let a = Key::interned("state");
        let b = Key::interned(&String::from("state"));
        let c = Key::from("state");
        assert!(a.same_interned(&b));
        assert_eq!(a.interned_address(), b.interned_address());
        assert!(!a.same_interned(&c));
        assert_eq!(c.interned_address(), None);
        assert_eq!(a, c);
        let h = rustc_hash::FxBuildHasher;
        assert_eq!(h.hash_one(&a), h.hash_one("state"));
        assert_eq!(h.hash_one(&c), h.hash_one("state"));
        let mut map = indexmap::IndexMap::<Key, u8, rustc_hash::FxBuildHasher>::default();
        map.insert(c, 1);
        assert_eq!(map.get("state"), Some(&1));
        assert_eq!(map.get(&a), Some(&1));
        let (owned, interned) = (Key::from("a"), Key::interned("b"));
        assert!(owned < interned);
        assert_eq!(format!("{a}/{:?}", Key::from("x")), "state/\"x\"");
    }
}
