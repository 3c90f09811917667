"""Links of the README and the guides resolve: every relative link names a file or directory of the
repository, and an anchor names a heading of the linked page (GitHub's slugs), so that moving a page
or renaming a section fails here, naming document and line."""

import re
import unicodedata
from pathlib import Path
from typing import List, Set

import pytest
from conftest import REPO_ROOT

LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
DOCUMENTS = sorted(
    [REPO_ROOT / "README.md", REPO_ROOT / "benchmarks" / "README.md"]
    + list((REPO_ROOT / "docs").rglob("*.md"))
)


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation and symbols dropped, spaces to
    hyphens (letters and digits of any script kept)."""
    kept = "".join(
        character
        for character in heading.strip().lower()
        if character in " -_" or unicodedata.category(character)[0] in "LN"
    )
    return kept.replace(" ", "-")


def anchors(page: Path) -> Set[str]:
    seen: Set[str] = set()
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            base = slug(line.lstrip("#"))
            anchor, number = base, 1
            while anchor in seen:  # GitHub numbers repeated headings
                anchor, number = f"{base}-{number}", number + 1
            seen.add(anchor)
    return seen


def broken_links(document: Path) -> List[str]:
    broken = []
    in_code = False
    for number, line in enumerate(document.read_text(encoding="utf-8").splitlines(), 1):
        if line.lstrip().startswith("```"):
            in_code = not in_code
        if in_code:
            continue
        for target in LINK.findall(line):
            if re.match(r"[a-z]+:", target):
                continue  # https:, mailto:
            path, _, anchor = target.partition("#")
            page = (document.parent / path).resolve() if path else document
            where = f"{document.relative_to(REPO_ROOT)}:{number}: {target}"
            if not page.exists():
                broken.append(f"{where}: no such file")
            elif anchor and page.suffix == ".md" and anchor not in anchors(page):
                broken.append(f"{where}: no heading with that anchor")
    return broken


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: str(p.relative_to(REPO_ROOT)))
def test_links_resolve(document):
    assert broken_links(document) == []


def test_a_broken_link_and_a_broken_anchor_are_named(tmp_path, monkeypatch):
    monkeypatch.setattr("test_docs_links.REPO_ROOT", tmp_path)
    (tmp_path / "guide.md").write_text("# A title: with → symbols\n\n## Part 2\n", "utf-8")
    page = tmp_path / "page.md"
    page.write_text(
        "[ok](guide.md#a-title-with--symbols) [ok](guide.md#part-2) [web](https://x.org)\n"
        "[gone](missing.md) [bad](guide.md#part-3)\n",
        "utf-8",
    )
    assert broken_links(page) == [
        "page.md:2: missing.md: no such file",
        "page.md:2: guide.md#part-3: no heading with that anchor",
    ]
