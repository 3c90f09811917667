"""The probe file: its format, the probes it holds, and where each probed word sits.

Probe file format (UTF-8; `#` starts a comment line; a line that begins with whitespace
continues the value of the line above, so long paragraphs can be wrapped):

    [analogy capital]
    context: Türkiye'nin başkenti Ankara'dır.            # context 1
    context: Fransa'nın başkenti Paris'tir.               # context 2
    query: ankara - türkiye + fransa = paris              # "= d" (the expected word) optional
    compare: 2                                            # optional, default: the last context

    [contextuality dil]
    word: dil
    target: Dil ağız içinde bulunan bir organdır.
    different: Dil insanlar arasında anlaşmayı sağlar.    # one or more
    same: Dil tat alma duyusunu gerçekleştirir.           # zero or more (the control)

    [wug barış]
    word: barış
    replacement: wug                                      # optional, default wug
    context: Barış düşmanlığın olmamasıdır.               # one or more
    replaced: Wug düşmanlığın olmamasıdır.                # optional, right after its context

(`# ...` after a value is part of the value: only whole lines are comments.) In a query, a word
is taken from the first context that holds it, or from context N when written `word@N`. A wug
context without a `replaced:` line gets every occurrence of the word replaced (its case kept:
Barış -> Wug); inflected forms ("Savaşlar" -> "Wuglar") need a `replaced:` line.
"""

import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Tuple, Union

from fairseq_struct.eval.probes.words import context_words, find_word, replace_word, same_word

PathLike = Union[str, Path]

DEFAULT_REPLACEMENT = "wug"
_HEADER = re.compile(r"^\[\s*(\w+)\s+(\S(?:.*\S)?)\s*\]$")
_KEY_VALUE = re.compile(r"^([A-Za-z_-]+)\s*:\s*(.*)$")
_QUERY = re.compile(r"^(\S+)\s+-\s+(\S+)\s+\+\s+(\S+)(?:\s*=\s*(\S+))?$")
_QUERY_WORD = re.compile(r"^(.+?)(?:@(\d+))?$")


class ProbeError(ValueError):
    """A probe that cannot be read or run; the message names the file and line, or the probe."""


# ------------------------------------------------------------------------------ the probes


@dataclass(frozen=True)
class QueryWord:
    word: str
    context: Optional[int] = None  # 1-based; None: the first context holding the word

    def __str__(self) -> str:
        return self.word if self.context is None else f"{self.word}@{self.context}"


@dataclass
class AnalogyProbe:
    """V(a) - V(b) + V(c), answered with a word of context `compare` (thesis 5.1.1.1)."""

    name: str
    contexts: List[str]
    a: QueryWord
    b: QueryWord
    c: QueryWord
    expected: Optional[str] = None
    compare: Optional[int] = None  # 1-based; None: the last context
    where: str = ""

    kind = "analogy"

    @property
    def compare_index(self) -> int:
        return (self.compare or len(self.contexts)) - 1

    @property
    def query_words(self) -> List[QueryWord]:
        return [self.a, self.b, self.c]

    def query_text(self) -> str:
        text = f"{self.a} - {self.b} + {self.c}"
        return text + (f" = {self.expected}" if self.expected else "")


@dataclass
class ContextualityProbe:
    """One word in a target context against other senses and the same sense (Tables 5.3-5.5)."""

    name: str
    word: str
    target: str
    different: List[str] = field(default_factory=list)
    same: List[str] = field(default_factory=list)
    where: str = ""

    kind = "contextuality"


@dataclass
class WugProbe:
    """A word in its contexts against the same contexts with the word replaced (Tables 5.7, 5.8)."""

    name: str
    word: str
    contexts: List[str]
    replaced: List[Optional[str]]  # None: made with replace_word
    replacement: str = DEFAULT_REPLACEMENT
    where: str = ""

    kind = "wug"

    def replaced_contexts(self) -> List[str]:
        return [
            given if given is not None else replace_word(context, self.word, self.replacement)
            for context, given in zip(self.contexts, self.replaced)
        ]


Probe = Union[AnalogyProbe, ContextualityProbe, WugProbe]
PROBE_KINDS = ("analogy", "contextuality", "wug")
_KEYS = {
    "analogy": ("context", "query", "compare"),
    "contextuality": ("word", "target", "different", "same"),
    "wug": ("word", "replacement", "context", "replaced"),
}


def _probe_label(probe: Probe) -> str:
    return f"{probe.kind} probe {probe.name!r}"


def probe_error(probe: Probe, message: str) -> "ProbeError":
    place = f"{probe.where}: " if probe.where else ""
    return ProbeError(f"{place}{_probe_label(probe)}: {message}")


def _missing_word(probe: Probe, word: str, context_name: str) -> "ProbeError":
    return probe_error(
        probe,
        f"the word {word!r} is not in {context_name} (words are compared after Turkish "
        "lower-casing, without surrounding punctuation or a suffix after an apostrophe)",
    )


# ----------------------------------------------------------------------------- the parser


@dataclass
class _Block:
    kind: str
    name: str
    line: int
    entries: List[Tuple[str, str, int]] = field(default_factory=list)  # key, value, line


