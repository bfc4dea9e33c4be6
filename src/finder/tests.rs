//! The golden fixtures (tests/finder/golden: `NAME.py` beside `NAME.expected`), plus the
//! cases a fixture file cannot hold.  pytest checks the same fixtures against the real
//! ModuleDepFinder, so these expectations are ansible-core's, not ours.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::*;

/// One `NAME.expected`: header, then one block per ansible-core reach.
struct Expected {
    fqn: String,
    pkg_init: bool,
    /// Syntax needs at least this Python; below it the scanner must fall back.
    min_python: Option<(u8, u8)>,
    every_listed: Outcome,
    positioned: Outcome,
}

type Outcome = Result<ImportScan, String>;

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/finder/golden")
}

fn parse_expected(text: &str) -> Expected {
    let mut fqn = None;
    let mut pkg_init = None;
    let mut min_python = None;
    let mut blocks: Vec<Option<Outcome>> = Vec::new();
    for line in text.lines() {
        let (key, rest) = line.split_once(' ').unwrap_or((line, ""));
        match key {
            "fqn" => fqn = Some(rest.to_owned()),
            "pkg_init" => pkg_init = Some(rest == "true"),
            "python" => {
                let (major, minor) = rest.split_once('.').expect("python X.Y");
                min_python = Some((major.parse().unwrap(), minor.parse().unwrap()));
            }
            "[2.19]" | "[2.21]" => blocks.push(Some(Ok(ImportScan::default()))),
            "same" => {
                let previous = blocks[blocks.len() - 2].clone();
                *blocks.last_mut().unwrap() = previous;
            }
            "fallback" => *blocks.last_mut().unwrap() = Some(Err(rest.to_owned())),
            "sub" | "opt" | "embed" => {
                let Some(Some(Ok(scan))) = blocks.last_mut() else {
                    panic!("{line}: no block")
                };
                let parts: Vec<String> = rest.split(' ').map(str::to_owned).collect();
                match key {
                    "sub" => scan.submodules.insert(parts),
                    "opt" => scan.optional_imports.insert(parts),
                    _ => {
                        scan.embed_import = true;
                        true
                    }
                };
            }
            "" => {}
            other => panic!("unknown line {other:?}"),
        }
    }
    let mut blocks = blocks.into_iter().map(Option::unwrap);
    Expected {
        fqn: fqn.expect("fqn line"),
        pkg_init: pkg_init.expect("pkg_init line"),
        min_python,
        every_listed: blocks.next().expect("[2.19] block"),
        positioned: blocks.next().expect("[2.21] block"),
    }
}

fn scan(source: &[u8], fqn: &str, pkg_init: bool, python: (u8, u8), reach: Reach) -> Outcome {
    let options = ScanOptions { python, reach };
    scan_imports(Source::Bytes(source), fqn, pkg_init, &options).map_err(|f| f.reason().to_owned())
}

#[test]
fn golden_fixtures() {
    let mut seen = 0;
    let mut entries: Vec<_> = std::fs::read_dir(golden_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "py"))
    {
        let source = std::fs::read(path).unwrap();
        let expected =
            parse_expected(&std::fs::read_to_string(path.with_extension("expected")).unwrap());
        for python in [(3, 11), (3, 12), (3, 13)] {
            for (reach, want) in [
                (Reach::EveryListedNode, &expected.every_listed),
                (Reach::PositionedNodes, &expected.positioned),
            ] {
                let want = match expected.min_python {
                    Some(min) if python < min => Err("unsupported_syntax".to_owned()),
                    _ => want.clone(),
                };
                let got = scan(&source, &expected.fqn, expected.pkg_init, python, reach);
                assert_eq!(
                    got,
                    want,
                    "{} on Python {python:?}, {reach:?}",
                    path.display()
                );
            }
        }
        seen += 1;
    }
    assert!(seen >= 15, "only {seen} golden fixtures found");
}

fn names(list: &[&str]) -> BTreeSet<NameParts> {
    list.iter()
        .map(|n| n.split('.').map(str::to_owned).collect())
        .collect()
}

const PY: ScanOptions = ScanOptions {
    python: (3, 12),
    reach: Reach::PositionedNodes,
};

#[test]
fn text_source_ignores_coding_declaration() {
    let text = "# coding: latin-1\nfrom ansible.module_utils import basic\n";
    let got = scan_imports(Source::Text(text), "x", false, &PY).unwrap();
    assert_eq!(got.submodules, names(&["ansible.module_utils.basic"]));
    assert_eq!(
        scan_imports(Source::Bytes(text.as_bytes()), "x", false, &PY),
        Err(Fallback::CodingDeclaration)
    );
}

