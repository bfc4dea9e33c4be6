//! Reads of dict and list objects' fields in place, for noticing a change without walking.
//!
//! Where the interpreter keeps a version tag in every dict (CPython 3.11 to 3.13: a
//! process-wide counter value stored on each change, so a changed dict never shows its old tag
//! again), a dict's tag tells whether it changed; a list's item array, read in place, tells
//! whether its items did, without a call per item.  Whether the fields sit where they are read
//! and behave so is probed once on objects of this process (layout and every kind of change):
//! [`version_tags_usable`] and [`list_layout_usable`].  Nothing here reads a field before its
//! probe said yes.

use std::sync::OnceLock;

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString};

use super::{known_layouts, probed_once};

/// Where CPython 3.11-3.13 keep a dict's item count and version tag: right after the object
/// header (`PyDictObject.ma_used`, then `ma_version_tag`).
const USED_OFFSET: usize = std::mem::size_of::<ffi::PyObject>();
const TAG_OFFSET: usize = USED_OFFSET + std::mem::size_of::<ffi::Py_ssize_t>();

/// # Safety
/// `dict` is a live dict (or subclass) and the GIL is held; only called once the layout was
/// probed (`version_tags_usable`) or by that probe.
unsafe fn version_tag(dict: *mut ffi::PyObject) -> u64 {
    // SAFETY: the caller's guarantee; the field is plain data inside the dict object.
    unsafe { std::ptr::read(dict.cast::<u8>().add(TAG_OFFSET).cast::<u64>()) }
}

/// # Safety
/// As `version_tag`.
unsafe fn item_count(dict: *mut ffi::PyObject) -> ffi::Py_ssize_t {
    // SAFETY: as `version_tag`.
    unsafe { std::ptr::read(dict.cast::<u8>().add(USED_OFFSET).cast::<ffi::Py_ssize_t>()) }
}

/// Where CPython 3.11-3.13 keep a list's length and item array: `PyListObject.ob_size` right
/// after the object header, then `ob_item`.
const LIST_SIZE_OFFSET: usize = std::mem::size_of::<ffi::PyObject>();
const LIST_ITEMS_OFFSET: usize = LIST_SIZE_OFFSET + std::mem::size_of::<ffi::Py_ssize_t>();

/// A list's items (addresses), read in place: what `PyList_GetItem` gives for each index
/// without a call per item.
///
/// # Safety
/// `list` is a live list (or subclass), the GIL is held, and the layout was probed
/// (`list_layout_usable`) or this is that probe; the slice is read before any Python code runs.
unsafe fn list_items<'a>(list: *mut ffi::PyObject) -> &'a [usize] {
    // SAFETY: the caller's guarantee; the fields are plain data inside the list object, and
    // `ob_item` points at `ob_size` item pointers (NULL only when the list is empty).
    unsafe {
        let base = list.cast::<u8>();
        let size = std::ptr::read(base.add(LIST_SIZE_OFFSET).cast::<ffi::Py_ssize_t>());
        let items = std::ptr::read(base.add(LIST_ITEMS_OFFSET).cast::<*const usize>());
        match usize::try_from(size) {
            Ok(size) if size > 0 && !items.is_null() => std::slice::from_raw_parts(items, size),
            _ => &[],
        }
    }
}

static LIST_LAYOUT: OnceLock<bool> = OnceLock::new();

/// Whether lists here keep their length and items where `list_items` reads them (asked once).
pub(crate) fn list_layout_usable(py: Python<'_>) -> bool {
    probed_once(&LIST_LAYOUT, py, probe_list_layout)
}

/// CPython 3.11 to 3.13 only, and then only if `list_items` reads what `PyList_Size` and
/// `PyList_GetItem` give, on lists grown, shrunk, changed in place and emptied.
fn probe_list_layout(py: Python<'_>) -> PyResult<bool> {
    if !known_layouts(py) {
        return Ok(false);
    }
    let same = |list: &Bound<'_, PyList>| -> bool {
        // SAFETY: a live exact list, the GIL held; this is the probe, and nothing runs while
        // the slice is read.
        let items = unsafe { list_items(list.as_ptr()) };
        items.len() == list.len()
            && items.iter().enumerate().all(|(index, &item)| {
                list.get_item(index)
                    .is_ok_and(|found| found.as_ptr() as usize == item)
            })
    };
    let list = PyList::empty(py);
    if !same(&list) {
        return Ok(false);
    }
    for n in 0..40 {
        list.append(PyString::new(py, &format!("item {n}")))?;
        if !same(&list) {
            return Ok(false);
        }
    }
    list.insert(0, PyList::empty(py))?;
    list.set_item(5, py.None())?;
    list.del_item(7)?;
    list.reverse()?;
    let ok = same(&list);
    list.call_method0(pyo3::intern!(py, "clear"))?;
    Ok(ok && same(&list) && same(&PyList::new(py, [1, 2, 3])?))
}

