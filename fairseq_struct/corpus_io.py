"""Validated reading of raw parallel text, and atomic writing of what is made from it.

Files of different lengths, and a line that some stage would silently change (invalid UTF-8, the
reserved marks U+FFED and U+2581), are errors naming file and line; an empty line drops its pair
from training and is an error in valid and test, whose references must stay aligned. Whitespace
is normalised in every split, the untouched lines kept for scoring (docs/segmentation.md).
"""

import json
import os
import shutil
import tempfile
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import zip_longest
from pathlib import Path
from typing import BinaryIO, Dict, Iterable, Iterator, List, NamedTuple, Optional, Tuple, Union

from fairseq_struct.pieces.markers import MORPHEME_BOUNDARY, WORD_START

PathLike = Union[str, Path]

# No Turkish or English word is this long: such "words" are URLs, hashes or markup.
LONG_WORD_CHARS = 100
# How many file:line locations a report lists (dropped pairs, long words); all are counted.
MAX_LISTED = 100

RESERVED_CHARACTERS = {
    MORPHEME_BOUNDARY: "the morpheme boundary mark U+FFED",
    WORD_START: "SentencePiece's word-start mark U+2581",
}


class CorpusError(ValueError):
    """Unusable input; the message starts with `file:line:` where a line is to blame."""


@dataclass
class SplitReport:
    """What reading one split of a parallel corpus found; `dataclasses.asdict` gives its JSON."""

    split: str
    source_file: str
    target_file: str
    pairs_read: int = 0
    pairs_kept: int = 0
    dropped_by_reason: Dict[str, int] = field(default_factory=dict)
    dropped: List[str] = field(default_factory=list)  # "train.tr:17: empty line", first MAX_LISTED
    long_words: int = 0
    long_word_examples: List[str] = field(default_factory=list)  # "file:line: N characters"
    # Lines (of either side) whose whitespace was normalised, and the first MAX_LISTED of them.
    whitespace_normalised: int = 0
    whitespace_examples: List[str] = field(default_factory=list)  # "file:line"


@dataclass
class ParallelSplit:
    """The kept sentence pairs of one split, line-aligned, whitespace normalised; the same pairs
    untouched (for scoring against what the user gave); and the report of reading them."""

    source: List[str]
    target: List[str]
    raw_source: List[str]
    raw_target: List[str]
    report: SplitReport


def normalize_whitespace(line: str) -> str:
    """No whitespace at the edges, one space between words (str.split's Unicode whitespace, the
    same characters fairseq-preprocess's r"\\s+" splits on)."""
    return " ".join(line.split())


def iter_lines(path: PathLike) -> Iterator[str]:
    """The lines of a UTF-8 file without line endings (a final CR of a CRLF ending is removed),
    read as a stream.

    Raises CorpusError naming file, line and byte offset at the first invalid UTF-8.
    """
    with open(path, "rb") as file:
        yield from iter_stream_lines(file, path)


def iter_stream_lines(stream: BinaryIO, name: PathLike) -> Iterator[str]:
    """`iter_lines` of an open binary stream (standard input, say); errors say `name:line:`."""
    offset = 0  # of the current line in the stream
    for number, raw in enumerate(stream, start=1):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            raise CorpusError(
                f"{name}:{number}: invalid UTF-8 at byte {error.start} of the line "
                f"(byte {offset + error.start} of the file): {error.reason}"
            ) from None
        offset += len(raw)
        if line.endswith("\n"):
            line = line[:-1]
        yield line[:-1] if line.endswith("\r") else line


def count_lines(path: PathLike) -> int:
    """The number of lines of a file (a last line without a newline counts), read in blocks."""
    lines, last = 0, b"\n"
    with open(path, "rb") as file:
        for block in iter(lambda: file.read(1 << 24), b""):
            lines += block.count(b"\n")
            last = block[-1:]
    return lines + (last != b"\n")


def read_lines(path: PathLike) -> List[str]:
    """All of `iter_lines(path)`."""
    return list(iter_lines(path))


class LineProblem(NamedTuple):
    kind: str  # what the report counts, e.g. "empty line"
    message: str  # the kind with its detail and the reason it matters


def line_problem(line: str) -> Optional[LineProblem]:
    """Why a whitespace-normalised `line` cannot go through the pipeline, or None."""
    if not line:
        return LineProblem("empty line", "empty line")
    return None


