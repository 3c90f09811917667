"""Turkish morphological segmentation with Zemberek (design.md §3).

`TurkishSegmenter.segment` inserts MORPHEME_BOUNDARY between the morphemes of every word as
Zemberek's `analyze_and_disambiguate(line).best_analysis()` gives them, cutting the original
characters and adding nothing else ("İstanbul'da." -> "İstanbul￭'da."). `segment_lines` does a
corpus in worker processes: the same output, far faster (docs/segmentation.md says how).
"""

import hashlib
import logging
import multiprocessing
import re
import time
from collections import Counter
from contextlib import ExitStack
from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from typing import Any, Dict, FrozenSet, Iterator, List, Optional, Sequence, Tuple

from fairseq_struct.morph.collector import collector_paused
from fairseq_struct.morph.forked_helpers import ForkedHelpers, shrinking_batches
from fairseq_struct.morph.segmentation_cache import SegmentationCache, SegmentationResult
from fairseq_struct.morph.zemberek.fast_decoder import FastDecoder, WordKey
from fairseq_struct.morph.zemberek.loading import import_zemberek, load_morphology
from fairseq_struct.pieces.markers import MORPHEME_BOUNDARY

logger = logging.getLogger(__name__)

# Offsets inside a token at which its second, third, ... morpheme starts; () keeps it whole.
MorphemeCuts = Tuple[int, ...]

# Characters Zemberek deletes before analysing a token (abbreviation dots, the apostrophe of
# "İstanbul'da"): they are skipped when the surfaces are matched against the original text.
_APOSTROPHES = frozenset("'′´`’‘")
_DROPPED_BY_ZEMBEREK = _APOSTROPHES | {"."}
# Chunks whose tokens Zemberek's ANTLR lexer (slow, per chunk) is known to give, so they skip
# it; tests/morph checks every such chunk of the shared corpora against the lexer.
# - Turkish letters, lower case after at most one capital: one Word token. Capitals alone are
#   left to the lexer ("I", "XIV" are RomanNumeral); with no digit, dot or symbol no other rule
#   (numbers, abbreviations, URLs, emoticons) can match.
_PLAIN_WORD = re.compile("[A-ZÇĞİÖŞÜÂÎÛ]?[a-zçğıöşüâîû]+")
# - such a word of two letters or more, an apostrophe and a lower-case suffix ("İstanbul'da"):
#   one WordWithSymbol token (the rule wants two characters before the apostrophe: "O'Neil" is
#   three tokens).
_APOSTROPHE_WORD = re.compile("(?=[^']{2})[A-ZÇĞİÖŞÜÂÎÛ]?[a-zçğıöşüâîû]+'[a-zçğıöşüâîû]+")
# - such a word and one punctuation mark ("geldi,"): a Word and a Punctuation token, unless
#   the word and a dot are an abbreviation ("vb."), which the lexer makes one token.
_WORD_AND_PUNCTUATION = re.compile("[A-ZÇĞİÖŞÜÂÎÛ]?[a-zçğıöşüâîû]+[.,;:!?]")

# Bump when a change here changes any segmentation: entries of persistent caches (made with
# the old rules) are then no longer used.
SEGMENTATION_RULES_VERSION = 1
# Zemberek's data that decides analyses: the lexicon and the disambiguator's weights.
_FINGERPRINTED_RESOURCES = ("lexicon.csv", "ambiguity/model-compressed")

# Caches are cleared when they reach this many entries, so a long corpus cannot exhaust memory.
_MAX_CACHE_ENTRIES = 4_000_000
# segment_lines with workers: lines per block. Each block's repeated new chunks are first
# analysed by the processes, each chunk by one of them, and sent to all; then the processes
# segment the block's lines.
_BLOCK_LINES = 50_000
# Lines whose new decoding steps are scored together (numpy work on larger arrays, fewer calls).
_BATCH_LINES = 500
# segment_lines with workers: at most this many chunks are analysed in one batch.
_BATCH_CHUNKS = 1000