def _logical_lines(text: str) -> Iterator[Tuple[int, str, bool]]:
    """(line number, content, is a continuation) of every non-blank, non-comment line."""
    for number, raw in enumerate(text.splitlines(), start=1):
        stripped = raw.strip()
        if not stripped or stripped.startswith("#"):
            continue
        yield number, stripped, raw[:1].isspace()


def parse_probes(text: str, path: str = "<probes>") -> List[Probe]:
    """The probes of a probe file's text; errors name `path` and the line."""
    text = unicodedata.normalize("NFC", text.lstrip("\ufeff"))
    blocks: List[_Block] = []
    for number, line, continuation in _logical_lines(text):
        where = f"{path}:{number}"
        if continuation and blocks and blocks[-1].entries:
            key, value, first = blocks[-1].entries[-1]
            blocks[-1].entries[-1] = (key, f"{value} {line}".strip(), first)
            continue
        if line.startswith("["):
            header = _HEADER.match(line)
            if not header:
                raise ProbeError(
                    f"{where}: expected a block header like [analogy NAME], got {line!r}"
                )
            kind, name = header.group(1).lower(), header.group(2)
            if kind not in PROBE_KINDS:
                raise ProbeError(
                    f"{where}: unknown probe kind {kind!r} "
                    f"(expected one of {', '.join(PROBE_KINDS)})"
                )
            blocks.append(_Block(kind, name, number))
            continue
        entry = _KEY_VALUE.match(line)
        if not blocks:
            raise ProbeError(f"{where}: expected a block header like [analogy NAME] first")
        block = blocks[-1]
        if not entry:
            raise ProbeError(
                f"{where}: expected 'key: value' ({', '.join(_KEYS[block.kind])}) in "
                f"[{block.kind} {block.name}], got {line!r}"
            )
        key = entry.group(1).lower()
        if key not in _KEYS[block.kind]:
            raise ProbeError(
                f"{where}: unknown key {key!r} in [{block.kind} {block.name}] "
                f"(expected {', '.join(_KEYS[block.kind])})"
            )
        block.entries.append((key, entry.group(2).strip(), number))
    probes: List[Probe] = []
    seen: Dict[Tuple[str, str], int] = {}
    for block in blocks:
        where = f"{path}:{block.line}"
        if (block.kind, block.name) in seen:
            raise ProbeError(
                f"{where}: a second [{block.kind} {block.name}] (the first is at line "
                f"{seen[block.kind, block.name]})"
            )
        seen[block.kind, block.name] = block.line
        probe = _BUILDERS[block.kind](block, path)
        check_words(probe)
        probes.append(probe)
    return probes


def read_probes(path: PathLike) -> List[Probe]:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        raise ProbeError(f"{path}: not UTF-8 text ({error})") from None
    return parse_probes(text, str(path))


def _values(block: _Block, path: str, key: str) -> List[Tuple[str, int]]:
    values = [(value, line) for k, value, line in block.entries if k == key]
    for value, line in values:
        if not value:
            raise ProbeError(f"{path}:{line}: empty {key}: in [{block.kind} {block.name}]")
    return values


def _one(block: _Block, path: str, key: str, required: bool = True) -> Optional[Tuple[str, int]]:
    values = _values(block, path, key)
    if len(values) > 1:
        raise ProbeError(
            f"{path}:{values[1][1]}: a second {key}: in [{block.kind} {block.name}] (one expected)"
        )
    if not values:
        if required:
            raise ProbeError(f"{path}:{block.line}: [{block.kind} {block.name}] has no {key}: line")
        return None
    return values[0]


def _single_word(value: str, line: int, path: str, key: str) -> str:
    if len(value.split()) != 1:
        raise ProbeError(f"{path}:{line}: {key}: must be one word, got {value!r}")
    return value


def _build_analogy(block: _Block, path: str) -> AnalogyProbe:
    contexts = [value for value, _ in _values(block, path, "context")]
    if not contexts:
        raise ProbeError(f"{path}:{block.line}: [analogy {block.name}] has no context: line")
    query, query_line = _one(block, path, "query")
    match = _QUERY.match(query)
    if not match:
        raise ProbeError(
            f"{path}:{query_line}: expected 'query: a - b + c' or 'query: a - b + c = d', "
            f"got {query!r}"
        )
    words = []
    for text in match.groups()[:3]:
        word, number = _QUERY_WORD.match(text).groups()
        context = int(number) if number else None
        if context is not None and not 1 <= context <= len(contexts):
            raise ProbeError(
                f"{path}:{query_line}: {text!r} names context {context}, but the block has "
                f"{len(contexts)} context(s)"
            )
        words.append(QueryWord(word, context))
    expected = match.group(4)
    if expected and any(same_word(expected, word.word) for word in words):
        raise ProbeError(
            f"{path}:{query_line}: the expected word {expected!r} is a query word, and query "
            "words are never answers"
        )
    compare = None
    given = _one(block, path, "compare", required=False)
    if given:
        value, line = given
        if not value.isdigit() or not 1 <= int(value) <= len(contexts):
            raise ProbeError(
                f"{path}:{line}: compare: must be a context number from 1 to {len(contexts)}, "
                f"got {value!r}"
            )
        compare = int(value)
    return AnalogyProbe(
        block.name, contexts, *words, expected, compare, where=f"{path}:{query_line}"
    )


