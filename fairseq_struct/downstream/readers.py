"""Readers of the raw formats that downstream data sets ship in.

| reader | format | data sets |
|---|---|---|
| `read_classification` | one text a line per class file, or `text<TAB>label` lines | sentiment |
| `read_conll` | `token<TAB>tag` (or `token tag`), GermEval 2014's 4-column TSV | NER |
| `read_conllu` | CoNLL-U (UPOS, or another column) | POS (UD) |
| `read_squad` | SQuAD v1.1 JSON (TQuAD: `answer_start` as a string) | QA |
"""

import io
import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import conllu
from conllu.exceptions import ParseException

from fairseq_struct.corpus_io import CorpusError, read_lines

PathLike = Union[str, Path]

# How many "file:line: what" locations a report lists; all are counted.
MAX_EXAMPLES = 10

BYTE_ORDER_MARK = "\ufeff"
DOCSTART = "-DOCSTART-"

# The 17 universal POS tags of UD v2 (https://universaldependencies.org/u/pos/).
UPOS_TAGS = frozenset(
    "ADJ ADP ADV AUX CCONJ DET INTJ NOUN NUM PART PRON PROPN PUNCT SCONJ SYM VERB X".split()
)
CONLLU_COLUMNS = conllu.parser.DEFAULT_FIELDS
# Columns whose value is a plain label; FEATS, HEAD, DEPS and MISC are structured.
CONLLU_LABEL_COLUMNS = ("form", "lemma", "upos", "xpos", "deprel")

# GermEval 2014: index, token, outer (top-level) entity tag, inner (embedded) entity tag.
GERMEVAL_COLUMNS = 4
GERMEVAL_TOKEN_COLUMN = 2
GERMEVAL_OUTER_TAG_COLUMN = 3

_DIGITS = re.compile(r"[0-9]+")
_SPACES_AND_TABS = re.compile(r"[ \t]+")


class DownstreamDataError(ValueError):
    """Unusable downstream data; the message starts with `file:line: ` (or, for JSON,
    `file: question id X: ` or `file: data[i]...: `)."""


@dataclass
class ReadReport:
    """What reading one data file (or set of class files) found; `dataclasses.asdict` gives JSON.

    `skipped` counts what was left out (empty lines, -DOCSTART-, multi-word token ranges, ...),
    `repaired` what was kept after a fix (whitespace stripped); `examples` lists the first
    MAX_EXAMPLES locations of either, as "file:line: what".
    """

    path: str
    items: int = 0
    skipped: Dict[str, int] = field(default_factory=dict)
    repaired: Dict[str, int] = field(default_factory=dict)
    examples: List[str] = field(default_factory=list)

    def skip(self, reason: str, where: str) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + 1
        self._example(f"{where}: {reason}")

    def repair(self, what: str, where: str) -> None:
        self.repaired[what] = self.repaired.get(what, 0) + 1
        self._example(f"{where}: {what}")

    def _example(self, text: str) -> None:
        if len(self.examples) < MAX_EXAMPLES:
            self.examples.append(text)


def read_text_lines(path: PathLike) -> List[str]:
    """The lines of a UTF-8 file, line ends (LF or CRLF) and a leading byte-order mark removed.

    Line i of the result is line i + 1 of the file, so that positions can be reported and
    predictions written back. Invalid UTF-8 raises DownstreamDataError naming the line and the
    byte offset (corpus_io.read_lines finds it).
    """
    try:
        lines = read_lines(path)
    except CorpusError as error:
        raise DownstreamDataError(str(error)) from None
    if lines and lines[0].startswith(BYTE_ORDER_MARK):
        lines[0] = lines[0][len(BYTE_ORDER_MARK) :]
    return lines


# ------------------------------------------------------------------------------ classification


@dataclass(frozen=True)
class TextExample:
    """One text to classify, its gold label and where it was read (1-based line)."""

    text: str
    label: str
    path: str
    line: int