@dataclass(frozen=True)
class _Token:
    """One Zemberek token of a chunk, with the candidates the disambiguator chooses from."""

    start: int  # character offsets in the original chunk
    end: int
    # The decoder's keys of the SingleAnalysis objects, in Zemberek's order, without repeated
    # analyses: Zemberek's decoder compares hypotheses by value, so of equal analyses only the
    # first can be chosen. Keys, unlike analyses, can be pickled between processes.
    candidates: Tuple[WordKey, ...]
    cuts: Tuple[MorphemeCuts, ...]  # the segmentation each candidate gives, offsets in the token

    @property
    def ambiguous(self) -> bool:
        return len(set(self.cuts)) > 1


@dataclass(frozen=True)
class _Chunk:
    """A whitespace-free piece of a line: its tokens, and its segmentation when that is fixed."""

    text: str
    tokens: Tuple[_Token, ...]
    segmented: Optional[str]  # None when a token's segmentation depends on the disambiguator

    @property
    def starts(self) -> List[int]:
        return [token.start for token in self.tokens]


@dataclass
class SegmentationStats:
    """Counters of one segmenter (or of all workers of `segment_lines`)."""

    lines: int = 0
    tokens: int = 0  # Zemberek tokens (words, numbers, punctuation)
    disambiguated_lines: int = 0  # lines for which the disambiguator had to run
    cached_lines: int = 0  # lines taken from a SegmentationCache of an earlier run

    def add(self, other: "SegmentationStats") -> None:
        self.lines += other.lines
        self.tokens += other.tokens
        self.disambiguated_lines += other.disambiguated_lines
        self.cached_lines += other.cached_lines