#[test]
fn utf8_coding_declarations_are_accepted() {
    for cookie in ["utf-8", "UTF-8", "utf_8", "utf-8-unix"] {
        let text = format!("# -*- coding: {cookie} -*-\nimport ansible.module_utils.basic\n");
        assert!(
            scan_imports(Source::Bytes(text.as_bytes()), "x", false, &PY).is_ok(),
            "{cookie}"
        );
    }
    let third_line = "#\n#\n# coding: latin-1\nimport ansible.module_utils.basic\n";
    assert!(scan_imports(Source::Bytes(third_line.as_bytes()), "x", false, &PY).is_ok());
}

#[test]
fn nul_bytes_and_text_bom_fall_back() {
    assert_eq!(
        scan_imports(Source::Bytes(b"x = 1\0\n"), "x", false, &PY),
        Err(Fallback::NulByte)
    );
    assert_eq!(
        scan_imports(Source::Text("x = 1\0\n"), "x", false, &PY),
        Err(Fallback::NulByte)
    );
    assert_eq!(
        scan_imports(Source::Text("\u{feff}x = 1\n"), "x", false, &PY),
        Err(Fallback::TextBom)
    );
}

#[test]
fn number_followed_by_keyword_falls_back() {
    let source = b"x = 1if True else 2\n";
    assert_eq!(
        scan_imports(Source::Bytes(source), "x", false, &PY),
        Err(Fallback::CompileWarning)
    );
}

#[test]
fn lazy_imports_are_not_python_313() {
    let source = b"lazy import ansible.module_utils.basic\n";
    assert!(scan_imports(Source::Bytes(source), "x", false, &PY).is_err());
}

#[test]
fn inconsistent_tabs_fall_back() {
    let source = b"if True:\n        x = 1\n\ty = 2\n";
    assert!(scan_imports(Source::Bytes(source), "x", false, &PY).is_err());
}

#[test]
fn deep_nesting_does_not_crash() {
    let source = format!("x = {}1{}\n", "(".repeat(5000), ")".repeat(5000));
    let _ = scan_imports(Source::Bytes(source.as_bytes()), "x", false, &PY);
    let source = format!("x = {}1\n", "-".repeat(50000));
    let _ = scan_imports(Source::Bytes(source.as_bytes()), "x", false, &PY);
}

#[test]
fn long_operator_chains_and_deep_blocks_fall_back() {
    let chain = format!("x = a{}\n", "|a".repeat(100_000));
    assert_eq!(
        scan_imports(Source::Bytes(chain.as_bytes()), "x", false, &PY),
        Err(Fallback::TooDeep)
    );
    let attrs = format!("x = a{}\n", ".b".repeat(100_000));
    assert_eq!(
        scan_imports(Source::Bytes(attrs.as_bytes()), "x", false, &PY),
        Err(Fallback::TooDeep)
    );
    let mut blocks = String::new();
    for level in 0..150 {
        blocks.push_str(&" ".repeat(level));
        blocks.push_str("if x:\n");
    }
    blocks.push_str(&" ".repeat(150));
    blocks.push_str("pass\n");
    assert_eq!(
        scan_imports(Source::Bytes(blocks.as_bytes()), "x", false, &PY),
        Err(Fallback::TooDeep)
    );
}

#[test]
fn large_flat_literals_are_scanned() {
    let items: Vec<String> = (0..20_000).map(|i| format!("'k{i}': {i}")).collect();
    let source = format!(
        "import ansible.module_utils.basic\nTABLE = {{\n{}\n}}\n",
        items.join(",\n")
    );
    let got = scan_imports(Source::Bytes(source.as_bytes()), "x", false, &PY).unwrap();
    assert_eq!(got.submodules, names(&["ansible.module_utils.basic"]));
}

#[test]
fn deeply_nested_fstrings_are_refused_before_312() {
    let source = b"x = f'{x:{y:{z}}}'\n";
    let py311 = ScanOptions {
        python: (3, 11),
        reach: Reach::PositionedNodes,
    };
    assert_eq!(
        scan_imports(Source::Bytes(source), "x", false, &py311),
        Err(Fallback::UnsupportedSyntax)
    );
    assert!(scan_imports(Source::Bytes(source), "x", false, &PY).is_ok());
    let two_levels = b"x = f'{x:{y}}'\n";
    assert!(scan_imports(Source::Bytes(two_levels), "x", false, &py311).is_ok());
}

#[test]
fn nested_lambdas_with_parameter_lists_still_count() {
    let source = format!("f = {}0\n", "lambda a, b: ".repeat(3000));
    assert_eq!(
        scan_imports(Source::Bytes(source.as_bytes()), "x", false, &PY),
        Err(Fallback::TooDeep)
    );
    let siblings = format!("x = [{}]\n", "-a.b(c) + 1, ".repeat(20_000));
    assert!(scan_imports(Source::Bytes(siblings.as_bytes()), "x", false, &PY).is_ok());
}
