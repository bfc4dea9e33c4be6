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
//! of change), else the walk it is.

use std::sync::OnceLock;

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyDictMethods, PyString};

/// Deeper than this is refused (and stops reference cycles): the spec is then not compiled.
const MAX_DEPTH: usize = 64;

pub(super) struct Snapshot {
    objects: Vec<Py<PyAny>>,
    lengths: Vec<ffi::Py_ssize_t>,
    /// The quick check's record, when the interpreter's dict version tags can be trusted.
    containers: Option<Containers>,
}

/// Every mutable container reachable from the roots (addresses; `Snapshot::objects` keeps
/// them alive): dicts with their version tags, lists and sets with their items.
#[derive(Default)]
struct Containers {
    /// Whether lists' items are read in place (see `list_layout_usable`).
    direct_lists: bool,
    dicts: Vec<(usize, u64)>,
    /// (list, first item in `items`, length)
    lists: Vec<(usize, usize, usize)>,
    sets: Vec<(usize, usize, usize)>,
    items: Vec<usize>,
}

impl Snapshot {
    /// The objects reachable from `roots`, or `None` for a structure too deep to walk.
    pub(super) fn take(py: Python<'_>, roots: &[&Bound<'_, PyAny>]) -> Option<Snapshot> {
        let mut taker = Taker {
            py,
            snapshot: Snapshot {
                objects: Vec::new(),
                lengths: Vec::new(),
                containers: None,
            },
        };
        for root in roots {
            // SAFETY: the GIL is held (`py`) and `root` is a live object.
            if !unsafe { walk(root.as_ptr(), &mut taker, 0) } {
                return None;
            }
        }
        let mut snapshot = taker.snapshot;
        if version_tags_usable(py) {
            let mut containers = Containers {
                direct_lists: list_layout_usable(py),
                ..Containers::default()
            };
            for object in &snapshot.objects {
                // SAFETY: the GIL is held and the snapshot keeps every object alive.
                if !unsafe { containers.record(object.as_ptr()) } {
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
            // SAFETY: the GIL is held (a Bound exists) and the snapshot keeps them alive.
            return unsafe { containers.unchanged() };
        }
        let mut checker = Checker {
            snapshot: self,
            object: 0,
            length: 0,
            same: true,
        };
        for root in roots {
            // SAFETY: the GIL is held (a Bound exists) and `root` is a live object.
            if !unsafe { walk(root.as_ptr(), &mut checker, 0) } || !checker.same {
                return false;
            }
        }
        checker.object == self.objects.len() && checker.length == self.lengths.len()
    }
}

impl Containers {
    /// Notes `obj` if it is a dict, list or set.  `false`: a set whose items could not be read.
    ///
    /// # Safety
    /// `obj` is a live object and the GIL is held.
    unsafe fn record(&mut self, obj: *mut ffi::PyObject) -> bool {
        // SAFETY (whole block): the caller's guarantee; borrowed references only.
        unsafe {
            if ffi::PyDict_Check(obj) != 0 {
                self.dicts.push((obj as usize, version_tag(obj)));
            } else if ffi::PyList_Check(obj) != 0 {
                let len = usize::try_from(ffi::PyList_Size(obj)).unwrap_or(0);
                let start = self.items.len();
                for index in 0..len {
                    let item = ffi::PyList_GetItem(obj, index as ffi::Py_ssize_t);
                    if item.is_null() {
                        ffi::PyErr_Clear();
                    }
                    self.items.push(item as usize);
                }
                self.lists.push((obj as usize, start, len));
            } else if ffi::PySet_Check(obj) != 0 {
                let start = self.items.len();
                let Some(items) = set_items(obj) else {
                    return false;
                };
                self.items.extend(items);
                self.sets
                    .push((obj as usize, start, self.items.len() - start));
            }
            true
        }
    }

    /// Whether every container still holds what it held.
    ///
    /// # Safety
    /// The GIL is held and every recorded container is alive.
    unsafe fn unchanged(&self) -> bool {
        // SAFETY (whole block): the caller's guarantee; borrowed references only.
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

/// Where CPython 3.11-3.13 keep a dict's item count and version tag: right after the object
/// header (`PyDictObject.ma_used`, then `ma_version_tag`).
const USED_OFFSET: usize = std::mem::size_of::<ffi::PyObject>();
const TAG_OFFSET: usize = USED_OFFSET + std::mem::size_of::<ffi::Py_ssize_t>();

/// # Safety
/// `dict` is a live dict (or subclass) and the GIL is held; only called once the layout was
/// probed (`version_tags_usable`).
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
/// (`list_layout_usable`); the slice is read before any Python code runs.
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
pub(super) fn list_layout_usable(py: Python<'_>) -> bool {
    probed_once(&LIST_LAYOUT, py, probe_list_layout)
}

/// What `probe` answers, asked once per process and kept in `cell`.  Probed outside the cell:
/// a probe runs Python code, during which another thread may take the GIL; a OnceLock
/// initialiser must never wait for the GIL (deadlock, or a child forked meanwhile finding the
/// cell forever "being initialised").
fn probed_once(
    cell: &OnceLock<bool>,
    py: Python<'_>,
    probe: fn(Python<'_>) -> PyResult<bool>,
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

/// CPython 3.11 to 3.13 only, and then only if `list_items` reads what `PyList_Size` and
/// `PyList_GetItem` give, on lists grown, shrunk, changed in place and emptied.
fn probe_list_layout(py: Python<'_>) -> PyResult<bool> {
    use pyo3::types::{PyList, PyListMethods};
    if !known_layouts(py) {
        return Ok(false);
    }
    let same = |list: &Bound<'_, PyList>| -> bool {
        // SAFETY: a live exact list, the GIL held; nothing runs while the slice is read.
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
pub(super) fn dict_version(dict: &Bound<'_, PyDict>) -> Option<u64> {
    // SAFETY: a live dict, the GIL held (a Bound exists), the layout probed.
    version_tags_usable(dict.py()).then(|| unsafe { version_tag(dict.as_ptr()) })
}

static VERSION_TAGS: OnceLock<bool> = OnceLock::new();

/// Whether dicts here carry version tags that change on every change (asked once).
pub(super) fn version_tags_usable(py: Python<'_>) -> bool {
    probed_once(&VERSION_TAGS, py, probe_version_tags)
}

/// CPython 3.11 to 3.13 only (3.14 stopped changing the tag), and then only if the fields sit
/// where expected and the tag changes on each kind of change tried here.
fn probe_version_tags(py: Python<'_>) -> PyResult<bool> {
    if !known_layouts(py) {
        return Ok(false);
    }
    let code = c"
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
    let globals = PyDict::new(py);
    py.run(code, Some(&globals), None)?;
    let changes = globals
        .get_item("changes")?
        .ok_or_else(|| pyo3::exceptions::PyRuntimeError::new_err("probe"))?;
    let sub = globals
        .get_item("Sub")?
        .ok_or_else(|| pyo3::exceptions::PyRuntimeError::new_err("probe"))?;
    for dict in [PyDict::new(py).into_any(), sub.call0()?] {
        let pointer = dict.as_ptr();
        let sized = |d: &Bound<'_, PyAny>| -> PyResult<bool> {
            // SAFETY: `dict` is a live dict (or subclass) and the GIL is held.
            Ok(unsafe { item_count(pointer) } == d.len()? as ffi::Py_ssize_t)
        };
        // SAFETY: as above.
        let mut tag = unsafe { version_tag(pointer) };
        if !sized(&dict)? {
            return Ok(false);
        }
        for change in changes.call1((&dict,))?.try_iter()? {
            change?.call0()?;
            // SAFETY: as above.
            let now = unsafe { version_tag(pointer) };
            if now == tag || !sized(&dict)? {
                return Ok(false);
            }
            tag = now;
        }
        // Reading changes nothing.
        let _ = dict.get_item("g")?;
        let _ = dict.cast::<PyDict>()?.iter().count();
        // SAFETY: as above.
        if unsafe { version_tag(pointer) } != tag {
            return Ok(false);
        }
    }
    Ok(true)
}

/// What a walk does with each object and container length it meets; `false` stops it.
trait Visit {
    /// # Safety
    /// `obj` is a live object and the GIL is held.
    unsafe fn object(&mut self, obj: *mut ffi::PyObject) -> bool;
    fn length(&mut self, len: ffi::Py_ssize_t) -> bool;
}

struct Taker<'py> {
    py: Python<'py>,
    snapshot: Snapshot,
}

impl Visit for Taker<'_> {
    unsafe fn object(&mut self, obj: *mut ffi::PyObject) -> bool {
        // SAFETY: the caller's guarantee; a new strong reference is taken.
        self.snapshot
            .objects
            .push(unsafe { Bound::from_borrowed_ptr(self.py, obj) }.unbind());
        true
    }

    fn length(&mut self, len: ffi::Py_ssize_t) -> bool {
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
    unsafe fn object(&mut self, obj: *mut ffi::PyObject) -> bool {
        let seen = self.snapshot.objects.get(self.object).map(Py::as_ptr);
        self.object += 1;
        self.same = seen == Some(obj);
        self.same
    }

    fn length(&mut self, len: ffi::Py_ssize_t) -> bool {
        let seen = self.snapshot.lengths.get(self.length).copied();
        self.length += 1;
        self.same = seen == Some(len);
        self.same
    }
}

/// Visits `obj`, then (for a dict, list, tuple, set or frozenset, subclasses included) its
/// length and its items in iteration order.  `false`: stopped by the visitor, too deep, or a
/// set whose iteration failed.
///
/// # Safety
/// `obj` is a live object and the GIL is held.
unsafe fn walk(obj: *mut ffi::PyObject, visit: &mut impl Visit, depth: usize) -> bool {
    if depth > MAX_DEPTH || !unsafe { visit.object(obj) } {
        return false;
    }
    // SAFETY (whole block): `obj` is live and the GIL is held; borrowed references only.
    unsafe {
        let kind = ffi::Py_TYPE(obj);
        // The exact scalar types first, by address (no call): most of a spec is str and int.
        if kind == std::ptr::addr_of_mut!(ffi::PyUnicode_Type)
            || kind == std::ptr::addr_of_mut!(ffi::PyLong_Type)
            || kind == std::ptr::addr_of_mut!(ffi::PyBool_Type)
            || obj == ffi::Py_None()
        {
            return true;
        }
        // Then the exact containers by address, the rest by the type's flags (a call).
        let flags = if kind == std::ptr::addr_of_mut!(ffi::PyDict_Type) {
            ffi::Py_TPFLAGS_DICT_SUBCLASS
        } else if kind == std::ptr::addr_of_mut!(ffi::PyList_Type) {
            ffi::Py_TPFLAGS_LIST_SUBCLASS
        } else if kind == std::ptr::addr_of_mut!(ffi::PyTuple_Type) {
            ffi::Py_TPFLAGS_TUPLE_SUBCLASS
        } else {
            ffi::PyType_GetFlags(kind)
        };
        if flags & (ffi::Py_TPFLAGS_UNICODE_SUBCLASS | ffi::Py_TPFLAGS_LONG_SUBCLASS) != 0 {
            true // immutable, by far the most common: nothing inside to walk
        } else if flags & ffi::Py_TPFLAGS_DICT_SUBCLASS != 0 {
            if !visit.length(ffi::PyDict_Size(obj)) {
                return false;
            }
            let mut position: ffi::Py_ssize_t = 0;
            let mut key: *mut ffi::PyObject = std::ptr::null_mut();
            let mut value: *mut ffi::PyObject = std::ptr::null_mut();
            // Nothing here runs Python code that could change the dict.
            while ffi::PyDict_Next(obj, &mut position, &mut key, &mut value) != 0 {
                if !walk(key, visit, depth + 1) || !walk(value, visit, depth + 1) {
                    return false;
                }
            }
            true
        } else if flags & (ffi::Py_TPFLAGS_LIST_SUBCLASS | ffi::Py_TPFLAGS_TUPLE_SUBCLASS) != 0 {
            let is_list = flags & ffi::Py_TPFLAGS_LIST_SUBCLASS != 0;
            let len = if is_list {
                ffi::PyList_Size(obj)
            } else {
                ffi::PyTuple_Size(obj)
            };
            if !visit.length(len) {
                return false;
            }
            for index in 0..len {
                let item = if is_list {
                    ffi::PyList_GetItem(obj, index)
                } else {
                    ffi::PyTuple_GetItem(obj, index)
                };
                if item.is_null() {
                    ffi::PyErr_Clear();
                    return false;
                }
                if !walk(item, visit, depth + 1) {
                    return false;
                }
            }
            true
        } else if ffi::PyAnySet_Check(obj) != 0 {
            if !visit.length(ffi::PySet_Size(obj)) {
                return false;
            }
            let iterator = ffi::PyObject_GetIter(obj);
            if iterator.is_null() {
                ffi::PyErr_Clear();
                return false;
            }
            let mut fine = true;
            loop {
                let item = ffi::PyIter_Next(iterator);
                if item.is_null() {
                    if !ffi::PyErr_Occurred().is_null() {
                        ffi::PyErr_Clear();
                        fine = false;
                    }
                    break;
                }
                // The set holds the item, which stays alive past this reference.
                let went_on = walk(item, visit, depth + 1);
                ffi::Py_DecRef(item);
                if !went_on {
                    fine = false;
                    break;
                }
            }
            ffi::Py_DecRef(iterator);
            fine
        } else {
            true
        }
    }
}