class TurkishSegmenter:
    """Splits the words of Turkish lines into morphemes joined by MORPHEME_BOUNDARY.

    Build one per process and reuse it (`shared_segmenter()` does that): building Zemberek takes
    seconds (see zemberek.loading). `segment`
    is the fast path, `segment_reference` the per-sentence `analyze_and_disambiguate` it must
    agree with.
    """

    def __init__(self, morphology: Any = None) -> None:
        import_zemberek()
        from zemberek.core.text import TextUtil
        from zemberek.core.turkish import TurkishAlphabet
        from zemberek.tokenization.antlr.turkish_lexer import TurkishLexer
        from zemberek.tokenization.token import Token

        from fairseq_struct.morph.zemberek.fast_analysis import fast_morphology

        self.morphology = load_morphology() if morphology is None else morphology
        # Word analysis of the fast path; self.morphology itself stays stock (the reference).
        self._fast_morphology = fast_morphology(self.morphology)
        self.stats = SegmentationStats()
        self._alphabet = TurkishAlphabet.INSTANCE
        self._normalize_quotes = TextUtil.normalize_quotes_hyphens
        self._normalize_apostrophes = TextUtil.normalize_apostrophes
        self._token_class = Token
        self._word_type = Token.Type.Word
        self._word_with_symbol_type = Token.Type.WordWithSymbol
        self._punctuation_type = Token.Type.Punctuation
        self._abbreviations = TurkishLexer.abbreviations
        self._decoder = FastDecoder(self.morphology.ambiguity_resolver)
        self._chunks: Dict[str, _Chunk] = {}
        self._candidates: Dict[Tuple[str, Any], Tuple[Any, ...]] = {}
        self._spellings_of: Dict[str, FrozenSet[str]] = {}

    # -- the fast path ------------------------------------------------------------------------

    def segment(self, line: str) -> str:
        """`line` with MORPHEME_BOUNDARY between the morphemes of each analysed word."""
        return self.segment_many([line])[0]

    def segment_many(self, lines: Sequence[str]) -> List[str]:
        """`segment` of each line; faster than line by line (the decoder works on all at once)."""
        results = self._segment_many(lines)
        for _, tokens, disambiguated in results:
            self.stats.add(SegmentationStats(1, tokens, int(disambiguated)))
        return [segmented for segmented, _, _ in results]

    def _segment(self, line: str) -> SegmentationResult:
        """The segmented line, its number of tokens, and whether the disambiguator ran."""
        return self._segment_many([line])[0]

    @collector_paused()
    def _segment_many(self, lines: Sequence[str]) -> List[SegmentationResult]:
        """`_segment` of each line; the disambiguator scores the new steps of all lines at once."""
        results: List[Optional[SegmentationResult]] = []
        ambiguous = []  # (index in results, chunks, tokens) of lines to disambiguate
        for line in lines:
            _refuse_unsegmentable_line(line)
            chunks = [self._chunk(text) for text in line.split(" ")]
            tokens = sum(len(chunk.tokens) for chunk in chunks)
            if all(chunk.segmented is not None for chunk in chunks):
                results.append((" ".join(chunk.segmented for chunk in chunks), tokens, False))
            else:
                ambiguous.append((len(results), chunks, tokens))
                results.append(None)
        sentences = []
        for _, chunks, _ in ambiguous:
            sentence = [token for chunk in chunks for token in chunk.tokens]
            decide = max(index for index, token in enumerate(sentence) if token.ambiguous)
            sentences.append(([token.candidates for token in sentence], decide))
        for (index, chunks, tokens), path in zip(ambiguous, self._decoder.best_paths(sentences)):
            best = iter(path)
            segmented = []
            for chunk in chunks:
                cuts = [token.cuts[next(best)] for token in chunk.tokens]
                segmented.append(_insert_boundaries(chunk.text, chunk.starts, cuts))
            results[index] = (" ".join(segmented), tokens, True)
        return results

    def _chunk(self, text: str) -> _Chunk:
        chunk = self._chunks.get(text)
        if chunk is None:
            self._make_room_for_chunks(1)
            chunk = self._chunks[text] = self._analyse_chunk(text)
        return chunk

    def _remember(self, chunks: Sequence[_Chunk]) -> None:
        """Add analysed `chunks` to the cache."""
        self._make_room_for_chunks(len(chunks))
        self._chunks.update((chunk.text, chunk) for chunk in chunks)

    def _make_room_for_chunks(self, count: int) -> None:
        """Empty the chunk cache if `count` more would take it over its bound."""
        if len(self._chunks) + count > _MAX_CACHE_ENTRIES:
            self._chunks.clear()

    def _analyse_chunk(self, text: str) -> _Chunk:
        tokens = []
        for content, type_, start, end in self._chunk_tokens(text):
            analyses = self._candidates_of(content, type_)
            surfaces = [_surfaces(analysis) for analysis in analyses]
            by_surfaces: Dict[Tuple[str, ...], MorphemeCuts] = {}  # candidates often share them
            for spelled in surfaces:
                if spelled not in by_surfaces:
                    by_surfaces[spelled] = self._cuts_of(text[start:end], spelled)
            cuts = tuple(by_surfaces[spelled] for spelled in surfaces)
            keys = tuple(map(self._decoder.word_key, analyses))
            tokens.append(_Token(start, end, keys, cuts))
        if any(token.ambiguous for token in tokens):
            return _Chunk(text, tuple(tokens), None)
        starts = [token.start for token in tokens]
        segmented = _insert_boundaries(text, starts, [token.cuts[0] for token in tokens])
        return _Chunk(text, tuple(tokens), segmented)

    def _chunk_tokens(self, text: str) -> Iterator[Tuple[str, Any, int, int]]:
        """`_tokenize(text)`, without running the lexer where its tokens are known (`_PLAIN_WORD`,
        `_APOSTROPHE_WORD`, `_WORD_AND_PUNCTUATION`)."""
        if _PLAIN_WORD.fullmatch(text):
            return iter(((text, self._word_type, 0, len(text)),))
        if _APOSTROPHE_WORD.fullmatch(text):
            return iter(((text, self._word_with_symbol_type, 0, len(text)),))
        if _WORD_AND_PUNCTUATION.fullmatch(text) and text not in self._abbreviations:
            end = len(text) - 1
            return iter(
                (
                    (text[:end], self._word_type, 0, end),
                    (text[end], self._punctuation_type, end, len(text)),
                )
            )
        return self._tokenize(text)

    def _tokenize(self, text: str) -> Iterator[Tuple[str, Any, int, int]]:
        """Zemberek's tokens of `text` as (content, type, start, end) in the original `text`."""
        normalized = self._normalize_quotes(text)
        starts = _original_offsets(text, normalized)
        for token in self.morphology.tokenizer.tokenize(normalized):
            yield token.content, token.type_, starts[token.start], starts[token.end + 1]

    def _candidates_of(self, content: str, type_: Any) -> Tuple[Any, ...]:
        """The distinct analyses the disambiguator chooses from, in Zemberek's order."""
        key = (content, type_)
        candidates = self._candidates.get(key)
        if candidates is None:
            token = self._token_class(content, type_, 0, len(content) - 1)
            analyses = self._fast_morphology.analyze_without_cache(token=token).analysis_results
            if not analyses:
                analyses = (self._unknown(content),)
            if len(self._candidates) >= _MAX_CACHE_ENTRIES:
                self._candidates.clear()
            candidates = self._candidates[key] = tuple(dict.fromkeys(analyses))
        return candidates

    def _unknown(self, content: str) -> Any:
        from zemberek.morphology.analysis.single_analysis import SingleAnalysis

        return SingleAnalysis.unknown(content)

    # -- the reference ------------------------------------------------------------------------

    def segment_reference(self, line: str) -> str:
        """The same segmentation from Zemberek's own per-sentence `analyze_and_disambiguate`."""
        _refuse_unsegmentable_line(line)
        tokens = list(self._tokenize(line))
        if not tokens:  # Zemberek's decoder refuses an empty sentence
            return line
        best = self.morphology.analyze_and_disambiguate(line).best_analysis()
        assert len(best) == len(tokens), "Zemberek tokenized the line differently"
        cuts = [self._cuts(line[start:end], a) for (_, _, start, end), a in zip(tokens, best)]
        return _insert_boundaries(line, [start for _, _, start, _ in tokens], cuts)

    # -- matching morpheme surfaces to the original characters --------------------------------

    def _cuts(self, text: str, analysis: Any) -> MorphemeCuts:
        """Where the morphemes of `analysis` start in the original `text`; () if they differ."""
        return self._cuts_of(text, _surfaces(analysis))

    def _cuts_of(self, text: str, surfaces: Tuple[str, ...]) -> MorphemeCuts:
        """Where the morphemes spelled `surfaces` start in the original `text`."""
        if len(surfaces) < 2:
            return ()
        cuts = []
        position = 0  # next character of `text` to match
        matched_end = 0  # end of the characters matched so far
        for index, surface in enumerate(surfaces):
            for offset, char in enumerate(surface):
                while position < len(text) and char not in self._spellings(text[position]):
                    if text[position] not in _DROPPED_BY_ZEMBEREK:
                        return ()
                    position += 1
                if position == len(text):
                    return ()
                if offset == 0 and index > 0:
                    cut = position
                    while cut > matched_end and text[cut - 1] in _APOSTROPHES:
                        cut -= 1  # "İstanbul" + "'da": the apostrophe opens the suffix
                    cuts.append(cut)
                position += 1
                matched_end = position
        if any(char not in _DROPPED_BY_ZEMBEREK for char in text[position:]):
            return ()
        return tuple(cuts)

    def _spellings(self, char: str) -> FrozenSet[str]:
        """How a surface may write the original `char`: as is, lower-cased, or fully normalised.

        Surfaces are mostly normalised ("istanbul" for "İstanbul", "kağıt" for "kâğıt") but
        some keep a circumflex ("emevîler" for "Emevîler'in"), and numbers keep their digits.
        """
        spellings = self._spellings_of.get(char)
        if spellings is None:
            lower = char.translate(self._alphabet.lower_map).lower()
            normalised = self._normalize_apostrophes(self._alphabet.normalize_circumflex(lower))
            spellings = self._spellings_of[char] = frozenset((char, lower, normalised))
        return spellings


