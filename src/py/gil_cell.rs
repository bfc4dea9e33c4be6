//! State kept between calls that is read and changed only while the GIL is held: a `RefCell`
//! whose every borrow needs a `Python` token, in place of a `Mutex` (whose lock and unlock are
//! two atomic read-modify-writes, a cost on paths that take several such locks per call).
//!
//! Why this is sound: every borrow needs the token, so it begins with the GIL held; a borrow
//! is `!Send` and lives no longer than the token, so it ends on the same thread, and with the
//! GIL held again if it was let go meanwhile (Python code run during a borrow may release it).
//! The GIL's release and acquire order every access to the borrow flag across threads, so the
//! flag needs no atomics.  Another thread (or the same thread, re-entered from Python code run
//! during a borrow) that finds the cell borrowed gets `None`, and goes without what it holds.
//! Interpreters without a GIL have no such order; the extension is built for the stable ABI
//! (abi3), which free-threaded CPython does not load.

use std::cell::{Ref, RefCell, RefMut};

use pyo3::Python;

#[derive(Default)]
pub(crate) struct GilCell<T>(RefCell<T>);

// SAFETY: see the module documentation: all access is ordered by the GIL.
unsafe impl<T: Send> Sync for GilCell<T> {}

impl<T> GilCell<T> {
    pub(crate) const fn new(value: T) -> GilCell<T> {
        GilCell(RefCell::new(value))
    }

    /// The value to read, unless it is being changed.
    pub(crate) fn get<'a>(&'a self, _py: Python<'a>) -> Option<Ref<'a, T>> {
        self.0.try_borrow().ok()
    }

    /// The value to change, unless it is being read or changed.
    pub(crate) fn get_mut<'a>(&'a self, _py: Python<'a>) -> Option<RefMut<'a, T>> {
        self.0.try_borrow_mut().ok()
    }
}
