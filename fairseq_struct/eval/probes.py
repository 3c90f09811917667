"""Qualitative probes of a pretrained masked-LM encoder (Polatbilek's thesis, 4.4.1 and 5.1.1).

    python -m fairseq_struct.eval.probes checkpoints-bert_elmo/checkpoint_best.pt \\
        --data data-bin/tr-mlm-words --probes fairseq_struct/eval/probes_tr.txt \\
        [--layer -1] [--json probes.json]

works for `roberta`, `bert2d` and `bert_elmo` checkpoints alike. --data is the pretraining data
directory (dict.txt, text/prepare_report.json, spm.model for pieces): each context is cut into
exactly the units the pretraining run cut its text into (`morph.units`) and fed as
`<s> context </s>` (the thesis fed `context ||| wwgg`; --second-segment gives that shape).

- Contextual word vector: the mean over a word's units (pieces or Moses words) of the chosen
  layer's output at those positions (0: embedding layer, -1: last layer, the default).
- Analogy (thesis 5.1.1.1): V(query) = V(a) - V(b) + V(c); the answer is the word of the
  comparison context whose vector has the highest cosine similarity with V(query), the query
  words a, b, c left out. The p-value says how far that best similarity stands out from the
  similarities of the other context words (`outlier_p_value`).
- Contextuality (Tables 5.3-5.5): cosine similarity of a word's vector in a target context with
  the same word in contexts of another sense, and in control contexts of the same sense.
- The "wug" test (Tables 5.7, 5.8): a word in its contexts and in the same contexts with the
  word replaced by "wug"; similarities from the original word and from "wug" of context 1.
  A piece model cuts "wug" into pieces (its vector is still the mean of its pieces) and may
  have no piece for "w" (<unk>); BERT-ELMo embeds any word, "wug" too, from its characters.
  The "Probe words" table shows the units of every probed word.

Words. A context's words are its whitespace words without the punctuation around them and
without a proper noun's suffix after an apostrophe (Turkish writes "Ankara'dır": the word is
"Ankara"), so a word's units are those overlapping that span. A probe names a word by its
form, compared after Turkish lower-casing (İ -> i, I -> ı) and Unicode NFC; the first
occurrence in the context is used.

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

import argparse
import json
import math
import re
import sys
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple, Union

import torch
import torch.nn.functional as F
from scipy import stats
from tabulate import tabulate
from torch import Tensor

PathLike = Union[str, Path]

DEFAULT_REPLACEMENT = "wug"
APOSTROPHES = "'\u2019"
P_VALUE_TEST = "one-sided t prediction test of the best similarity against the other words'"
_WORD_RUN = re.compile(r"\S+")
_HEADER = re.compile(r"^\[\s*(\w+)\s+(\S(?:.*\S)?)\s*\]$")
_KEY_VALUE = re.compile(r"^([A-Za-z_-]+)\s*:\s*(.*)$")
_QUERY = re.compile(r"^(\S+)\s+-\s+(\S+)\s+\+\s+(\S+)(?:\s*=\s*(\S+))?$")
_QUERY_WORD = re.compile(r"^(.+?)(?:@(\d+))?$")


class ProbeError(ValueError):
    """A probe that cannot be read or run; the message names the file and line, or the probe."""


# ---------------------------------------------------------------------------------- words


def turkish_lower(text: str) -> str:
    """Lower-casing that keeps Turkish dotted and dotless i apart: İ -> i, I -> ı."""
    text = unicodedata.normalize("NFC", text)
    return text.replace("İ", "i").replace("I", "ı").lower()


def same_word(a: str, b: str) -> bool:
    return turkish_lower(a) == turkish_lower(b)


@dataclass(frozen=True)
class ContextWord:
    """A word of a context: its form, its character span, the whitespace word that holds it."""

    form: str
    start: int
    end: int
    whitespace_word: int


def context_words(text: str) -> List[ContextWord]:
    """The words of `text`, one per whitespace word that has a letter or digit."""
    words = []
    for index, match in enumerate(_WORD_RUN.finditer(text)):
        token = match.group()
        characters = [i for i, char in enumerate(token) if char.isalnum()]
        if not characters:
            continue  # punctuation only: "|||", "-", ";"
        start, end = characters[0], characters[-1] + 1
        for position in range(start, end):
            if token[position] in APOSTROPHES:  # a proper noun's suffix: Ankara'dır
                end = position
                break
        offset = match.start()
        words.append(ContextWord(token[start:end], offset + start, offset + end, index))
    return words


def find_word(words: Sequence[ContextWord], word: str) -> Optional[int]:
    """Index in `words` of the first occurrence of `word` (Turkish case-insensitive)."""
    wanted = turkish_lower(word)
    for index, candidate in enumerate(words):
        if turkish_lower(candidate.form) == wanted:
            return index
    return None


def _with_case_of(model: str, replacement: str) -> str:
    if len(model) > 1 and model.isupper():
        return replacement.upper()
    if model[:1].isupper():
        return replacement[:1].upper() + replacement[1:]
    return replacement


def replace_word(text: str, word: str, replacement: str) -> str:
    """`text` with every occurrence of `word` replaced, its capitalisation kept (Barış -> Wug)."""
    pieces, position = [], 0
    for candidate in context_words(text):
        if same_word(candidate.form, word):
            pieces.append(text[position : candidate.start])
            pieces.append(_with_case_of(candidate.form, replacement))
            position = candidate.end
    return "".join(pieces) + text[position:]


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


def _fail(probe: Probe, message: str) -> "ProbeError":
    place = f"{probe.where}: " if probe.where else ""
    return ProbeError(f"{place}{_probe_label(probe)}: {message}")


def _missing_word(probe: Probe, word: str, context_name: str) -> "ProbeError":
    return _fail(
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


# ------------------------------------------------------------------ vectors and statistics


def cosine(a: Tensor, b: Tensor) -> float:
    return float(F.cosine_similarity(a.double(), b.double(), dim=0))


def analogy_query(a: Tensor, b: Tensor, c: Tensor) -> Tensor:
    """V(query) = V(a) - V(b) + V(c) (thesis 4.4.1.1)."""
    return a - b + c


def outlier_p_value(best: float, others: Sequence[float]) -> Optional[float]:
    """One-sided p-value that `best` is one more draw from the distribution of `others`.

    The other words' similarities are taken as a normal sample of unknown mean and variance;
    for a new draw x, (x - mean) / (sd * sqrt(1 + 1/n)) follows Student's t with n - 1 degrees
    of freedom (the prediction-interval test). A z-score would take the sample mean and sd as
    exact and overstate significance for short contexts. None with fewer than two other words
    or when they all have the same similarity. The best word is chosen as the maximum, so the
    p-value is optimistic; it says how far the answer stands out, not more.
    """
    n = len(others)
    if n < 2:
        return None
    mean = sum(others) / n
    sd = math.sqrt(sum((value - mean) ** 2 for value in others) / (n - 1))
    if sd <= 1e-12 * max(1.0, abs(mean)):  # all equal, up to rounding
        return None
    t = (best - mean) / (sd * math.sqrt(1.0 + 1.0 / n))
    return float(stats.t.sf(t, df=n - 1))


@dataclass(frozen=True)
class AnalogyAnswer:
    word: str
    similarity: float
    p_value: Optional[float]
    compared: int  # candidate words, query words excluded
    ranking: List[Tuple[str, float]]  # every candidate, most similar first


def answer_analogy(
    query: Tensor,
    candidates: Sequence[Tuple[str, Tensor]],
    query_words: Sequence[str],
) -> AnalogyAnswer:
    """The candidate most similar to `query`; every occurrence of a query word is left out."""
    excluded = {turkish_lower(word) for word in query_words}
    scored = [
        (word, cosine(query, vector))
        for word, vector in candidates
        if turkish_lower(word) not in excluded
    ]
    if not scored:
        raise ValueError("no candidate word is left once the query words are excluded")
    ranking = sorted(scored, key=lambda item: -item[1])
    best_word, best = ranking[0]
    others = [similarity for _, similarity in ranking[1:]]
    return AnalogyAnswer(best_word, best, outlier_p_value(best, others), len(scored), ranking)


# -------------------------------------------------------------------- encoding the contexts


@dataclass
class EncodedContext:
    """A context's words, their units, and their vectors (mean over units) at one layer."""

    words: List[ContextWord]
    units: List[List[str]]  # per word: the units overlapping it
    unknown: List[List[bool]]  # per word and unit: not in the dictionary
    vectors: Tensor  # (len(words), C)


