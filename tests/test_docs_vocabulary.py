"""README.md, docs/**/*.md and the benchmark results the documentation links to
(benches/results/*.md) describe the package to its users, not how it was made.

The scan fails, naming ``file:line``, on what belongs in ``git log`` or ``CHANGELOG.md``
(which is not scanned) rather than in the documentation:

* references to tracker entries: ``#`` followed by digits, ``issue 4``, ``PR 12``;
* the words "session" (but for a process's session and an SSH session, see ``ALLOWED``), "helper",
  "subagent";
* ``stop N``;
* commit-hash-looking words outside fenced code blocks: 7 to 40 lowercase hex characters with
  both a letter and a digit.

It also fails on a relative link (``[text](path)``, ``![alt](path)``, ``[name]: path``) whose
file does not exist, or whose ``#anchor`` names no heading of the Markdown file it points to.

Standard library only: it runs in every test environment.
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

FENCE = re.compile(r"^\s*(```|~~~)")
INLINE_CODE = re.compile(r"(`+)(.+?)\1")

VOCABULARY = [
    ("issue reference", re.compile(r"(?<![\w&/#])#\d+\b")),
    ("issue reference", re.compile(r"\b(?:issues?|tickets?|PRs?|pull requests?)\s+#?\d+", re.I)),
    ("'session'", re.compile(r"\bsessions?\b", re.I)),
    ("'helper'", re.compile(r"\bhelpers?\b", re.I)),
    ("'subagent'", re.compile(r"\bsub-?agents?\b", re.I)),
    ("'stop N'", re.compile(r"\bstop\s+#?\d+\b", re.I)),
]
# Words that are the operating system's or a protocol's own vocabulary, removed before the scan:
# a process's session (setsid(2)), which the runner path's documentation has to name, and an SSH
# session (a session channel of the SSH connection protocol).
ALLOWED = re.compile(
    r"process group and session|sessions? of (?:their|its) own|session (?:leader|id)\b|\bSSH sessions?\b",
    re.I,
)
HEX_WORD = re.compile(r"(?<![\w])[0-9a-f]{7,40}(?![\w])")

LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")
HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$")


def documents() -> list[Path]:
    """README.md, every Markdown file under docs/, and the benchmark results in benches/results/."""
    found = [ROOT / "README.md"]
    docs = ROOT / "docs"
    if docs.is_dir():
        found.extend(sorted(docs.rglob("*.md")))
    results = ROOT / "benches" / "results"
    if results.is_dir():
        found.extend(sorted(results.glob("*.md")))
    return found


def lines_with_fences(text: str):
    """(line number, line, inside a fenced code block) for each line; fence lines count as inside."""
    inside = False
    for number, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line):
            yield number, line, True
            inside = not inside
            continue
        yield number, line, inside


def vocabulary_findings(name: str, text: str) -> list[str]:
    """``name:line: what`` for every piece of how-it-was-made vocabulary in ``text``."""
    findings = []
    for number, line, fenced in lines_with_fences(text):
        scanned = ALLOWED.sub(" ", line)
        for label, pattern in VOCABULARY:
            for match in pattern.finditer(scanned):
                findings.append(f"{name}:{number}: {label}: {match.group(0)!r}")
        if not fenced:
            for match in HEX_WORD.finditer(line):
                word = match.group(0)
                if re.search(r"[a-f]", word) and re.search(r"[0-9]", word):
                    findings.append(f"{name}:{number}: commit-hash-like word: {word!r}")
    return findings


def heading_anchors(text: str) -> set[str]:
    """The anchors GitHub gives the headings of a Markdown text."""
    anchors: set[str] = set()
    counts: dict[str, int] = {}
    for _number, line, fenced in lines_with_fences(text):
        match = None if fenced else HEADING.match(line)
        if not match:
            continue
        title = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", match.group(1))  # a link's text only
        slug = "".join(
            ch for ch in title.lower() if ch in " -_" or unicodedata.category(ch)[0] in "LN"
        ).replace(" ", "-")
        seen = counts.get(slug, 0)
        counts[slug] = seen + 1
        anchors.add(slug if seen == 0 else f"{slug}-{seen}")
    return anchors


def link_targets(text: str):
    """(line number, target) of every link outside code."""
    for number, line, fenced in lines_with_fences(text):
        if fenced:
            continue
        prose = INLINE_CODE.sub("code", line)
        for match in LINK.finditer(prose):
            yield number, match.group(1)
        reference = REFERENCE.match(prose)
        if reference:
            yield number, reference.group(1)


def link_findings(path: Path, text: str) -> list[str]:
    """``file:line: ...`` for every relative link whose file or anchor does not exist."""
    findings = []
    in_repository = path.resolve().is_relative_to(ROOT)
    name = path.resolve().relative_to(ROOT).as_posix() if in_repository else str(path)
    for number, target in link_targets(text):
        if SCHEME.match(target):
            continue  # http:, https:, mailto:...
        file_part, _, anchor = target.partition("#")
        resolved = (path.parent / file_part).resolve() if file_part else path
        if file_part and not resolved.exists():
            findings.append(f"{name}:{number}: link to a missing file: {target}")
            continue
        if file_part and in_repository and not resolved.is_relative_to(ROOT):
            findings.append(f"{name}:{number}: link outside the repository: {target}")
            continue
        if anchor and resolved.suffix == ".md" and resolved.is_file():
            if anchor not in heading_anchors(resolved.read_text(encoding="utf-8")):
                findings.append(f"{name}:{number}: link to a missing heading: {target}")
    return findings


# --- the documentation ------------------------------------------------------------------------


def test_documents_are_found():
    names = {path.relative_to(ROOT).as_posix() for path in documents()}
    assert "README.md" in names
    assert any(name.startswith("docs/") for name in names)
    assert "benches/results/results.md" in names
    assert "CHANGELOG.md" not in names


def test_no_vocabulary_of_how_it_was_made():
    findings = []
    for path in documents():
        text = path.read_text(encoding="utf-8")
        findings.extend(vocabulary_findings(path.relative_to(ROOT).as_posix(), text))
    assert not findings, "how-it-was-made vocabulary (it belongs in CHANGELOG.md or git log):\n" + "\n".join(
        findings
    )


def test_relative_links_point_to_existing_files():
    findings = []
    for path in documents():
        findings.extend(link_findings(path, path.read_text(encoding="utf-8")))
    assert not findings, "broken links:\n" + "\n".join(findings)


# --- the scan itself: it must be able to fail ------------------------------------------------

SAMPLE_WITH_VOCABULARY = """\
# Notes