def _surfaces(analysis: Any) -> Tuple[str, ...]:
    """The surfaces of an analysis's morphemes that have one."""
    return tuple(data.surface for data in analysis.morpheme_data_list if data.surface)


def _line_problem(line: str) -> Optional[str]:
    """Why `segment` refuses `line`, or None."""
    if MORPHEME_BOUNDARY in line:
        return (
            f"input already contains the morpheme boundary mark {MORPHEME_BOUNDARY!r} (U+FFED): "
            f"{line[:80]!r}"
        )
    if "\n" in line:
        return f"segment() takes one line, got a newline in {line[:80]!r}"
    return None


def _refuse_unsegmentable_line(line: str) -> None:
    problem = _line_problem(line)
    if problem is not None:
        raise ValueError(problem)


def _original_offsets(original: str, normalized: str) -> List[int]:
    """For each character of `normalized` (and its end), its offset in `original`.

    Zemberek's `normalize_quotes_hyphens` replaces characters one for one, except that it turns
    the pair '' into a single double quote.
    """
    if len(original) == len(normalized):
        return list(range(len(original) + 1))
    offsets, position = [], 0
    for char in normalized:
        offsets.append(position)
        position += 2 if char == '"' and original.startswith("''", position) else 1
    offsets.append(position)
    return offsets


