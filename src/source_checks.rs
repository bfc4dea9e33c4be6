//! Checks on the crate's own source text: every `unsafe` block and `unsafe impl` carries a
//! `SAFETY` note, and in the extension module (`py/`) only `py/cpython` reaches into CPython:
//! no `ffi::` anywhere else, and `unsafe` only in the few files listed below.

use std::fs;
use std::path::{Path, PathBuf};

/// Lines above an `unsafe` that may hold its note (a note may span a few comment lines).
const NOTE_REACH: usize = 8;

/// Files of `py/` outside `py/cpython` allowed an `unsafe` (each with its note): the
/// allocator's collection call, the GIL-ordered cell's `Sync`, and two callers of
/// `py/cpython`'s `unsafe fn`s (a snapshot's recorded containers, a sequence's borrowed items).
const PY_UNSAFE_ALLOWED: &[&str] = &[
    "src/py/mod.rs",
    "src/py/gil_cell.rs",
    "src/py/argspec/snapshot.rs",
    "src/py/no_log/walk/fast.rs",
];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).expect("src is readable") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn sources() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    files.sort();
    files
        .into_iter()
        .map(|path| {
            let name = path
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            (
                name,
                fs::read_to_string(&path).expect("a source file is text"),
            )
        })
        .collect()
}

/// The code of a line, without its `//` comment (good enough for this source: no `//` in
/// the string literals next to an `unsafe`).
fn code(line: &str) -> &str {
    line.split("//").next().unwrap_or("")
}

/// What opens unsafe code, spelled so that this file's own text does not match.
const UNSAFE_BLOCK: &str = concat!("unsafe", " {");
const UNSAFE_IMPL: &str = concat!("unsafe", " impl");

fn opens_unsafe(line: &str) -> bool {
    let code = code(line);
    code.contains(UNSAFE_BLOCK) || code.contains(UNSAFE_IMPL)
}

#[test]
fn every_unsafe_block_has_a_safety_note() {
    let mut missing = Vec::new();
    for (name, text) in sources() {
        let lines: Vec<&str> = text.lines().collect();
        for (index, line) in lines.iter().enumerate() {
            if !opens_unsafe(line) {
                continue;
            }
            let from = index.saturating_sub(NOTE_REACH);
            if !lines[from..=index].iter().any(|l| l.contains("SAFETY")) {
                missing.push(format!("{name}:{}", index + 1));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "unsafe without a SAFETY note: {missing:?}"
    );
}

#[test]
fn only_py_cpython_reaches_into_cpython() {
    let mut found = Vec::new();
    for (name, text) in sources() {
        if !name.starts_with("src/py/") || name.starts_with("src/py/cpython/") {
            continue;
        }
        for (index, line) in text.lines().enumerate() {
            let code = code(line);
            let ffi = code.contains("ffi::")
                && !code.contains("std::ffi::")
                && !code.contains("unix::ffi::");
            let unsafe_code = code.contains("unsafe") && !PY_UNSAFE_ALLOWED.contains(&&*name);
            if ffi || unsafe_code {
                found.push(format!("{name}:{}", index + 1));
            }
        }
    }
    assert!(
        found.is_empty(),
        "CPython reached outside py/cpython: {found:?}"
    );
}

#[test]
fn the_checks_see_the_cpython_module() {
    // Guards the two checks above against reading nothing: the module they exempt exists and
    // holds unsafe code with notes.
    let sources = sources();
    let cpython: Vec<_> = sources
        .iter()
        .filter(|(name, _)| name.starts_with("src/py/cpython/"))
        .collect();
    assert!(cpython.len() >= 3);
    assert!(cpython
        .iter()
        .any(|(_, text)| text.lines().any(opens_unsafe)));
}