/// The version tag of `dict` where tags can be trusted (see the module text), else `None`.
pub(crate) fn dict_version(dict: &Bound<'_, PyDict>) -> Option<u64> {
    // SAFETY: a live dict, the GIL held (a Bound exists), the layout probed first.
    version_tags_usable(dict.py()).then(|| unsafe { version_tag(dict.as_ptr()) })
}

static VERSION_TAGS: OnceLock<bool> = OnceLock::new();

/// Whether dicts here carry version tags that change on every change (asked once).
pub(crate) fn version_tags_usable(py: Python<'_>) -> bool {
    probed_once(&VERSION_TAGS, py, probe_version_tags)
}

/// The changes the version tag probe makes, each of which must give a new tag.
const TAG_PROBE: &std::ffi::CStr = c"
class Sub(dict):
    pass

def changes(d):
    yield lambda: d.__setitem__('a', 1)
    yield lambda: d.__setitem__('a', 2)
    yield lambda: d.__setitem__('b', [])
    yield lambda: d.update(c=3, a=4)
    yield lambda: d.setdefault('e', 5)
    yield lambda: d.pop('e')
    yield lambda: d.__delitem__('c')
    yield lambda: d.popitem()
    yield lambda: d.__ior__({'f': 6})
    yield lambda: d.clear()
    yield lambda: d.__setitem__('g', 7)
    for i in range(40):  # growing: the table is rebuilt
        yield lambda i=i: d.__setitem__(str(i), i)
";

