//! Every place the glue relies on CPython beyond pyo3's safe API: reads of an object's memory
//! layout, calls of a type's slots, and C-API calls on borrowed references.  Nothing else in
//! the extension reads an object's fields or calls a slot; the engines' glue calls the safe
//! functions here (or, for the borrowed-reference ones, the `unsafe fn`s whose `# Safety`
//! sections say what the caller must hold).
//!
//! | what | where | guarded by |
//! |---|---|---|
//! | a dict's version tag and item count (`ma_version_tag`, `ma_used`) | [`layout`] | [`layout::version_tags_usable`]: CPython 3.11-3.13 and a probe of every kind of change |
//! | a list's length and item array (`ob_size`, `ob_item`) | [`layout`] | [`layout::list_layout_usable`]: CPython 3.11-3.13 and a probe of grown, shrunk, changed lists |
//! | a type's `tp_setattro` and `tp_new` slots | [`slots`] | `PyType_GetSlot` (stable ABI): a slot is only called when set |
//! | containers walked through borrowed references | [`walk`] | the GIL and the caller's strong reference to the root; no Python code runs during the walk |
//! | text: a `str`'s cached UTF-8, `surrogatepass` encoding, `format()`, concatenation | [`text`] | the stable ABI's own contracts |
//! | filling a new list or dict from an old one in one call | [`fill`] | exact types, checked by the caller's `cast_exact` |
//!
//! A layout read happens only after its probe said yes (once per process, see
//! [`probed_once`]); where a probe says no, the callers take the way that reads nothing.

use std::sync::OnceLock;

use pyo3::Python;

pub(crate) mod fill;
pub(crate) mod layout;
pub(crate) mod slots;
pub(crate) mod text;
pub(crate) mod walk;

/// What `probe` answers, asked once per process and kept in `cell`.  Probed outside the cell:
/// a probe runs Python code, during which another thread may take the GIL; a OnceLock
/// initialiser must never wait for the GIL (deadlock, or a child forked meanwhile finding the
/// cell forever "being initialised").
fn probed_once(
    cell: &OnceLock<bool>,
    py: Python<'_>,
    probe: fn(Python<'_>) -> pyo3::PyResult<bool>,
) -> bool {
    if let Some(&usable) = cell.get() {
        return usable;
    }
    let usable = probe(py).unwrap_or(false);
    *cell.get_or_init(|| usable)
}

/// Whether this is CPython 3.11 to 3.13, whose dict and list layouts the probes look for.
fn known_layouts(py: Python<'_>) -> bool {
    let version = py.version_info();
    version.major == 3 && (11..=13).contains(&version.minor)
}
