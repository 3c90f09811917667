"""Every reference in the repository resolves inside it: no tracked text file cites the former
specification by section number, a paper by its number in a folder outside the repository, or a
work item by its number. The formulas and decisions are in docs/design.md (cited as
`design.md §N.N`), the papers by their authors and titles, and the reason for a check in words.

A hit fails naming file, line and the text found. The patterns are assembled from pieces, so that
this file never matches them itself."""

import re
import shutil
import subprocess
from pathlib import Path
from typing import Iterator, List, Optional, Set, Tuple

import pytest
from conftest import REPO_ROOT

DESIGN = REPO_ROOT / "docs" / "design.md"

_SPEC = "SP" + "EC"
_SEED = "[Ss]e" + "eds?"
_ISSUE = "[Ii]ss" + "ues?"
# Between the word and its number: white space, line breaks included, and the quotes of a string
# literal continued on the next line ("... (<the word> "  /  "004's ...").
_GAP = r"""[\s"']"""
STALE_REFERENCES = {
    # "<the word> 4.2", "<the word> section 3", "<the word> § 5.4", "<the word>'s 2.3"
    "former specification section": re.compile(
        rf"\b{_SPEC}\b(?:'s)?{_GAP}*(?:§\s*|sections?\s+|sec\.\s*)?\d+(?:\.\d+)*"
    ),
    # "<the word> 004", "<the word>s 000, 001", "<The word> 002's"
    "paper by folder number": re.compile(rf"\b{_SEED}{_GAP}+00\d\b"),
    # "<the word> 12", "<the word> #12", "<The word> 21's", "<the word>s 12 and 34",
    # "<the word> items 8 and 9", "<the word> point 3"
    "numbered work item": re.compile(rf"\b{_ISSUE}{_GAP}+(?:#\s*|items?\s+|points?\s+)?\d+"),
}

# The section numbers the rest of the repository cites: those of the former specification.
DESIGN_SECTIONS = "1 2 2.1 2.2 2.3 2.4 3 4 4.1 4.2 4.3 4.4 5 5.1 5.2 5.3 5.4 6".split()
DESIGN_CITATION = re.compile(r"design\.md\b")
SECTION_SIGN = re.compile(r"§\s*(\d+(?:\.\d+)*)")


def tracked_files() -> List[Path]:
    """The files git tracks, from the repository root; skipped (with the reason) without git."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed: the tracked files cannot be listed")
    if not (REPO_ROOT / ".git").exists():
        pytest.skip(f"{REPO_ROOT} is not a git checkout (no .git): no tracked files to list")
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=REPO_ROOT, capture_output=True, check=True
    ).stdout.decode("utf-8")
    return [REPO_ROOT / name for name in listed.split("\0") if name]


def text_of(path: Path) -> Optional[str]:
    """A UTF-8 text file's text; None for a binary or missing file (a file deleted in the working
    tree but still tracked)."""
    try:
        data = path.read_bytes()
    except (FileNotFoundError, IsADirectoryError):
        return None
    if b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def text_lines(path: Path) -> Iterator[Tuple[int, str]]:
    """(line number, line) of a UTF-8 text file; nothing for a binary or missing file."""
    yield from enumerate((text_of(path) or "").splitlines(), 1)


def stale_references(paths: List[Path]) -> List[str]:
    """Each hit as "file:line: kind: text", the line where it starts (a hit may span a line
    break)."""
    found = []
    for path in paths:
        text = text_of(path) or ""
        where = path.relative_to(REPO_ROOT) if path.is_relative_to(REPO_ROOT) else path
        for kind, pattern in STALE_REFERENCES.items():
            for match in pattern.finditer(text):
                number = text.count("\n", 0, match.start()) + 1
                found.append((number, f"{where}:{number}: {kind}: {match.group(0)!r}"))
    return [hit for _, hit in sorted(found, key=lambda found: found[0])]


def design_headings() -> Set[str]:
    """The section numbers of docs/design.md's numbered headings ("## 4 ...", "### 4.2 ...")."""
    numbers = set()
    for line in DESIGN.read_text(encoding="utf-8").splitlines():
        heading = re.match(r"#{2,4} (\d+(?:\.\d+)*)\s+\S", line)
        if heading:
            numbers.add(heading.group(1))
    return numbers


def test_no_tracked_file_cites_what_a_clone_does_not_contain():
    found = stale_references(tracked_files())
    assert not found, "references a clone cannot resolve:\n" + "\n".join(found)


def test_each_form_of_a_stale_reference_is_found_and_named(tmp_path):
    word, paper, item = _SPEC, "se" + "ed", "is" + "sue"
    lines = [
        f"(see {word} 4.2)",
        f"{word} section 3 and {word} § 5.4",
        f"{paper} 004's Table 4",
        f"{paper.capitalize()}s 000, 001",
        f"{item} #12",
        f"{item.capitalize()} 21's first measurement",
        f"{item}s 12 and 34",
        f"{item} items 8 and 9",
        f'    prog="grid", description="a grid ({paper} "',  # continued in the next literal
        '    "004\'s Table 4 by default)",',
        f"as the {item}",
        "#12 asks",
    ]
    legitimate = [
        "random seed 1, --seed 3, seeds 1 2 3",
        "WORDPIECE_SPECIALS, a SPECIAL token",
        "https://github.com/facebookresearch/fairseq/issues/5012",
        "design.md §4.2; the upstream issue in fixes/__init__.py",
    ]
    page = tmp_path / "page.md"
    page.write_text("\n".join(lines + legitimate) + "\n", encoding="utf-8")
    (tmp_path / "binary.bin").write_bytes(b"\0" + f"{word} 1".encode())
    found = stale_references([page, tmp_path / "binary.bin"])
    assert [hit.split(":")[1] for hit in found] == [
        "1", "2", "2", "3", "4", "5", "6", "7", "8", "9", "11"
    ]  # fmt: skip
    assert all(hit.startswith(f"{page}:") for hit in found), found


def test_design_document_keeps_the_cited_section_numbers():
    missing = sorted(set(DESIGN_SECTIONS) - design_headings(), key=lambda n: n.split("."))
    assert missing == [], f"{DESIGN}: no heading for section(s) {', '.join(missing)}"


def test_every_design_section_cited_exists():
    """A `design.md §N.N` anywhere in the repository names a numbered heading of the document."""
    sections, unknown = design_headings(), []
    for path in tracked_files():
        for number, line in text_lines(path):
            if not DESIGN_CITATION.search(line):
                continue
            for cited in SECTION_SIGN.findall(line):
                if cited not in sections:
                    unknown.append(f"{path.relative_to(REPO_ROOT)}:{number}: §{cited}")
    assert not unknown, "sections that docs/design.md does not have:\n" + "\n".join(unknown)


def test_the_design_document_is_linked_and_its_links_are_checked():
    import test_docs_links

    assert DESIGN in test_docs_links.DOCUMENTS
    assert test_docs_links.broken_links(DESIGN) == []
    for index in (REPO_ROOT / "README.md", REPO_ROOT / "docs" / "README.md"):
        assert "design.md" in index.read_text(encoding="utf-8"), f"{index} does not link it"


def test_without_a_git_checkout_the_listing_is_skipped_saying_why(tmp_path, monkeypatch):
    monkeypatch.setattr("test_repository_references.REPO_ROOT", tmp_path)
    with pytest.raises(pytest.skip.Exception, match=r"no \.git"):
        tracked_files()