class ContextEncoder:
    """Encodes contexts with a pretrained encoder into contextual word vectors.

    `cutter` is a `morph.units.UnitCutter` (anything with its `cut_text`). A word-level
    model (BERT-ELMo, which has `embed_words`) embeds a unit that is not in its dictionary from
    the unit's characters, as it would if the word were in the dictionary; piece models see
    <unk> for such a unit.
    """

    def __init__(
        self,
        model: Any,
        dictionary: Any,
        cutter: Any,
        layer: int = -1,
        second_segment: Optional[str] = None,
    ) -> None:
        self.model = model.eval()
        self.dictionary = dictionary
        self.cutter = cutter
        self.layers = len(model.encoder.sentence_encoder.layers)
        if not -(self.layers + 1) <= layer <= self.layers:
            raise ValueError(
                f"--layer {layer}: the encoder has {self.layers} layers, so a layer is one of "
                f"0 (embeddings) .. {self.layers} (last), or -1 .. -{self.layers + 1}"
            )
        self.layer = layer % (self.layers + 1)
        self.characters = hasattr(model.encoder, "embed_words")
        self.second_segment = second_segment
        self._cache: Dict[str, EncodedContext] = {}

    def describe_layer(self) -> str:
        if self.layer == 0:
            return "0 (embeddings)"
        return f"{self.layer} of {self.layers}" + (" (last)" if self.layer == self.layers else "")

    def _ids(self, units: Sequence[str]) -> Tuple[List[int], List[bool]]:
        ids = [self.dictionary.index(unit) for unit in units]
        return ids, [index == self.dictionary.unk() for index in ids]

    @torch.no_grad()
    def encode(self, text: str) -> EncodedContext:
        if text in self._cache:
            return self._cache[text]
        units_per_word, spans = self.cutter.cut_text(text)
        flat = [unit for word in units_per_word for unit in word]
        ids, unknown = self._ids(flat)
        tokens = [self.dictionary.bos()] + ids + [self.dictionary.eos()]
        if self.second_segment:
            second = [u for w in self.cutter.cut_text(self.second_segment)[0] for u in w]
            tokens += self._ids(second)[0] + [self.dictionary.eos()]
        limit = self.model.max_positions()
        if limit and len(tokens) > limit:
            raise ValueError(
                f"the context has {len(tokens)} tokens, the encoder takes at most {limit}: "
                f"{text[:60]!r}..."
            )
        hidden = self._layer_output(torch.tensor([tokens]), flat, unknown)
        words = context_words(text)
        if not words:
            raise ValueError(f"the context has no word: {text[:60]!r}")
        vectors, word_units, word_unknown = [], [], []
        for word in words:
            chosen = [
                position
                for position, (start, end) in enumerate(spans)
                if start < word.end and (end > word.start or start == end == word.start)
            ]
            vectors.append(hidden[[1 + position for position in chosen]].mean(dim=0))
            word_units.append([flat[position] for position in chosen])
            word_unknown.append([unknown[position] for position in chosen])
        encoded = EncodedContext(words, word_units, word_unknown, torch.stack(vectors))
        self._cache[text] = encoded
        return encoded

    def _layer_output(self, tokens: Tensor, units: List[str], unknown: List[bool]) -> Tensor:
        """(T, C) output of the chosen layer for one sequence."""
        encoder = self.model.encoder
        embeddings = None
        if self.characters and any(unknown):
            embeddings = encoder.sentence_encoder.embed_tokens(tokens)
            for position, (unit, missing) in enumerate(zip(units, unknown)):
                if missing:
                    embeddings[0, 1 + position] = encoder.embed_words([unit])[0]
        features, extra = encoder.extract_features(
            tokens, return_all_hiddens=True, token_embeddings=embeddings
        )
        if self.layer == self.layers:  # the model's output (after a final layer norm, if any)
            return features[0]
        return extra["inner_states"][self.layer][:, 0]

    def vector(self, occurrence: WordAt) -> Tensor:
        return self.encode(occurrence.text).vectors[occurrence.index]

    def units_note(self, occurrence: WordAt) -> Tuple[str, str]:
        """The units of a word occurrence, and what a reader should know about them."""
        encoded = self.encode(occurrence.text)
        units = encoded.units[occurrence.index]
        unknown = encoded.unknown[occurrence.index]
        shown = " ".join(units)
        notes = []
        if len(units) > 1:
            notes.append(f"{len(units)} units: vector = their mean")
        if any(unknown):
            missing = [unit for unit, flag in zip(units, unknown) if flag]
            if self.characters:
                notes.append(
                    f"not in the dictionary, embedded from characters: {' '.join(missing)}"
                )
            else:
                notes.append(f"<unk> (not in the dictionary): {' '.join(missing)}")
        return shown, "; ".join(notes)