Fixed in #20, as issue 4 asked.
The helper ran the fuzz in session 9.
A subagent measured it at stop 3.
Built at commit 4e29b4f; see also a89682f0c1.
"""


def test_scan_flags_every_kind_of_vocabulary():
    findings = vocabulary_findings("sample.md", SAMPLE_WITH_VOCABULARY)
    text = "\n".join(findings)
    for expected in (
        "sample.md:3: issue reference: '#20'",
        "sample.md:3: issue reference: 'issue 4'",
        "sample.md:4: 'helper'",
        "sample.md:4: 'session'",
        "sample.md:5: 'subagent'",
        "sample.md:5: 'stop N'",
        "sample.md:6: commit-hash-like word: '4e29b4f'",
        "sample.md:6: commit-hash-like word: 'a89682f0c1'",
    ):
        assert expected in text, f"{expected!r} not in:\n{text}"
    assert len(findings) == 8, text


def test_scan_passes_ordinary_documentation():
    sample = """\
Its process group and session are the runner's; workers lead groups in sessions of their own.
A module run opens one SSH session through the master; 348 SSH sessions in all.
Built for x86_64 with sha256 names, 1000000 secrets, 2026-12-01T14:29:16, `deadbeef`.
See [the anchor](#the-runner), ratio 0.213, 855.4x, 0x7fffffff.

```
$ sha256sum payload.zip
4e29b4f0c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f6  payload.zip
```
"""
    assert vocabulary_findings("sample.md", sample) == []


def test_link_check_flags_missing_files_and_headings(tmp_path):
    (tmp_path / "there.md").write_text("# A title: with `code` ×2\n\n## Again\n## Again\n", encoding="utf-8")
    page = tmp_path / "page.md"
    text = """\
[ok](there.md) [ok](there.md#a-title-with-code-2) [ok](there.md#again-1) [web](https://example.org/x)
[missing](nowhere.md) ![missing image](img/chart.png) [bad anchor](there.md#nothing)
`[not a link](inside-code.md)`

[ref]: gone/away.md
"""
    page.write_text(text, encoding="utf-8")
    findings = link_findings(page, text)
    assert [finding.split(": ", 1)[1] for finding in findings] == [
        "link to a missing file: nowhere.md",
        "link to a missing file: img/chart.png",
        "link to a missing heading: there.md#nothing",
        "link to a missing file: gone/away.md",
    ], findings
    assert all(finding.startswith(f"{page}:") for finding in findings), findings