def read_classification(
    paths: Sequence[PathLike],
    labels: Optional[Sequence[str]] = None,
    tab_separated: bool = False,
) -> Tuple[List[TextExample], ReadReport]:
    """Texts and labels from one file per class (one text a line) or from `text<TAB>label` lines.

    Per-class files take their label from `labels` (one per path) or else from the file's
    extension (`train.pos` -> `pos`). With `tab_separated`, every line is `text<TAB>label` and
    `labels`, when given, is the set of allowed labels. Empty lines are skipped and counted,
    leading and trailing whitespace is stripped and counted; a TSV line without exactly one tab
    or with an empty label is an error.
    """
    if isinstance(paths, (str, Path)):
        paths = [paths]
    if not paths:
        raise DownstreamDataError("read_classification: no file given")
    if not tab_separated:
        file_labels = _class_file_labels(paths, labels)
    report = ReadReport(", ".join(str(path) for path in paths))
    examples: List[TextExample] = []
    for file_index, path in enumerate(paths):
        for number, line in enumerate(read_text_lines(path), start=1):
            where = f"{path}:{number}"
            if not line.strip():
                report.skip("empty line", where)
                continue
            if tab_separated:
                text, label = _split_text_label(line, where, labels)
            else:
                text, label = line, file_labels[file_index]
            stripped = text.strip()
            if not stripped:
                report.skip("empty text", where)
                continue
            if stripped != text:
                report.repair("leading or trailing whitespace stripped", where)
            examples.append(TextExample(stripped, label, str(path), number))
    report.items = len(examples)
    return examples, report


def _class_file_labels(paths: Sequence[PathLike], labels: Optional[Sequence[str]]) -> List[str]:
    if labels is not None:
        if len(labels) != len(paths):
            raise DownstreamDataError(
                f"{len(labels)} labels ({', '.join(labels)}) for {len(paths)} class files "
                f"({', '.join(str(path) for path in paths)}): give one label per file"
            )
        return list(labels)
    extensions = [Path(path).suffix[1:] for path in paths]
    for path, extension in zip(paths, extensions):
        if not extension:
            raise DownstreamDataError(
                f"{path}: no file extension to take the class label from: name the file "
                "like train.pos, or give the labels"
            )
    return extensions


def _split_text_label(line: str, where: str, allowed: Optional[Sequence[str]]) -> Tuple[str, str]:
    tabs = line.count("\t")
    if tabs != 1:
        raise DownstreamDataError(
            f"{where}: expected text<TAB>label with exactly one tab, found {tabs} tabs"
        )
    text, label = line.split("\t")
    label = label.strip()
    if not label:
        raise DownstreamDataError(f"{where}: empty label after the tab")
    if allowed is not None and label not in allowed:
        raise DownstreamDataError(
            f"{where}: label {label!r} is not one of the given labels ({', '.join(allowed)})"
        )
    return text, label


# ------------------------------------------------------------------------------ tagging


@dataclass(frozen=True)
class TaggedSentence:
    """Words with one tag each, and the 1-based line of each word in `path`."""

    words: Tuple[str, ...]
    tags: Tuple[str, ...]
    path: str
    lines: Tuple[int, ...]


def _is_blank(line: str) -> bool:
    return not line.strip()


def _is_docstart(line: str) -> bool:
    fields = line.split()
    return bool(fields) and fields[0] == DOCSTART


def _is_germeval_word_line(fields: Sequence[str]) -> bool:
    return len(fields) == GERMEVAL_COLUMNS and bool(_DIGITS.fullmatch(fields[0]))


def _without_trailing_empty_fields(fields: List[str], columns: int) -> List[str]:
    """`fields` cut to `columns` where every field beyond is empty (a trailing tab)."""
    if len(fields) > columns and not any(field.strip() for field in fields[columns:]):
        return fields[:columns]
    return fields


@dataclass(frozen=True)
class ConllLayout:
    """How a CoNLL file's word lines are read, and the evidence for it (quoted in errors)."""

    germeval: bool
    tab_separated: bool
    columns: int
    evidence: str


def _fields(line: str, tab_separated: bool) -> List[str]:
    """The columns of a word line: split at each tab, or at runs of spaces and tabs (never at
    other Unicode spaces, which can be part of a token, such as a no-break space)."""
    if tab_separated:
        return line.split("\t")
    return _SPACES_AND_TABS.split(line.strip(" \t"))