/// CPython 3.11 to 3.13 only (3.14 stopped changing the tag), and then only if the fields sit
/// where expected and the tag changes on each kind of change tried here.
fn probe_version_tags(py: Python<'_>) -> PyResult<bool> {
    if !known_layouts(py) {
        return Ok(false);
    }
    let globals = PyDict::new(py);
    py.run(TAG_PROBE, Some(&globals), None)?;
    let missing = || pyo3::exceptions::PyRuntimeError::new_err("probe");
    let changes = globals.get_item("changes")?.ok_or_else(missing)?;
    let sub = globals.get_item("Sub")?.ok_or_else(missing)?;
    for dict in [PyDict::new(py).into_any(), sub.call0()?] {
        if !tag_follows_changes(&dict, &changes)? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The probe on one dict (or subclass): the item count where expected, a new tag after each
/// change `changes(dict)` makes, the same tag after reads.
fn tag_follows_changes(dict: &Bound<'_, PyAny>, changes: &Bound<'_, PyAny>) -> PyResult<bool> {
    let pointer = dict.as_ptr();
    let sized = |d: &Bound<'_, PyAny>| -> PyResult<bool> {
        // SAFETY: `dict` is a live dict (or subclass), the GIL is held; this is the probe.
        Ok(unsafe { item_count(pointer) } == d.len()? as ffi::Py_ssize_t)
    };
    // SAFETY: as above.
    let mut tag = unsafe { version_tag(pointer) };
    if !sized(dict)? {
        return Ok(false);
    }
    for change in changes.call1((dict,))?.try_iter()? {
        change?.call0()?;
        // SAFETY: as above.
        let now = unsafe { version_tag(pointer) };
        if now == tag || !sized(dict)? {
            return Ok(false);
        }
        tag = now;
    }
    // Reading changes nothing.
    let _ = dict.get_item("g")?;
    let _ = dict.cast::<PyDict>()?.iter().count();
    // SAFETY: as above.
    Ok(unsafe { version_tag(pointer) } == tag)
}

/// Every mutable container reachable from some roots (addresses; the caller keeps them
/// alive): dicts with their version tags, lists and sets with their items.  Only made where
/// [`version_tags_usable`].
#[derive(Default)]
pub(crate) struct Containers {
    /// Whether lists' items are read in place (see `list_layout_usable`).
    direct_lists: bool,
    dicts: Vec<(usize, u64)>,
    /// (list, first item in `items`, length)
    lists: Vec<(usize, usize, usize)>,
    sets: Vec<(usize, usize, usize)>,
    items: Vec<usize>,
}

impl Containers {
    /// An empty record, or `None` where dicts' version tags cannot be trusted.
    pub(crate) fn new(py: Python<'_>) -> Option<Containers> {
        version_tags_usable(py).then(|| Containers {
            direct_lists: list_layout_usable(py),
            ..Containers::default()
        })
    }

    /// Notes `obj` if it is a dict, list or set.  `false`: a set whose items could not be read.
    pub(crate) fn record(&mut self, obj: &Bound<'_, PyAny>) -> bool {
        let pointer = obj.as_ptr();
        // SAFETY (whole block): `obj` is live and the GIL is held (a Bound exists); borrowed
        // references only; the version tag read only where `new` found the layout probed.
        unsafe {
            if ffi::PyDict_Check(pointer) != 0 {
                self.dicts.push((pointer as usize, version_tag(pointer)));
            } else if ffi::PyList_Check(pointer) != 0 {
                let len = usize::try_from(ffi::PyList_Size(pointer)).unwrap_or(0);
                let start = self.items.len();
                for index in 0..len {
                    let item = ffi::PyList_GetItem(pointer, index as ffi::Py_ssize_t);
                    if item.is_null() {
                        ffi::PyErr_Clear();
                    }
                    self.items.push(item as usize);
                }
                self.lists.push((pointer as usize, start, len));
            } else if ffi::PySet_Check(pointer) != 0 {
                let start = self.items.len();
                let Some(items) = set_items(pointer) else {
                    return false;
                };
                self.items.extend(items);
                self.sets
                    .push((pointer as usize, start, self.items.len() - start));
            }
            true
        }
    }

    /// Whether every container still holds what it held.
    ///
    /// # Safety
    /// The GIL is held and every recorded container is alive.
    pub(crate) unsafe fn unchanged(&self) -> bool {
        // SAFETY (whole block): the caller's guarantee; borrowed references only; tags and
        // list items read in place only where their probes said yes (`new`).
        unsafe {
            for &(dict, tag) in &self.dicts {
                if version_tag(dict as *mut ffi::PyObject) != tag {
                    return false;
                }
            }
            for &(list, start, len) in &self.lists {
                let list = list as *mut ffi::PyObject;
                if self.direct_lists {
                    if list_items(list) != &self.items[start..start + len] {
                        return false;
                    }
                    continue;
                }
                if ffi::PyList_Size(list) != len as ffi::Py_ssize_t {
                    return false;
                }
                for (index, &item) in self.items[start..start + len].iter().enumerate() {
                    if ffi::PyList_GetItem(list, index as ffi::Py_ssize_t) as usize != item {
                        return false;
                    }
                }
            }
            for &(set, start, len) in &self.sets {
                match set_items(set as *mut ffi::PyObject) {
                    Some(items) if items[..] == self.items[start..start + len] => {}
                    _ => return false,
                }
            }
            true
        }
    }
}

/// The items of a set in iteration order (addresses), or `None` if iterating failed.
///
/// # Safety
/// `set` is a live set and the GIL is held.
unsafe fn set_items(set: *mut ffi::PyObject) -> Option<Vec<usize>> {
    // SAFETY (whole block): the caller's guarantee.
    unsafe {
        let iterator = ffi::PyObject_GetIter(set);
        if iterator.is_null() {
            ffi::PyErr_Clear();
            return None;
        }
        let mut items = Vec::new();
        loop {
            let item = ffi::PyIter_Next(iterator);
            if item.is_null() {
                break;
            }
            items.push(item as usize);
            // The set holds the item, which stays alive past this reference.
            ffi::Py_DecRef(item);
        }
        ffi::Py_DecRef(iterator);
        if !ffi::PyErr_Occurred().is_null() {
            ffi::PyErr_Clear();
            return None;
        }
        Some(items)
    }
}