# ------------------------------------------------------------------------ running probes


def run_analogy(probe: AnalogyProbe, encoder: ContextEncoder, top: int) -> Dict[str, Any]:
    a, b, c = (encoder.vector(at) for at in analogy_query_words(probe))
    query = analogy_query(a, b, c)
    compare = probe.contexts[probe.compare_index]
    encoded = encoder.encode(compare)
    candidates = [(word.form, vector) for word, vector in zip(encoded.words, encoded.vectors)]
    try:
        answer = answer_analogy(query, candidates, [w.word for w in probe.query_words])
    except ValueError as error:
        raise _fail(probe, str(error)) from None
    expected_similarity = None
    if probe.expected:
        index = find_word(encoded.words, probe.expected)
        expected_similarity = cosine(query, encoded.vectors[index])
    return {
        "probe": probe.name,
        "query": probe.query_text(),
        "compare_context": probe.compare_index + 1,
        "answer": answer.word,
        "similarity": answer.similarity,
        "expected": probe.expected,
        "correct": same_word(answer.word, probe.expected) if probe.expected else None,
        "expected_similarity": expected_similarity,
        "p_value": answer.p_value,
        "compared_words": answer.compared,
        "top": [{"word": w, "similarity": s} for w, s in answer.ranking[:top]],
    }


