"""The design is in the repository: comments cite docs/, and what they cite exists.

(a) No file under src/ (nor constitution.yaml) cites a document outside the repository (the specification's
    sections and decisions, its source documents and requirement ids, the planning measurements) or an issue
    number: a reader of the repository could not follow such a reference, and history belongs in git.
(b) Every `docs/<file>.md#<anchor>` cited in src/ or constitution.yaml, and every relative link between the pages
    of docs/, names an existing page and, with an anchor, a heading of that page whose GitHub-style slug is the
    anchor, so renaming a heading without its citations fails here.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"
DOCS = ROOT / "docs"
CONSTITUTION = ROOT / "constitution.yaml"

OUTSIDE = {
    "an issue number": re.compile(r"issue [0-9]", re.IGNORECASE),
    "a source document": re.compile(r"seed 00"),
    "a specification section": re.compile(r"SPEC §"),
    "a specification decision": re.compile(r"SPEC D[0-9]"),
    "a requirement id": re.compile(r"REQ-"),
    "the planning measurements": re.compile(r"MEASUREMENTS"),
}
CITATION = re.compile(r"docs/([A-Za-z0-9_.\-]+\.md)(?:#([A-Za-z0-9_\-]+))?")
DOCS_LINK = re.compile(r"\]\(([A-Za-z0-9_\-]+\.md)?(?:#([A-Za-z0-9_\-]+))?\)")
HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower-cased, punctuation dropped (letters, digits, `_`, `-` and spaces
    stay), each space a hyphen."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """The anchors of a Markdown page's headings (outside fenced code), with GitHub's -1, -2 … for repeats."""
    seen: dict[str, int] = {}
    out: set[str] = set()
    fenced = False
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        match = None if fenced else HEADING.match(line)
        if match is None:
            continue
        base = slug(match.group(2))
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


def source_files() -> Iterator[Path]:
    for path in sorted(SRC.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix not in {".pyc", ".so"}:
            yield path


def cited_files() -> list[Path]:
    return [*source_files(), CONSTITUTION]


def lines_of(path: Path) -> Iterator[tuple[int, str]]:
    yield from enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), start=1)


def where(path: Path, number: int) -> str:
    return f"{path.relative_to(ROOT)}:{number}"


def test_the_docs_exist() -> None:
    assert (DOCS / "README.md").is_file()
    assert len(list(DOCS.glob("*.md"))) >= 5


@pytest.mark.parametrize("what", sorted(OUTSIDE))
def test_no_reference_to_a_document_outside_the_repository(what: str) -> None:
    pattern = OUTSIDE[what]
    found = [f"{where(path, n)}: {line.strip()[:100]}" for path in cited_files() for n, line in lines_of(path)
             if pattern.search(line)]
    assert not found, f"{what} cited (cite a docs/ section instead, or drop it):\n" + "\n".join(found)


def test_every_docs_citation_resolves() -> None:
    cache: dict[Path, set[str]] = {}
    broken: list[str] = []
    cited = 0
    for path in cited_files():
        for n, line in lines_of(path):
            for match in CITATION.finditer(line):
                cited += 1
                page, anchor = DOCS / match.group(1), match.group(2)
                if not page.is_file():
                    broken.append(f"{where(path, n)}: {match.group(0)} (no such page)")
                elif anchor is not None and anchor not in cache.setdefault(page, anchors(page)):
                    broken.append(f"{where(path, n)}: {match.group(0)} (no heading with that anchor)")
    assert cited, "no docs/ citation found at all: is the pattern still right?"
    assert not broken, "citations of docs/ that do not resolve:\n" + "\n".join(broken)


def test_links_between_the_docs_pages_resolve() -> None:
    broken: list[str] = []
    for page in sorted(DOCS.glob("*.md")):
        for n, line in lines_of(page):
            for match in DOCS_LINK.finditer(line):
                target = DOCS / match.group(1) if match.group(1) else page
                anchor = match.group(2)
                if not target.is_file():
                    broken.append(f"{where(page, n)}: {match.group(0)} (no such page)")
                elif anchor is not None and anchor not in anchors(target):
                    broken.append(f"{where(page, n)}: {match.group(0)} (no heading with that anchor)")
    assert not broken, "links between docs/ pages that do not resolve:\n" + "\n".join(broken)


def test_slug_follows_github() -> None:
    assert slug("D21") == "d21"
    assert slug("Stage 4: purpose") == "stage-4-purpose"
    assert slug("The `one` writer") == "the-one-writer"
    assert slug("Purpose and the north star") == "purpose-and-the-north-star"