def _width(line: str, tab_separated: bool) -> int:
    """The columns of a word line, trailing empty ones (trailing tabs) not counted."""
    fields = _fields(line, tab_separated)
    while len(fields) > 1 and not fields[-1].strip():
        fields.pop()
    return len(fields)


def _majority(count: int, total: int) -> bool:
    return 2 * count > total


def conll_layout(
    word_lines: Sequence[Tuple[int, str]],
    columns: Optional[int] = None,
    germeval: Optional[bool] = None,
) -> ConllLayout:
    """The layout of a CoNLL file, decided by most of its word lines, never by one of them.

    A single odd line (a trailing tab, a stray space) must not change how the other lines are
    read: the layout is what most word lines have, and a line that departs from it is then the
    error, named with its line number and the evidence for the layout.
    """
    if not word_lines:
        return ConllLayout(bool(germeval), True, columns or 2, "the file has no word line")
    total = len(word_lines)
    if germeval is None:
        candidates = [line for _, line in word_lines if not line.startswith("#")]
        shaped = sum(
            _is_germeval_word_line(
                _without_trailing_empty_fields(line.split("\t"), GERMEVAL_COLUMNS)
            )
            for line in candidates
        )
        germeval = bool(candidates) and _majority(shaped, len(candidates))
        if germeval:
            evidence = (
                f"read as GermEval 2014 (index<TAB>token<TAB>outer<TAB>inner): {shaped:,} of "
                f"{len(candidates):,} word lines have that layout"
            )
            return ConllLayout(True, True, columns or GERMEVAL_COLUMNS, evidence)
    elif germeval:
        return ConllLayout(True, True, columns or GERMEVAL_COLUMNS, "read as GermEval 2014")
    with_tab = sum("\t" in line for _, line in word_lines)
    tab_separated = _majority(with_tab, total)
    separator = "tab" if tab_separated else "whitespace"
    if columns is not None:
        return ConllLayout(False, tab_separated, columns, f"{separator}-separated, as asked for")
    widths = [(number, _width(line, tab_separated)) for number, line in word_lines]
    common, common_count = Counter(width for _, width in widths).most_common(1)[0]
    first = next(number for number, width in widths if width == common)
    evidence = (
        f"{common_count:,} of {total:,} word lines of the file have {common} "
        f"{separator}-separated columns, the first on line {first}"
    )
    return ConllLayout(False, tab_separated, common, evidence)


