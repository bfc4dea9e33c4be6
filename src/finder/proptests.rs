//! Generated sources: the scanner answers or falls back, and never panics, on anything.

use proptest::prelude::*;

use super::{scan_imports, Reach, ScanOptions, Source};

const OPTIONS: [ScanOptions; 3] = [
    ScanOptions {
        python: (3, 11),
        reach: Reach::EveryListedNode,
    },
    ScanOptions {
        python: (3, 12),
        reach: Reach::PositionedNodes,
    },
    ScanOptions {
        python: (3, 13),
        reach: Reach::PositionedNodes,
    },
];

/// Python-looking source: fragments of imports, blocks, brackets, strings and noise.
fn python_like() -> impl Strategy<Value = String> {
    const FRAGMENTS: &[&str] = &[
        "import ansible.module_utils.basic\n",
        "from ansible.module_utils import a, b as c\n",
        "from ..module_utils.x import y\n",
        "from . import z\n",
        "from ansible.module_utils.embed import EmbedManager\n",
        "try:\n",
        "except ImportError:\n",
        "if True:\n",
        "match x:\n    case 1:\n",
        "def f():\n",
        "    ",
        "\t",
        "(",
        ")",
        "[",
        "]",
        "{",
        "}",
        "'\\d'",
        "\"\"\"",
        "f'{x!r:>{y}}'",
        "0x",
        "1if",
        "# -*- coding: latin-1 -*-\n",
        "\\\n",
        "\n",
        "pass\n",
        "lambda: (yield)\n",
        "type X = int\n",
        "\u{feff}",
        "\0",
    ];
    let fragment = prop_oneof![
        4 => proptest::sample::select(FRAGMENTS).prop_map(str::to_string),
        1 => "[a-z_.]{1,8}".prop_map(|s: String| s),
    ];
    proptest::collection::vec(fragment, 0..40).prop_map(|parts| parts.concat())
}

fn fqn() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("ansible.modules.ping".to_string()),
        Just("ansible_collections.ns.col.plugins.modules.m".to_string()),
        Just("ansible.module_utils.x".to_string()),
        Just("".to_string()),
        "[a-z.]{0,12}",
    ]
}

proptest! {

    #[test]
    fn python_like_source(source in python_like(), fqn in fqn(), pkg in any::<bool>(), which in 0usize..3) {
        let _ = scan_imports(Source::Text(&source), &fqn, pkg, &OPTIONS[which]);
        let _ = scan_imports(Source::Bytes(source.as_bytes()), &fqn, pkg, &OPTIONS[which]);
    }

    #[test]
    fn arbitrary_bytes(source in proptest::collection::vec(any::<u8>(), 0..400), fqn in fqn(), pkg in any::<bool>(), which in 0usize..3) {
        let _ = scan_imports(Source::Bytes(&source), &fqn, pkg, &OPTIONS[which]);
    }

    #[test]
    fn arbitrary_text(source in any::<String>(), fqn in any::<String>(), pkg in any::<bool>(), which in 0usize..3) {
        let _ = scan_imports(Source::Text(&source), &fqn, pkg, &OPTIONS[which]);
    }

    #[test]
    fn deep_nesting(open in prop_oneof![Just("("), Just("["), Just("{"), Just("not "), Just("-"), Just("if x:\n ")], depth in 0usize..3000) {
        let source = format!("x = {}1\n", open.repeat(depth));
        let _ = scan_imports(Source::Text(&source), "ansible.modules.m", false, &OPTIONS[2]);
    }
}