def _build_contextuality(block: _Block, path: str) -> ContextualityProbe:
    word, line = _one(block, path, "word")
    target, _ = _one(block, path, "target")
    different = [value for value, _ in _values(block, path, "different")]
    same = [value for value, _ in _values(block, path, "same")]
    if not different and not same:
        raise ProbeError(
            f"{path}:{block.line}: [contextuality {block.name}] needs a different: or same: line"
        )
    word = _single_word(word, line, path, "word")
    return ContextualityProbe(block.name, word, target, different, same, where=f"{path}:{line}")


def _build_wug(block: _Block, path: str) -> WugProbe:
    word, line = _one(block, path, "word")
    word = _single_word(word, line, path, "word")
    replacement = DEFAULT_REPLACEMENT
    given = _one(block, path, "replacement", required=False)
    if given:
        replacement = _single_word(*given, path, "replacement")
    contexts: List[str] = []
    replaced: List[Optional[str]] = []
    for key, value, value_line in block.entries:
        if not value:
            raise ProbeError(f"{path}:{value_line}: empty {key}: in [wug {block.name}]")
        if key == "context":
            contexts.append(value)
            replaced.append(None)
        elif key == "replaced":
            if not contexts or replaced[-1] is not None:
                raise ProbeError(
                    f"{path}:{value_line}: replaced: must follow its own context: line"
                )
            replaced[-1] = value
    if not contexts:
        raise ProbeError(f"{path}:{block.line}: [wug {block.name}] has no context: line")
    return WugProbe(block.name, word, contexts, replaced, replacement, where=f"{path}:{line}")


_BUILDERS = {
    "analogy": _build_analogy,
    "contextuality": _build_contextuality,
    "wug": _build_wug,
}


# ------------------------------------------------------------- where each probed word sits


@dataclass(frozen=True)
class WordAt:
    """One occurrence of a word: context text and index among `context_words(text)`."""

    label: str  # e.g. "dil (target)", shown in the tables
    text: str
    index: int


def _locate(probe: Probe, text: str, word: str, context_name: str) -> int:
    index = find_word(context_words(text), word)
    if index is None:
        raise _missing_word(probe, word, context_name)
    return index


def analogy_query_words(probe: AnalogyProbe) -> List[WordAt]:
    """Where a, b and c are taken from: context N, or the first context holding the word."""
    found = []
    for query in probe.query_words:
        if query.context is not None:
            number = query.context
            text = probe.contexts[number - 1]
            index = _locate(probe, text, query.word, f"context {number}")
        else:
            for number, text in enumerate(probe.contexts, start=1):
                index = find_word(context_words(text), query.word)
                if index is not None:
                    break
            else:
                raise _missing_word(probe, query.word, "any of its contexts")
        found.append(WordAt(f"{query.word} (context {number})", text, index))
    return found


def contextuality_words(probe: ContextualityProbe) -> List[Tuple[str, WordAt]]:
    """(sense, occurrence): the target first, then every different and same context."""
    contexts = [("target", "target", probe.target)]
    contexts += [("different", f"different {i}", t) for i, t in enumerate(probe.different, 1)]
    contexts += [("same", f"same {i}", t) for i, t in enumerate(probe.same, 1)]
    return [
        (sense, WordAt(f"{probe.word} ({name})", text, _locate(probe, text, probe.word, name)))
        for sense, name, text in contexts
    ]


def wug_words(probe: WugProbe) -> List[Tuple[WordAt, WordAt]]:
    """(original word, replacement) occurrences, one pair per context."""
    pairs = []
    for number, (text, replaced) in enumerate(
        zip(probe.contexts, probe.replaced_contexts()), start=1
    ):
        original = _locate(probe, text, probe.word, f"context {number}")
        swapped = _locate(probe, replaced, probe.replacement, f"the replaced context {number}")
        pairs.append(
            (
                WordAt(f"{probe.word} (context {number})", text, original),
                WordAt(f"{probe.replacement} (context {number})", replaced, swapped),
            )
        )
    return pairs


def check_words(probe: Probe) -> None:
    """Raise ProbeError, naming the probe and the word, if a probed word is not in its context."""
    if isinstance(probe, AnalogyProbe):
        analogy_query_words(probe)
        if probe.expected:
            compare = probe.compare_index + 1
            text = probe.contexts[compare - 1]
            _locate(probe, text, probe.expected, f"the comparison context ({compare})")
    elif isinstance(probe, ContextualityProbe):
        contextuality_words(probe)
    else:
        wug_words(probe)


def probed_words(probe: Probe) -> List[WordAt]:
    if isinstance(probe, AnalogyProbe):
        return analogy_query_words(probe)
    if isinstance(probe, ContextualityProbe):
        return [occurrence for _, occurrence in contextuality_words(probe)]
    return [occurrence for pair in wug_words(probe) for occurrence in pair]