def run_contextuality(probe: ContextualityProbe, encoder: ContextEncoder) -> List[Dict[str, Any]]:
    occurrences = contextuality_words(probe)
    _, target = occurrences[0]
    anchor = encoder.vector(target)
    return [
        {
            "probe": probe.name,
            "word": probe.word,
            "compared": occurrence.label,
            "sense": sense,
            "similarity": cosine(anchor, encoder.vector(occurrence)),
        }
        for sense, occurrence in occurrences[1:]
    ]


def run_wug(probe: WugProbe, encoder: ContextEncoder, top: int) -> List[Dict[str, Any]]:
    """Tables 5.7 (from the word in context 1) and 5.8 (from the replacement in context 1)."""
    pairs = wug_words(probe)
    rows = []
    for anchor in pairs[0]:
        compared = [other for pair in pairs for other in pair if other != anchor]
        nearest = _nearest_words(encoder, anchor, pairs[-1][0].text, top)
        for other in compared:
            rows.append(
                {
                    "probe": probe.name,
                    "from": anchor.label,
                    "to": other.label,
                    "similarity": cosine(encoder.vector(anchor), encoder.vector(other)),
                    "nearest_in_last_context": nearest,
                }
            )
    return rows


def _nearest_words(encoder: ContextEncoder, anchor: WordAt, text: str, top: int) -> List[Any]:
    """The words of `text` most similar to `anchor` (the thesis's Figure 5.1)."""
    vector = encoder.vector(anchor)
    encoded = encoder.encode(text)
    scored = [(w.form, cosine(vector, v)) for w, v in zip(encoded.words, encoded.vectors)]
    return [{"word": w, "similarity": s} for w, s in sorted(scored, key=lambda x: -x[1])[:top]]


def probed_words(probe: Probe) -> List[WordAt]:
    if isinstance(probe, AnalogyProbe):
        return analogy_query_words(probe)
    if isinstance(probe, ContextualityProbe):
        return [occurrence for _, occurrence in contextuality_words(probe)]
    return [occurrence for pair in wug_words(probe) for occurrence in pair]


def run_probes(probes: Sequence[Probe], encoder: ContextEncoder, top: int = 5) -> Dict[str, Any]:
    results: Dict[str, Any] = {kind: [] for kind in PROBE_KINDS}
    results["words"] = []
    for probe in probes:
        try:
            if isinstance(probe, AnalogyProbe):
                results["analogy"].append(run_analogy(probe, encoder, top))
            elif isinstance(probe, ContextualityProbe):
                results["contextuality"].extend(run_contextuality(probe, encoder))
            else:
                results["wug"].extend(run_wug(probe, encoder, top))
            for occurrence in probed_words(probe):
                units, note = encoder.units_note(occurrence)
                results["words"].append(
                    {"probe": probe.name, "word": occurrence.label, "units": units, "note": note}
                )
        except ProbeError:
            raise
        except ValueError as error:  # a context too long, a word the segmenter cannot cut
            raise _fail(probe, str(error)) from None
    return results