def read_conll(
    path: PathLike,
    tag_column: Optional[int] = None,
    columns: Optional[int] = None,
    germeval: Optional[bool] = None,
) -> Tuple[List[TaggedSentence], ReadReport]:
    """Sentences of an NER CoNLL file: `token<TAB>tag` lines, a blank line between sentences.

    The layout is what most word lines have (`conll_layout`): tab- or whitespace-separated
    columns, how many, and whether the file is GermEval 2014 (`index<TAB>token<TAB>outer<TAB>
    inner`, `#` comment lines; or `germeval=True`). The token is column 1 (GermEval: 2) and the
    tag the last column (GermEval: the OUTER one, 3) unless `tag_column` (1-based) says
    otherwise; a GermEval index must count 1, 2, ... in each sentence, and `#` lines are comments
    there only. `-DOCSTART-` lines, comments and repeated blank lines are skipped and counted;
    trailing tabs (empty columns beyond the layout's) are removed and counted. A word line with
    another column count than the layout's (or `columns`), an empty or whitespace-only token or
    an empty tag is an error naming that line and the evidence for the layout.
    """
    lines = read_text_lines(path)
    report = ReadReport(str(path))
    word_lines = [
        (number, line)
        for number, line in enumerate(lines, start=1)
        if not _is_blank(line) and not _is_docstart(line)
    ]
    layout = conll_layout(word_lines, columns, germeval)
    token_column = GERMEVAL_TOKEN_COLUMN if layout.germeval else 1
    tag_column = _check_tag_column(path, tag_column, layout.germeval, token_column, layout.columns)

    sentences: List[TaggedSentence] = []
    words: List[str] = []
    tags: List[str] = []
    numbers: List[int] = []
    previous_blank = False

    for number, line in enumerate(lines, start=1):
        where = f"{path}:{number}"
        if _is_blank(line):
            if line:
                report.repair("whitespace-only line taken as a sentence break", where)
            if words:
                sentences.append(
                    TaggedSentence(tuple(words), tuple(tags), str(path), tuple(numbers))
                )
                words, tags, numbers = [], [], []
            elif previous_blank:
                # An empty sentence: nothing is lost, but a converter may have dropped a line.
                report.skip("repeated blank line", where)
            previous_blank = True
            continue
        previous_blank = False
        if _is_docstart(line):
            report.skip(f"{DOCSTART} line", where)
            continue
        if layout.germeval and line.startswith("#"):
            report.skip("comment line", where)
            continue
        fields = _fields(line, layout.tab_separated)
        cut = _without_trailing_empty_fields(fields, layout.columns)
        if len(cut) != len(fields):
            report.repair("trailing tab removed", where)
        if len(cut) != layout.columns:
            raise DownstreamDataError(
                f"{where}: {len(cut)} columns where the file's word lines have "
                f"{layout.columns} ({layout.evidence})"
            )
        token, tag = cut[token_column - 1], cut[tag_column - 1]
        if not token.strip():
            raise DownstreamDataError(
                f"{where}: empty or whitespace-only token {token!r} in column {token_column}"
            )
        if token != token.strip() or tag != tag.strip():
            report.repair("whitespace around a token or tag stripped", where)
            token, tag = token.strip(), tag.strip()
        if not tag:
            raise DownstreamDataError(f"{where}: empty tag in column {tag_column}")
        if layout.germeval and cut[0] != str(len(words) + 1):
            raise DownstreamDataError(
                f"{where}: GermEval index {cut[0]!r}, expected {len(words) + 1} (the word's "
                "position in its sentence); a blank line may be missing before this line"
            )
        words.append(token)
        tags.append(tag)
        numbers.append(number)
    if words:
        sentences.append(TaggedSentence(tuple(words), tuple(tags), str(path), tuple(numbers)))
    report.items = len(sentences)
    return sentences, report


def _check_tag_column(
    path: PathLike, tag_column: Optional[int], germeval: bool, token_column: int, count: int
) -> int:
    if tag_column is None:
        return GERMEVAL_OUTER_TAG_COLUMN if germeval else count
    if not 1 <= tag_column <= count or tag_column == token_column:
        raise DownstreamDataError(
            f"{path}: tag column {tag_column} (1-based) does not exist or is the token column "
            f"{token_column}: the file has {count} columns"
        )
    return tag_column


def _conllu_token_lines(lines: Sequence[str]) -> List[List[int]]:
    """The 1-based line numbers of the token lines of each sentence, split as conllu splits.

    conllu.parse_incr ends a sentence at a line that is empty after strip() and takes every line
    of a sentence not starting with `#` as a token, in order; doing the same here pairs each
    parsed token with its line, which conllu does not report.
    """
    sentences: List[List[int]] = []
    current: List[int] = []
    in_sentence = False
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            if in_sentence:
                sentences.append(current)
            current, in_sentence = [], False
            continue
        in_sentence = True
        if not line.startswith("#"):
            current.append(number)
    if in_sentence:
        sentences.append(current)
    return sentences


