//! Noticing a spec changed in place since it was compiled.
//!
//! ansible-core reads the spec afresh on every `validate()`, so a dict or list of it changed in
//! place must be seen.  A [`Snapshot`] holds every object reachable from a spec and its checks,
//! in walk order, with each container's length: walking the same objects again and meeting the
//! same objects (by identity; the snapshot's references keep their addresses from being reused)
//! and the same lengths means nothing changed.  Scalars are immutable, so their identity is
//! enough; a replaced scalar of equal value is only a needless recompile.
//!
//! Walking a large spec on every call costs microseconds, so where the interpreter keeps a
//! version tag in every dict (CPython 3.11 to 3.13: a process-wide counter value stored on
//! each change, so a changed dict never shows its old tag again), the check reads the tag of
//! each dict the spec holds and compares each list's and set's items, without walking: every
//! container reachable then is checked directly, and while none changed, the same containers
//! are the reachable ones.  Tuples cannot change; the containers inside them are checked.
//! Whether the tags behave so is probed once on dicts of this process (layout and every kind
//! of change), else the walk it is.  The tags, the list items read in place and the walk
//! through borrowed references are `cpython`'s (`layout` and `walk`).

use pyo3::prelude::*;
use pyo3::Borrowed;

use crate::py::cpython::layout::Containers;
use crate::py::cpython::walk::{walk, Visit};

/// Deeper than this is refused (and stops reference cycles): the spec is then not compiled.
const MAX_DEPTH: usize = 64;

pub(super) struct Snapshot {
    objects: Vec<Py<PyAny>>,
    lengths: Vec<isize>,
    /// The quick check's record, when the interpreter's dict version tags can be trusted.
    containers: Option<Containers>,
}

impl Snapshot {
    /// The objects reachable from `roots`, or `None` for a structure too deep to walk.
    pub(super) fn take(py: Python<'_>, roots: &[&Bound<'_, PyAny>]) -> Option<Snapshot> {
        let mut taker = Taker {
            snapshot: Snapshot {
                objects: Vec::new(),
                lengths: Vec::new(),
                containers: None,
            },
        };
        for root in roots {
            if !walk(root, &mut taker, MAX_DEPTH) {
                return None;
            }
        }
        let mut snapshot = taker.snapshot;
        if let Some(mut containers) = Containers::new(py) {
            for object in &snapshot.objects {
                if !containers.record(object.bind(py)) {
                    return Some(snapshot); // a set that could not be read: the walk checks
                }
            }
            snapshot.containers = Some(containers);
        }
        Some(snapshot)
    }

    /// Whether `roots` still hold exactly the objects and lengths this snapshot saw (the
    /// roots themselves are the ones it was taken of: the caller's cache is keyed by them).
    pub(super) fn matches(&self, roots: &[&Bound<'_, PyAny>]) -> bool {
        if let Some(containers) = &self.containers {
            // SAFETY: the GIL is held (a Bound exists, or no roots and nothing recorded) and
            // the snapshot keeps every recorded container alive.
            return unsafe { containers.unchanged() };
        }
        let mut checker = Checker {
            snapshot: self,
            object: 0,
            length: 0,
            same: true,
        };
        for root in roots {
            if !walk(root, &mut checker, MAX_DEPTH) || !checker.same {
                return false;
            }
        }
        checker.object == self.objects.len() && checker.length == self.lengths.len()
    }
}

struct Taker {
    snapshot: Snapshot,
}

impl Visit for Taker {
    fn object(&mut self, obj: Borrowed<'_, '_, PyAny>) -> bool {
        // A new strong reference: the snapshot keeps the object (and its address) alive.
        self.snapshot.objects.push(obj.to_owned().unbind());
        true
    }

    fn length(&mut self, len: isize) -> bool {
        self.snapshot.lengths.push(len);
        true
    }
}

struct Checker<'a> {
    snapshot: &'a Snapshot,
    object: usize,
    length: usize,
    same: bool,
}

impl Visit for Checker<'_> {
    fn object(&mut self, obj: Borrowed<'_, '_, PyAny>) -> bool {
        let seen = self.snapshot.objects.get(self.object).map(Py::as_ptr);
        self.object += 1;
        self.same = seen == Some(obj.as_ptr());
        self.same
    }

    fn length(&mut self, len: isize) -> bool {
        let seen = self.snapshot.lengths.get(self.length).copied();
        self.length += 1;
        self.same = seen == Some(len);
        self.same
    }
}