def _insert_boundaries(text: str, starts: Sequence[int], cuts: Sequence[MorphemeCuts]) -> str:
    """`text` with MORPHEME_BOUNDARY at the cuts of the tokens that start at `starts`."""
    positions = [start + cut for start, token_cuts in zip(starts, cuts) for cut in token_cuts]
    if not positions:
        return text
    pieces, previous = [], 0
    for position in positions:
        pieces.append(text[previous:position])
        previous = position
    pieces.append(text[previous:])
    return MORPHEME_BOUNDARY.join(pieces)


_SHARED: Optional[TurkishSegmenter] = None


def shared_segmenter() -> TurkishSegmenter:
    """The segmenter of this process, built on first use."""
    global _SHARED
    if _SHARED is None:
        _SHARED = TurkishSegmenter()
    return _SHARED


def _segment_in_worker(lines: List[str]) -> List[SegmentationResult]:
    return shared_segmenter()._segment_many(lines)


@collector_paused()
def _analyse_in_worker(texts: List[str]) -> List[_Chunk]:
    """Analyse the chunks `texts` and keep them in this process's cache."""
    segmenter = shared_segmenter()
    chunks = [segmenter._analyse_chunk(text) for text in texts]
    segmenter._remember(chunks)
    return chunks


@collector_paused()
def _remember_in_worker(chunks: List[_Chunk]) -> None:
    shared_segmenter()._remember(chunks)