def read_conllu(path: PathLike, column: str = "upos") -> Tuple[List[TaggedSentence], ReadReport]:
    """Sentences of a CoNLL-U file: each syntactic word with its UPOS (or another `column`).

    Multi-word token ranges (`3-4`) are skipped in favour of their words, empty nodes (`8.1`)
    are skipped, both counted; comments are skipped. A word line without 10 tab-separated
    columns, word ids not counting 1, 2, ... in a sentence, an empty FORM, a missing value
    (`_`) in `column` or, for UPOS, a tag that is not one of UD's 17 is an error naming the line.
    """
    if column not in CONLLU_LABEL_COLUMNS:
        raise DownstreamDataError(
            f"{path}: cannot tag with CoNLL-U column {column!r}: use one of "
            f"{', '.join(CONLLU_LABEL_COLUMNS)}"
        )
    lines = read_text_lines(path)
    for number, line in enumerate(lines, start=1):
        if line.strip() and not line.startswith("#"):
            _check_conllu_line(path, number, line)
    report = ReadReport(str(path))
    sentences: List[TaggedSentence] = []
    token_lines = _conllu_token_lines(lines)
    parsed = conllu.parse_incr(io.StringIO("\n".join(lines) + "\n"))
    for index, numbers in enumerate(token_lines):
        try:
            tokens = next(parsed)
        except ParseException as error:
            # Lines were checked above, so this is a sentence-level problem.
            first = numbers[0] if numbers else "?"
            raise DownstreamDataError(f"{path}:{first}: CoNLL-U sentence: {error}") from None
        if len(tokens) != len(numbers):
            raise DownstreamDataError(
                f"{path}:{numbers[0] if numbers else '?'}: conllu parsed {len(tokens)} tokens "
                f"where the sentence has {len(numbers)} token lines"
            )
        sentence = _conllu_sentence(path, tokens, numbers, column, report)
        if sentence is not None:
            sentences.append(sentence)
    report.items = len(sentences)
    return sentences, report


def _check_conllu_line(path: PathLike, number: int, line: str) -> None:
    fields = line.split("\t")
    if len(fields) != len(CONLLU_COLUMNS):
        raise DownstreamDataError(
            f"{path}:{number}: {len(fields)} tab-separated columns, a CoNLL-U word line has "
            f"{len(CONLLU_COLUMNS)} ({' '.join(name.upper() for name in CONLLU_COLUMNS)})"
        )
    try:
        conllu.parser.parse_id_value(fields[0])
    except ParseException:
        raise DownstreamDataError(
            f"{path}:{number}: {fields[0]!r} is not a CoNLL-U word id (1, 3-4 or 8.1)"
        ) from None
    if fields[0] in ("", "_"):
        raise DownstreamDataError(f"{path}:{number}: missing word id in column 1")


def _conllu_sentence(
    path: PathLike,
    tokens: conllu.TokenList,
    numbers: Sequence[int],
    column: str,
    report: ReadReport,
) -> Optional[TaggedSentence]:
    words: List[str] = []
    tags: List[str] = []
    kept_lines: List[int] = []
    for token, number in zip(tokens, numbers):
        where = f"{path}:{number}"
        token_id = token["id"]
        if isinstance(token_id, tuple):
            kind = "multi-word token range" if token_id[1] == "-" else "empty node"
            report.skip(kind, where)
            continue
        if token_id != len(words) + 1:
            raise DownstreamDataError(
                f"{where}: word id {token_id}, expected {len(words) + 1} (ids count 1, 2, ... "
                "in each sentence; a blank line may be missing before this line)"
            )
        form = token["form"]
        if not form or not form.strip():
            raise DownstreamDataError(f"{where}: empty or whitespace-only FORM")
        tag = token[column]
        if tag is None or tag == "_" or not str(tag).strip():
            raise DownstreamDataError(
                f"{where}: no {column.upper()} for word {form!r} (the column is '_' or empty)"
            )
        if column == "upos" and tag not in UPOS_TAGS:
            raise DownstreamDataError(
                f"{where}: {tag!r} is not a universal POS tag ({' '.join(sorted(UPOS_TAGS))})"
            )
        words.append(form)
        tags.append(tag)
        kept_lines.append(number)
    if not words:
        return None
    return TaggedSentence(tuple(words), tuple(tags), str(path), tuple(kept_lines))


# ------------------------------------------------------------------------------ QA


@dataclass(frozen=True)
class Answer:
    """A gold answer: its text and its character offset in the context."""

    text: str
    start: int


@dataclass(frozen=True)
class QAExample:
    """One question about one context, with its gold answers (several in valid/test files)."""

    id: str
    title: str
    context: str
    question: str
    answers: Tuple[Answer, ...]


