//! Where a native import scan's time goes, stage by stage, over a tree of Python files:
//! `cargo bench --bench scan_floor -- DIR MAJOR.MINOR` (benches/scan_floor.py runs it beside
//! ansible-core's compile() + ModuleDepFinder on the same files and prints the ratios).
//!
//! Stages, each timed over every file, best of several passes:
//! - `parse`: ruff's parser alone, the tree kept until the pass ends (so no drop is timed);
//! - `parse+drop`: the same with each tree dropped at once;
//! - `scan`: the whole `finder::scan_imports` (decode, parse, token checks, walk, drop).
//!
//! The parse stage is the floor of any scan built on this parser: whatever else is made
//! faster, a scan cannot beat the Python side by more than python / parse.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use ansible_accel::finder::{scan_imports, Reach, ScanOptions, Source};
use ruff_python_ast::PythonVersion;
use ruff_python_parser::{Mode, ParseOptions};

// The extension's allocator, so the stages cost here what they cost in the wheel (with the
// `python` feature the library sets it already).
#[cfg(not(feature = "python"))]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const PASSES: usize = 15;

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let (Some(dir), Some(version)) = (args.first(), args.get(1)) else {
        eprintln!("usage: cargo bench --bench scan_floor -- DIR MAJOR.MINOR");
        std::process::exit(2);
    };
    let Some(python) = parse_version(version) else {
        eprintln!("not a MAJOR.MINOR version: {version}");
        std::process::exit(2);
    };
    let mut paths = Vec::new();
    collect_py(Path::new(dir), &mut paths);
    paths.sort();
    // (module name, is a package __init__, bytes), named as ansible-core names module_utils.
    let files: Vec<(String, bool, Vec<u8>)> = paths
        .iter()
        .filter_map(|p| {
            let (name, is_pkg_init) = module_name(Path::new(dir), p)?;
            Some((name, is_pkg_init, std::fs::read(p).ok()?))
        })
        .collect();
    let texts: Vec<&str> = files
        .iter()
        .filter_map(|(_, _, bytes)| std::str::from_utf8(bytes).ok())
        .collect();
    let bytes: usize = files.iter().map(|(_, _, b)| b.len()).sum();
    let target = PythonVersion {
        major: python.0,
        minor: python.1,
    };
    let options = ScanOptions {
        python,
        reach: Reach::PositionedNodes,
    };

    let parse = best_of(|| {
        let kept: Vec<_> = texts.iter().map(|t| parse_one(t, target)).collect();
        let started = Instant::now();
        drop(kept);
        started.elapsed()
    });
    let parse_and_drop = best_of(|| {
        for text in &texts {
            drop(parse_one(text, target));
        }
        Duration::ZERO
    });
    let mut answered = 0;
    let scan = best_of(|| {
        answered = 0;
        for (name, is_pkg_init, data) in &files {
            if scan_imports(Source::Bytes(data), name, *is_pkg_init, &options).is_ok() {
                answered += 1;
            }
        }
        Duration::ZERO
    });
    println!(
        "{} files, {} KiB, {} answered natively",
        files.len(),
        bytes / 1024,
        answered
    );
    println!("parse_ms {:.3}", ms(parse));
    println!("parse_drop_ms {:.3}", ms(parse_and_drop));
    println!("scan_ms {:.3}", ms(scan));
}

/// The best of PASSES timings of `pass`, less whatever time `pass` says was not its work.
fn best_of(mut pass: impl FnMut() -> Duration) -> Duration {
    (0..PASSES)
        .map(|_| {
            let started = Instant::now();
            let excluded = pass();
            started.elapsed().saturating_sub(excluded)
        })
        .min()
        .unwrap_or_default()
}

fn parse_one(
    text: &str,
    target: PythonVersion,
) -> ruff_python_parser::Parsed<ruff_python_ast::Mod> {
    ruff_python_parser::parse_unchecked(
        text,
        ParseOptions::from(Mode::Module).with_target_version(target),
    )
}

fn collect_py(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect_py(&path, out);
        } else if path.extension().is_some_and(|e| e == "py") {
            out.push(path);
        }
    }
}

/// `ansible.module_utils.<path>` for a file under the module_utils root, and whether it is a
/// package's `__init__` (then named after the package).
fn module_name(root: &Path, path: &Path) -> Option<(String, bool)> {
    let relative = path.strip_prefix(root).ok()?.with_extension("");
    let mut parts = vec!["ansible".to_owned(), "module_utils".to_owned()];
    for part in relative.components() {
        parts.push(part.as_os_str().to_str()?.to_owned());
    }
    let is_pkg_init = parts.last().is_some_and(|p| p == "__init__");
    if is_pkg_init {
        parts.pop();
    }
    Some((parts.join("."), is_pkg_init))
}

fn parse_version(text: &str) -> Option<(u8, u8)> {
    let (major, minor) = text.split_once('.')?;
    Some((major.parse().ok()?, minor.parse().ok()?))
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