# ------------------------------------------------------------------------------ reporting


def _number(value: Optional[float], digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _p(value: Optional[float]) -> str:
    return "-" if value is None else f"{value:.2g}"


def tables(results: Dict[str, Any]) -> str:
    parts = []
    if results["analogy"]:
        rows = [
            (
                r["probe"],
                r["query"],
                r["answer"],
                _number(r["similarity"]),
                "-" if r["correct"] is None else ("yes" if r["correct"] else "no"),
                _number(r["expected_similarity"]),
                _p(r["p_value"]),
                r["compared_words"],
            )
            for r in results["analogy"]
        ]
        headers = ["analogy", "query", "answer", "sim.", "expected?", "sim. expected", "p", "words"]
        parts.append(tabulate(rows, headers=headers, disable_numparse=True))
        parts.append(f"p: {P_VALUE_TEST} similarities (query words excluded)")
    if results["contextuality"]:
        rows = [
            (r["probe"], r["word"], r["compared"], r["sense"], _number(r["similarity"]))
            for r in results["contextuality"]
        ]
        headers = ["contextuality", "word", "vs. the target's vector in", "sense", "similarity"]
        parts.append(tabulate(rows, headers=headers, disable_numparse=True))
    if results["wug"]:
        rows = [(r["probe"], r["from"], r["to"], _number(r["similarity"])) for r in results["wug"]]
        headers = ["wug", "from", "to", "similarity"]
        parts.append(tabulate(rows, headers=headers, disable_numparse=True))
    if results["words"]:
        rows = [(r["probe"], r["word"], r["units"], r["note"]) for r in results["words"]]
        headers = ["probe words", "word", "units", "note"]
        parts.append(tabulate(rows, headers=headers, disable_numparse=True))
    return "\n\n".join(parts)


# -------------------------------------------------------------------------------- the CLI


def load_encoder(
    checkpoint: PathLike, data: PathLike, layer: int, second_segment: Optional[str]
) -> Tuple[ContextEncoder, str]:
    from fairseq import checkpoint_utils

    import fairseq_struct  # noqa: F401  (registers the models, tasks and safe globals)
    from fairseq_struct.morph.units import PretrainingUnits, UnitCutter

    units = PretrainingUnits.from_data_dir(data)
    models, cfg, task = checkpoint_utils.load_model_ensemble_and_task(
        [str(checkpoint)], arg_overrides={"data": str(data)}
    )
    encoder = ContextEncoder(
        models[0], task.source_dictionary, UnitCutter(units), layer, second_segment
    )
    arch = getattr(cfg.model, "arch", None) or getattr(cfg.model, "_name", "?")
    return encoder, f"{arch}, {units.describe()}"


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("checkpoint", type=Path, help="a pretraining checkpoint (masked LM)")
    parser.add_argument(
        "--data", required=True, type=Path, help="the pretraining data directory of the checkpoint"
    )
    parser.add_argument("--probes", required=True, type=Path, help="the probe file (see below)")
    parser.add_argument(
        "--layer", type=int, default=-1, help="0: embeddings, 1..L: layer outputs, -1: last"
    )
    parser.add_argument("--json", type=Path, help="also write every result here as JSON")
    parser.add_argument("--top", type=int, default=5, help="nearest words kept in the JSON")
    parser.add_argument(
        "--second-segment",
        help="feed '<s> context </s> TEXT </s>' (the thesis filled it with 'wwgg')",
    )
    return parser.parse_args(argv)


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    try:
        probes = read_probes(args.probes)
        encoder, description = load_encoder(
            args.checkpoint, args.data, args.layer, args.second_segment
        )
        results = run_probes(probes, encoder, args.top)
    except (ProbeError, FileNotFoundError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    header = (
        f"checkpoint {args.checkpoint} ({description}); layer {encoder.describe_layer()}; "
        f"word vector = mean of its units; cosine similarity"
    )
    print(header + "\n\n" + tables(results))
    if args.json:
        report = {
            "checkpoint": str(args.checkpoint),
            "model": description,
            "layer": encoder.layer,
            "probes": str(args.probes),
            "p_value_test": P_VALUE_TEST,
            **results,
        }
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, ensure_ascii=False, indent=2) + "\n", "utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