def read_squad(path: PathLike, keep_unanswered: bool = False) -> Tuple[List[QAExample], ReadReport]:
    """Questions of a SQuAD v1.1 JSON file.

    `answer_start` may be an int or a string of digits (TQuAD); every answer must be found at
    its offset in the context. Ids are kept as strings and must be unique. A question without
    answers is skipped and counted (a training example needs a span) unless `keep_unanswered`.
    Missing keys, wrong types, an offset mismatch or a duplicate id are errors naming the
    question id or the place in the JSON (`data[i].paragraphs[j]`).
    """
    text = "\n".join(read_text_lines(path))
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise DownstreamDataError(
            f"{path}:{error.lineno}: invalid JSON at column {error.colno}: {error.msg}"
        ) from None
    report = ReadReport(str(path))
    examples: List[QAExample] = []
    seen: Dict[str, str] = {}  # question id -> where it was first found
    articles = _get(path, document, "data", list, "the top level")
    for article_index, article in enumerate(articles):
        where = f"data[{article_index}]"
        title = _get(path, article, "title", str, where)
        paragraphs = _get(path, article, "paragraphs", list, where)
        for paragraph_index, paragraph in enumerate(paragraphs):
            where = f"data[{article_index}].paragraphs[{paragraph_index}]"
            context = _get(path, paragraph, "context", str, where)
            questions = _get(path, paragraph, "qas", list, where)
            for question_index, qa in enumerate(questions):
                qa_where = f"{where}.qas[{question_index}]"
                question_id = _question_id(path, qa, qa_where)
                if question_id in seen:
                    raise DownstreamDataError(
                        f"{path}: question id {question_id}: duplicate id (at {qa_where} and "
                        f"{seen[question_id]})"
                    )
                seen[question_id] = qa_where
                label = f"question id {question_id}"
                question = _get(path, qa, "question", str, label)
                if not question.strip():
                    raise DownstreamDataError(f"{path}: {label}: empty question")
                answers = tuple(
                    _answer(path, answer, context, f"{label}: answers[{answer_index}]")
                    for answer_index, answer in enumerate(_get(path, qa, "answers", list, label))
                )
                if not answers and not keep_unanswered:
                    report.skip("question without answers", f"{path}: {label}")
                    continue
                examples.append(QAExample(question_id, title, context, question, answers))
    report.items = len(examples)
    return examples, report


def _type_name(kind: Union[type, Tuple[type, ...]]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    names = {str: "a string", int: "an integer", list: "a list", dict: "an object"}
    return " or ".join(names.get(k, k.__name__) for k in kinds)


def _get(path: PathLike, node: Any, key: str, kind: Union[type, Tuple[type, ...]], where: str):
    if not isinstance(node, dict):
        raise DownstreamDataError(f"{path}: {where}: expected an object, found {node!r:.60}")
    if key not in node:
        raise DownstreamDataError(f"{path}: {where}: missing key {key!r}")
    value = node[key]
    # bool is an int in Python, but true/false is never an offset or an id.
    if not isinstance(value, kind) or isinstance(value, bool):
        raise DownstreamDataError(
            f"{path}: {where}: {key!r} must be {_type_name(kind)}, found {value!r:.60}"
        )
    return value


def _question_id(path: PathLike, qa: Any, where: str) -> str:
    question_id = _get(path, qa, "id", (str, int), where)
    question_id = str(question_id)
    if not question_id.strip():
        raise DownstreamDataError(f"{path}: {where}: empty question id")
    return question_id


def _answer(path: PathLike, answer: Any, context: str, where: str) -> Answer:
    text = _get(path, answer, "text", str, where)
    start = _get(path, answer, "answer_start", (int, str), where)
    if isinstance(start, str):
        if not _DIGITS.fullmatch(start):
            raise DownstreamDataError(
                f"{path}: {where}: answer_start {start!r} is not a number of characters"
            )
        start = int(start)
    if start < 0:
        raise DownstreamDataError(f"{path}: {where}: negative answer_start {start}")
    if not text:
        raise DownstreamDataError(f"{path}: {where}: empty answer text")
    found = context[start : start + len(text)]
    if found != text:
        elsewhere = context.find(text)
        hint = (
            f"; the text occurs at offset {elsewhere}"
            if elsewhere >= 0
            else "; the text does not occur in the context"
        )
        raise DownstreamDataError(
            f"{path}: {where}: answer {text!r} is not at answer_start {start}: the context has "
            f"{found!r} there{hint}"
        )
    return Answer(text, start)