def _analyse_new_chunks(
    segmenter: TurkishSegmenter, lines: Sequence[str], helpers: ForkedHelpers
) -> None:
    """Analyse the repeated chunks of `lines` that `segmenter` has not seen, spread over this
    process and `helpers`, and give every process all of them.

    Processes would otherwise each analyse every word type of their lines, the frequent ones
    in all of them; here each new chunk that occurs more than once is analysed once, by one
    process, and sent to the others as a (picklable) `_Chunk`. A chunk that occurs once (two
    thirds of the types of tr-raw) is analysed where its line is segmented: no other process
    needs it, and it is not pickled.
    """
    counts = Counter(
        text for line in lines if _line_problem(line) is None for text in line.split(" ")
    )
    segmenter._make_room_for_chunks(len(counts))  # for all of them: none is dropped mid-block
    # Sorted, so that the words of one stem fall in one batch, analysed by one process whose
    # tables for that stem are then warm (benchmarks/README.md has what this saves).
    new = sorted(
        text for text, count in counts.items() if count > 1 and text not in segmenter._chunks
    )
    if not new:
        return
    started = time.monotonic()
    batches = shrinking_batches(new, helpers.processes, _BATCH_CHUNKS, _BATCH_CHUNKS // 20)
    # each process keeps what it analysed (`_analyse_in_worker`); this one adds the helpers'
    analysed = list(helpers.map(_analyse_in_worker, batches))
    segmenter._remember([chunk for by, chunks in analysed if by != 0 for chunk in chunks])
    for helper in range(1, helpers.processes):
        others = [chunk for by, chunks in analysed if by != helper for chunk in chunks]
        helpers.call(helper, _remember_in_worker, others)
    logger.info(
        "analysed %d new repeated chunks of %d lines in %.0f s",
        len(new),
        len(lines),
        time.monotonic() - started,
    )


class LineSegmentation(ExitStack):
    """`segment_lines` over many calls: the shared segmenter is built, and helpers forked, once.

    A streamed preparation segments a corpus chunk by chunk; forking new helpers for each chunk
    would lose their warm caches and pay the copy-on-write faults again. Use it as a context
    manager (an ExitStack): helpers are forked at the first `segment` that has a line to
    segment; leaving stops them, then commits the cache.
    """

    def __init__(
        self,
        workers: int = 1,
        log_every_s: float = 30.0,
        cache: Optional[SegmentationCache] = None,
    ) -> None:
        super().__init__()
        self.workers, self.log_every_s, self.cache = workers, log_every_s, cache
        self.segmenter = shared_segmenter()  # before the helpers fork, so that they inherit it
        if workers > 1 and "fork" not in multiprocessing.get_all_start_methods():
            logger.warning("processes cannot be forked here: segmenting in this process only")
            self.workers = 1
        self._helpers: Optional[ForkedHelpers] = None
        if cache is not None:
            self.callback(cache.commit)  # first in, so last out: after the helpers have stopped

    def segment(self, lines: Sequence[str], stats: Optional[SegmentationStats] = None) -> List[str]:
        """Segment `lines` in order, adding to `stats` if given (see `segment_lines`)."""
        stats = SegmentationStats() if stats is None else stats
        progress = _Progress(len(lines), stats, self.log_every_s)
        results: List[Optional[SegmentationResult]] = [None] * len(lines)
        todo = []
        for index, line in enumerate(lines):
            results[index] = None if self.cache is None else self.cache.get(line)
            if results[index] is None:
                todo.append(index)
            else:
                progress.add(results[index], cached=True)
        try:
            if self.workers > 1 and todo:  # no helpers to fork while every line is cached
                if self._helpers is None:
                    self._helpers = self.enter_context(ForkedHelpers(self.workers))
                for start in range(0, len(todo), _BLOCK_LINES):
                    block = todo[start : start + _BLOCK_LINES]
                    block_lines = [lines[index] for index in block]
                    _analyse_new_chunks(self.segmenter, block_lines, self._helpers)
                    batches = shrinking_batches(
                        block_lines, self.workers, _BATCH_LINES, _BATCH_LINES // 20
                    )
                    segmented = (
                        result
                        for _, batch_results in self._helpers.map(_segment_in_worker, batches)
                        for result in batch_results
                    )
                    _collect(lines, block, segmented, results, progress, self.cache)
            else:
                batches = ([lines[i] for i in indexes] for indexes in _batches(todo, _BATCH_LINES))
                segmented = chain.from_iterable(map(self.segmenter._segment_many, batches))
                _collect(lines, todo, segmented, results, progress, self.cache)
        finally:
            if self.cache is not None:
                self.cache.commit()
        return [text for text, _, _ in results]


def segment_lines(
    lines: Sequence[str],
    workers: int = 1,
    stats: Optional[SegmentationStats] = None,
    log_every_s: float = 30.0,
    cache: Optional[SegmentationCache] = None,
) -> List[str]:
    """Segment `lines` in order, over `workers` processes, adding to `stats` if given.

    Lines found in `cache` are not segmented again; the others are added to it as they come.
    The shared segmenter is built first, so that helpers, forked once for the run, inherit it
    instead of building Zemberek again. With workers, each block of lines has its repeated new
    chunks analysed across the processes first (`_analyse_new_chunks`), then is segmented by
    this process and the helpers, all of them with those chunks analysed. Helpers must be
    forked: some of Zemberek's analyses depend on the process's string hash seed (e.g. "tıbbı"
    has none under some seeds), and forked helpers share this process's.
    """
    with LineSegmentation(workers, log_every_s, cache) as segmentation:
        return segmentation.segment(lines, stats)


def _batches(items: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    """`items` in consecutive slices of `size`."""
    return (items[at : at + size] for at in range(0, len(items), size))


def _collect(
    lines: Sequence[str],
    indexes: Sequence[int],
    segmented: Iterator[SegmentationResult],
    results: List[Optional[SegmentationResult]],
    progress: "_Progress",
    cache: Optional[SegmentationCache],
) -> None:
    """Store the results of the lines at `indexes`, count them, and add them to `cache`."""
    for index, result in zip(indexes, segmented, strict=True):
        results[index] = result
        progress.add(result, cached=False)
        if cache is not None:
            cache.put(lines[index], result)


def cache_fingerprint() -> str:
    """What a cached segmentation depends on: Zemberek's version, lexicon and model, our rules,
    and the process's string hash seed, on which some of Zemberek's analyses depend (the
    prepare scripts fix PYTHONHASHSEED so that runs agree and reuse each other's caches)."""
    zemberek = import_zemberek()
    name = f"zemberek-{zemberek.__version__}-rules-{SEGMENTATION_RULES_VERSION}"
    digest = hashlib.sha256(name.encode())
    # hash() of a fixed string is a function of the hash seed alone.
    digest.update(str(hash("fairseq_struct segmentation cache")).encode())
    resources = Path(zemberek.__file__).parent / "resources"
    for resource in _FINGERPRINTED_RESOURCES:
        digest.update((resources / resource).read_bytes())
    return f"{name}-{digest.hexdigest()[:16]}"


class _Progress:
    """Counts finished lines into `stats` and logs lines done, tokens/s and ETA now and then."""

    def __init__(self, total: int, stats: SegmentationStats, log_every_s: float) -> None:
        self.total, self.stats, self.log_every_s = total, stats, log_every_s
        self.done = self.cached = self.segmented_tokens = 0
        self.started = self.last_log = time.monotonic()

    def add(self, result: SegmentationResult, cached: bool) -> None:
        _, tokens, disambiguated = result
        self.stats.add(SegmentationStats(1, tokens, int(disambiguated), int(cached)))
        self.done += 1
        self.cached += cached
        self.segmented_tokens += 0 if cached else tokens
        now = time.monotonic()
        if now - self.last_log >= self.log_every_s:
            self.last_log = now
            seconds = now - self.started
            segmented = self.done - self.cached
            # ETA from the lines segmented so far; cached lines take no time
            eta = seconds / segmented * (self.total - self.done) if segmented else 0.0
            logger.info(
                "segmented %d/%d lines (%d from the cache), %.0f tokens/s, ETA %s",
                self.done,
                self.total,
                self.cached,
                self.segmented_tokens / max(seconds, 1e-9),
                time.strftime("%H:%M:%S", time.gmtime(eta)),
            )