def _checked_line(
    report: Union["SplitReport", "DocumentsReport"], path: PathLike, number: int, raw_line: str
) -> str:
    """The line with its whitespace normalised (counted in the report); CorpusError for a
    reserved mark."""
    check_reserved(path, number, raw_line)
    line = normalize_whitespace(raw_line)
    if line == raw_line:
        return raw_line  # one string, not an equal copy, for the raw and the normalised lists
    report.whitespace_normalised += 1
    if len(report.whitespace_examples) < MAX_LISTED:
        report.whitespace_examples.append(f"{path}:{number}")
    return line


def check_reserved(path: PathLike, number: int, line: str) -> None:
    """CorpusError naming file, line and column where `line` holds a reserved mark."""
    for char, name in RESERVED_CHARACTERS.items():
        column = line.find(char)
        if column >= 0:
            raise CorpusError(
                f"{path}:{number}: contains {name} at character {column + 1}; it is reserved "
                "for the segmented and encoded text, remove or replace it in the raw file"
            )


class KeptPair(NamedTuple):
    """A pair that `iter_parallel` keeps: whitespace normalised, and as the files have it."""

    source: str
    target: str
    raw_source: str
    raw_target: str


def iter_parallel(
    source_path: PathLike, target_path: PathLike, report: SplitReport, drop_bad_pairs: bool
) -> Iterator[KeptPair]:
    """Read and check one split as a stream, counting into `report` as it goes.

    Bad pairs are dropped (train) or raise CorpusError (valid/test); so do files of different
    length (found when the shorter one ends: the rest of the other is counted for the message),
    empty files, and a split without one usable pair. Memory: one pair.
    """
    reasons: Counter = Counter()
    source_lines, target_lines = iter_lines(source_path), iter_lines(target_path)
    for number, raw_pair in enumerate(zip_longest(source_lines, target_lines), start=1):
        if None in raw_pair:  # one file has ended: count the rest of the other for the message
            longer = 0 if raw_pair[1] is None else 1
            counts = [number - 1] * 2
            counts[longer] += 1 + sum(1 for _ in (source_lines, target_lines)[longer])
            raise CorpusError(
                f"{source_path} has {counts[0]} lines but {target_path} has {counts[1]}: the "
                "files of a parallel corpus must be line-aligned"
            )
        report.pairs_read = number
        problems = []
        pair = []
        for path, raw_line in zip((source_path, target_path), raw_pair):
            line = _checked_line(report, path, number, raw_line)
            pair.append(line)
            problem = line_problem(line)
            if problem is not None:
                if not drop_bad_pairs:
                    raise CorpusError(
                        f"{path}:{number}: {problem.message}; {report.split} pairs are never "
                        "dropped because sources, references and system outputs must stay aligned"
                    )
                problems.append((path, problem))
            _count_long_words(report, path, number, line)
        if problems:
            for path, problem in problems:
                reasons[problem.kind] += 1
                report.dropped_by_reason = dict(reasons)
                if len(report.dropped) < MAX_LISTED:
                    report.dropped.append(f"{path}:{number}: {problem.message}")
            continue
        report.pairs_kept += 1
        yield KeptPair(pair[0], pair[1], raw_pair[0], raw_pair[1])
    if not report.pairs_read:
        raise CorpusError(f"{source_path} and {target_path} are empty")
    if not report.pairs_kept:
        raise CorpusError(f"no usable pair in {source_path} and {target_path}: {dict(reasons)}")


def read_parallel(
    source_path: PathLike, target_path: PathLike, split: str, drop_bad_pairs: bool
) -> ParallelSplit:
    """All of `iter_parallel` for one split, in memory (for small corpora and tests)."""
    report = SplitReport(split, str(source_path), str(target_path))
    pairs = list(iter_parallel(source_path, target_path, report, drop_bad_pairs))
    source, target, raw_source, raw_target = (list(side) for side in zip(*pairs))
    return ParallelSplit(source, target, raw_source, raw_target, report)


def _count_long_words(report: SplitReport, path: PathLike, number: int, line: str) -> None:
    if len(line) <= LONG_WORD_CHARS:  # most lines: no word of theirs can be that long
        return
    for word in line.split(" "):
        if len(word) > LONG_WORD_CHARS:
            report.long_words += 1
            if len(report.long_word_examples) < MAX_LISTED:
                report.long_word_examples.append(f"{path}:{number}: {len(word)} characters")


def atomic_write_bytes(path: PathLike, data: bytes) -> None:
    """Write `data` to `path` so that `path` is either the old file or the complete new one."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(data)
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise


def atomic_write_lines(path: PathLike, lines: Iterable[str]) -> None:
    """Write one line per item, each ending in a newline, atomically (streamed)."""
    with atomic_writer(path) as file:
        for line in lines:
            file.write(line.encode("utf-8") + b"\n")


@contextmanager
def atomic_writer(path: PathLike) -> Iterator[BinaryIO]:
    """A binary file to write `path` through: a temporary file beside it, renamed to `path` when
    the block ends without an error and removed otherwise, so that `path` is only ever the old
    file or the complete new one (a run killed meanwhile leaves a hidden `.NAME.*.tmp`)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as file:
            yield file
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise


@contextmanager
def staged_directory(out_dir: Path) -> Iterator[Path]:
    """A sibling folder to write OUT_DIR's files into, published as OUT_DIR when the block ends
    without an error (`publish_directory`) and removed in any case: a failed run leaves nothing
    behind, and a new OUT_DIR appears whole."""
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=out_dir.parent, prefix=f".{out_dir.name}-"))
    try:
        yield staging
        publish_directory(staging, out_dir)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def publish_directory(staging: Path, out_dir: Path) -> None:
    """Move a directory written under a temporary name to OUT_DIR, readable as the user's other
    files are: a new OUT_DIR appears whole; an existing one gets the files one by one."""
    umask = os.umask(0)
    os.umask(umask)
    staging.chmod(0o777 & ~umask)  # mkdtemp's folder is private to its owner
    for path in staging.rglob("*"):
        path.chmod((0o777 if path.is_dir() else 0o666) & ~umask)  # some writers make theirs private
    if out_dir.exists() and not any(out_dir.iterdir()):
        out_dir.rmdir()
    if not out_dir.exists():
        os.replace(staging, out_dir)
        return
    for path in staging.iterdir():
        os.replace(path, out_dir / path.name)


def atomic_write_json(path: PathLike, value: object) -> None:
    atomic_write_bytes(path, (json.dumps(value, ensure_ascii=False, indent=2) + "\n").encode())


def split_paths(prefix: PathLike, source_lang: str, target_lang: str) -> Tuple[Path, Path]:
    """PREFIX.src and PREFIX.tgt, as fairseq names the files of a split."""
    return Path(f"{prefix}.{source_lang}"), Path(f"{prefix}.{target_lang}")


@dataclass
class DocumentsReport:
    """What reading one split of monolingual text found; `dataclasses.asdict` gives its JSON."""

    split: str
    file: str
    lines_read: int = 0
    sentences_kept: int = 0
    documents: int = 0
    dropped_by_reason: Dict[str, int] = field(default_factory=dict)
    dropped: List[str] = field(default_factory=list)  # "train.txt:17: ...", first MAX_LISTED
    long_words: int = 0
    long_word_examples: List[str] = field(default_factory=list)
    whitespace_normalised: int = 0
    whitespace_examples: List[str] = field(default_factory=list)  # "file:line"


def iter_documents(path: PathLike, report: DocumentsReport, drop_bad_lines: bool) -> Iterator[str]:
    """Read and check one split of monolingual text as a stream, counting into `report`.

    Monolingual text has one sentence per line, documents separated by empty lines. Yields the
    sentences, whitespace normalised as `iter_parallel` does (a line of whitespace only is an
    empty line), with exactly one empty line between documents (runs of empty lines collapse,
    none at the start or end). Any other problem of `line_problem` drops the line (train) or
    raises CorpusError (valid/test), as `iter_parallel` does; so does a split without one usable
    line. Memory: one line.
    """
    # SplitReport's long-word counters are reused through a stand-in with the same fields.
    long_words = SplitReport(report.split, str(path), str(path))
    reasons: Counter = Counter()
    breaks = 0
    break_due = False  # an empty line came after the last sentence: yielded before the next one
    for number, raw_line in enumerate(iter_lines(path), start=1):
        report.lines_read = number
        line = _checked_line(report, path, number, raw_line)
        if not line:
            break_due = report.sentences_kept > 0
            continue
        problem = line_problem(line)
        if problem is not None:
            if not drop_bad_lines:
                raise CorpusError(
                    f"{path}:{number}: {problem.message}; {report.split} lines are never "
                    "dropped, so that every model is evaluated on the same text"
                )
            reasons[problem.kind] += 1
            report.dropped_by_reason = dict(reasons)
            if len(report.dropped) < MAX_LISTED:
                report.dropped.append(f"{path}:{number}: {problem.message}")
            continue
        _count_long_words(long_words, path, number, line)
        if break_due:
            break_due = False
            breaks += 1
            yield ""
        report.sentences_kept += 1
        yield line
    report.documents = breaks + 1
    report.long_words = long_words.long_words
    report.long_word_examples = long_words.long_word_examples
    if not report.sentences_kept:
        raise CorpusError(f"no usable line in {path}: {dict(reasons) or 'the file is empty'}")
