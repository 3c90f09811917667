"""Turkish morphological segmentation with Zemberek (SPEC section 3).

`TurkishSegmenter.segment` inserts MORPHEME_BOUNDARY between the morphemes of every word that
Zemberek analyses, choosing each word's analysis with Zemberek's sentence-level perceptron
disambiguator, exactly as `analyze_and_disambiguate(line).best_analysis()` does:

    "Göremediklerimizden İstanbul'da."  ->  "Gör￭eme￭dik￭ler￭imiz￭den İstanbul￭'da."

A word's morphemes are the non-empty surfaces of its `morpheme_data_list`. Zemberek analyses a
lower-cased, normalised copy of each token (Turkish I/İ, circumflexes, apostrophes; dots and
apostrophes removed), so the segmenter cuts the *original* characters where the surfaces say,
and keeps a token whole when the surfaces do not spell it. An apostrophe before a suffix goes
with the suffix. Nothing but boundary marks is ever added: removing them gives the input back.

Speed (Zemberek's per-sentence path runs at about 100 tokens/s here), with identical output:
- whitespace-separated chunks are tokenized and analysed once per distinct chunk (Zemberek's
  ANTLR lexer never lets a token span a space, so a line's tokens are its chunks' tokens);
- when no token of a line has candidate analyses that differ in their segmentation, the
  disambiguator cannot change the result and is not run;
- otherwise a re-implementation of Zemberek's Viterbi decoder runs with the trigram scores and
  feature weights memoised; it does the same float32 arithmetic in the same order.
"""

import logging
import multiprocessing
import struct
import time
import warnings
from dataclasses import dataclass
from typing import Any, Dict, FrozenSet, Iterable, Iterator, List, Optional, Sequence, Tuple

import numpy as np

from fairseq_struct.morph.markers import MORPHEME_BOUNDARY

logger = logging.getLogger(__name__)

# Offsets inside a token at which its second, third, ... morpheme starts; () keeps it whole.
MorphemeCuts = Tuple[int, ...]

# Characters Zemberek deletes before analysing a token (abbreviation dots, the apostrophe of
# "İstanbul'da"): they are skipped when the surfaces are matched against the original text.
_APOSTROPHES = frozenset("'′´`’‘")
_DROPPED_BY_ZEMBEREK = _APOSTROPHES | {"."}

# Caches are cleared when they reach this many entries, so a long corpus cannot exhaust memory.
_MAX_CACHE_ENTRIES = 500_000


def import_zemberek() -> Any:
    """Import zemberek-python, with a clear error when it is missing, keeping logging as it was."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        with warnings.catch_warnings():
            # zemberek imports pkg_resources, which warns about its own deprecation.
            warnings.filterwarnings("ignore", message="pkg_resources is deprecated")
            import zemberek
    except ImportError as error:
        raise ImportError(
            "Turkish segmentation (--mode morph) needs zemberek-python: install it without its "
            "pins, `pip install --no-deps zemberek-python==0.2.3 antlr4-python3-runtime==4.9.3` "
            f"(SPEC section 1). Import failed with: {error}"
        ) from error
    finally:
        # Importing zemberek adds a stdout handler to the root logger and sets it to INFO, which
        # would mix log lines into every later print and log of the calling program.
        for handler in root.handlers[:]:
            if handler not in handlers:
                root.removeHandler(handler)
        root.setLevel(level)
        # Zemberek logs a DEBUG line for every unknown proper noun it guesses a root for.
        logging.getLogger("zemberek").setLevel(logging.WARNING)
    return zemberek


def load_morphology() -> Any:
    """Build Zemberek's `TurkishMorphology` (about 10 s); it cannot be pickled: one per process."""
    return import_zemberek().TurkishMorphology.create_with_defaults()


@dataclass(frozen=True)
class _Token:
    """One Zemberek token of a chunk, with the candidates the disambiguator chooses from."""

    start: int  # character offsets in the original chunk
    end: int
    candidates: Tuple[Any, ...]  # SingleAnalysis objects, in Zemberek's order
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

    def add(self, other: "SegmentationStats") -> None:
        self.lines += other.lines
        self.tokens += other.tokens
        self.disambiguated_lines += other.disambiguated_lines


class _PerceptronWeights:
    """Exact pure-Python port of the disambiguator's weight look-up (`CompressedWeights.get_`).

    Zemberek computes its minimal perfect hash with numpy scalars, one call per character,
    about 90 µs a feature; this does the same int32 arithmetic with Python ints.
    """

    _FNV_OFFSET = 0x811C9DC5  # MultiLevelMphf.INITIAL_HASH_SEED as an unsigned 32-bit int
    _FNV_PRIME = 16777619

    def __init__(self, model: Any) -> None:
        lookup = model.lookup  # CompressedWeights -> LossyIntLookup
        self._data = lookup.data
        self._levels = [
            (level.key_amount, level.bucket_amount, level.bucket_hash_seed_values)
            for level in lookup.mphf.hash_level_data
        ]
        self._failed_indexes = [level.failed_indexes for level in lookup.mphf.hash_level_data]
        self._cache: Dict[str, np.float32] = {}

    def _hash(self, key: str, seed: int) -> int:  # MultiLevelMphf.hash_for_str
        value = seed if seed > 0 else self._FNV_OFFSET
        for char in key:
            value = ((value ^ ord(char)) * self._FNV_PRIME) & 0xFFFFFFFF
        return value & 0x7FFFFFFF

    def _index(self, key: str) -> int:  # MultiLevelMphf.get_for_str
        initial = self._hash(key, -1)
        for level, (key_amount, bucket_amount, seeds) in enumerate(self._levels):
            seed = seeds[initial % bucket_amount] & 0xFF
            if seed != 0:
                if level == 0:
                    return self._hash(key, seed) % key_amount
                return int(self._failed_indexes[level - 1][self._hash(key, seed) % key_amount])
        raise AssertionError(f"Zemberek's perfect hash has no level for {key!r}")

    def __call__(self, feature: str) -> np.float32:
        weight = self._cache.get(feature)
        if weight is None:
            fingerprint = 0  # LossyIntLookup.get_fingerprint: Java's String.hashCode, 27 bits
            for char in feature:
                fingerprint = (31 * fingerprint + ord(char)) & 0xFFFFFFFF
            index = self._index(feature) * 2
            bits = int(self._data[index + 1]) if fingerprint & 0x7FFFFFF == self._data[index] else 0
            weight = np.float32(struct.unpack(">f", struct.pack(">i", bits))[0])
            if len(self._cache) >= _MAX_CACHE_ENTRIES:
                self._cache.clear()
            self._cache[feature] = weight
        return weight


class _FastDecoder:
    """Zemberek's `PerceptronAmbiguityResolver.Decoder.best_path` with memoised scores.

    Same hypotheses, same float32 sums in the same order, same tie-breaking (the first best
    hypothesis in insertion order wins); a dict replaces the linear search for a duplicate
    (previous, current) hypothesis, which keeps the position of the replaced one just as the
    original list assignment does.
    """

    def __init__(self, resolver: Any) -> None:
        self.weight = _PerceptronWeights(resolver.decoder.model)
        self._word_data = type(resolver).WordData.from_analysis
        self._begin = type(resolver).sentence_begin
        self._end = type(resolver).sentence_end
        self._words: Dict[Any, Tuple[str, Tuple[str, ...], str, str, str]] = {}
        self._trigram_scores: Dict[Tuple[Any, Any, Any], np.float32] = {}

    def _word(self, analysis: Any) -> Tuple[str, Tuple[str, ...], str, str, str]:
        """(lemma, inflectional groups, "lemma+igs", last group, "22:" feature) of an analysis."""
        word = self._words.get(analysis)
        if word is None:
            data = self._word_data(analysis)
            groups = "+".join(data.igs)
            if len(self._words) >= _MAX_CACHE_ENTRIES:
                self._words.clear()
            word = self._words[analysis] = (
                data.lemma,
                tuple(data.igs),
                f"{data.lemma}+{groups}",
                data.last_group(),
                f"22:{analysis.group_boundaries.shape[0]}",
            )
        return word

    def _features(self, first: Any, second: Any, third: Any) -> Dict[str, int]:
        """`FeatureExtractor.extract_from_trigram`: the same keys, counts and insertion order."""
        r1, _, _, last1, _ = self._word(first)
        r2, _, r2_ig2, last2, _ = self._word(second)
        r3, igs3, r3_ig3, _, groups3 = self._word(third)
        ig2 = r2_ig2[len(r2) + 1 :]
        features: Dict[str, int] = {}
        for key in (
            "2:" + r1 + ig2 + r3_ig3,
            "3:" + r2_ig2 + "-" + r3_ig3,
            "4:" + r3_ig3,
            "9:" + r2 + "-" + r3,
            "10:" + r3,
            "10b:" + r2,
            "10c:" + r1,
        ):
            features[key] = features.get(key, 0) + 1
        for ig in igs3:
            for key in ("15:" + last1 + "-" + last2 + "-" + ig, "17:" + last2 + ig):
                features[key] = features.get(key, 0) + 1
        for k, ig in enumerate(igs3):
            key = "20:" + str(k) + "-" + ig
            features[key] = features.get(key, 0) + 1
        features[groups3] = features.get(groups3, 0) + 1
        return features

    def _trigram_score(self, first: Any, second: Any, third: Any) -> np.float32:
        key = (first, second, third)
        score = self._trigram_scores.get(key)
        if score is None:
            score = np.float32(0)
            for feature, count in self._features(first, second, third).items():
                weight = self.weight(feature)
                # weight * 1 is exact, so the float32 product only matters for repeated features
                score += weight if count == 1 else np.float32(weight * np.float32(count))
            if len(self._trigram_scores) >= _MAX_CACHE_ENTRIES:
                self._trigram_scores.clear()
            self._trigram_scores[key] = score
        return score

    def best_path(self, sentence: Sequence[Sequence[Any]]) -> List[Any]:
        """The best analysis of every token, given each token's candidate analyses."""
        # A hypothesis is [previous analysis, current analysis, back pointer, score].
        current: Dict[Tuple[Any, Any], list] = {
            (self._begin, self._begin): [self._begin, self._begin, None, np.float32(0)]
        }
        for candidates in sentence:
            following: Dict[Tuple[Any, Any], list] = {}
            for analysis in candidates:
                for hypothesis in current.values():
                    prev, cur, _, score = hypothesis
                    score = np.float32(score + self._trigram_score(prev, cur, analysis))
                    key = (cur, analysis)
                    found = following.get(key)
                    if found is None or score > found[3]:
                        following[key] = [cur, analysis, hypothesis, score]
            current = following
        for hypothesis in current.values():
            hypothesis[3] += self._trigram_score(hypothesis[0], hypothesis[1], self._end)
        best = max(current.values(), key=lambda hypothesis: hypothesis[3])
        path = []
        while best[2] is not None:
            path.append(best[1])
            best = best[2]
        return path[::-1]


class TurkishSegmenter:
    """Splits the words of Turkish lines into morphemes joined by MORPHEME_BOUNDARY.

    Build one per process and reuse it (`shared_segmenter()` does that); building Zemberek takes
    about 10 s. `segment` is the fast path, `segment_reference` the per-sentence
    `analyze_and_disambiguate` it must agree with.
    """

    def __init__(self, morphology: Any = None) -> None:
        import_zemberek()
        from zemberek.core.text import TextUtil
        from zemberek.core.turkish import TurkishAlphabet
        from zemberek.tokenization.token import Token

        self.morphology = load_morphology() if morphology is None else morphology
        self.stats = SegmentationStats()
        self._alphabet = TurkishAlphabet.INSTANCE
        self._normalize_quotes = TextUtil.normalize_quotes_hyphens
        self._normalize_apostrophes = TextUtil.normalize_apostrophes
        self._token_class = Token
        self._decoder = _FastDecoder(self.morphology.ambiguity_resolver)
        self._chunks: Dict[str, _Chunk] = {}
        self._candidates: Dict[Tuple[str, Any], Tuple[Any, ...]] = {}
        self._spellings_of: Dict[str, FrozenSet[str]] = {}

    # -- the fast path ------------------------------------------------------------------------

    def segment(self, line: str) -> str:
        """`line` with MORPHEME_BOUNDARY between the morphemes of each analysed word."""
        segmented, tokens, disambiguated = self._segment(line)
        self.stats.add(SegmentationStats(1, tokens, int(disambiguated)))
        return segmented

    def _segment(self, line: str) -> Tuple[str, int, bool]:
        """The segmented line, its number of tokens, and whether the disambiguator ran."""
        _check_line(line)
        chunks = [self._chunk(text) for text in line.split(" ")]
        tokens = sum(len(chunk.tokens) for chunk in chunks)
        if all(chunk.segmented is not None for chunk in chunks):
            return " ".join(chunk.segmented for chunk in chunks), tokens, False
        best = iter(self._decoder.best_path([t.candidates for c in chunks for t in c.tokens]))
        segmented = []
        for chunk in chunks:
            cuts = [token.cuts[_index_of(token.candidates, next(best))] for token in chunk.tokens]
            segmented.append(_insert_boundaries(chunk.text, chunk.starts, cuts))
        return " ".join(segmented), tokens, True

    def _chunk(self, text: str) -> _Chunk:
        chunk = self._chunks.get(text)
        if chunk is None:
            if len(self._chunks) >= _MAX_CACHE_ENTRIES:
                self._chunks.clear()
            chunk = self._chunks[text] = self._analyse_chunk(text)
        return chunk

    def _analyse_chunk(self, text: str) -> _Chunk:
        tokens = []
        for content, type_, start, end in self._tokenize(text):
            candidates = self._candidates_of(content, type_)
            cuts = tuple(self._cuts(text[start:end], analysis) for analysis in candidates)
            tokens.append(_Token(start, end, candidates, cuts))
        if any(token.ambiguous for token in tokens):
            return _Chunk(text, tuple(tokens), None)
        starts = [token.start for token in tokens]
        segmented = _insert_boundaries(text, starts, [token.cuts[0] for token in tokens])
        return _Chunk(text, tuple(tokens), segmented)

    def _tokenize(self, text: str) -> Iterator[Tuple[str, Any, int, int]]:
        """Zemberek's tokens of `text` as (content, type, start, end) in the original `text`."""
        normalized = self._normalize_quotes(text)
        starts = _original_offsets(text, normalized)
        for token in self.morphology.tokenizer.tokenize(normalized):
            yield token.content, token.type_, starts[token.start], starts[token.end + 1]

    def _candidates_of(self, content: str, type_: Any) -> Tuple[Any, ...]:
        """The analyses the disambiguator chooses from (as `PerceptronAmbiguityResolver` does)."""
        key = (content, type_)
        candidates = self._candidates.get(key)
        if candidates is None:
            token = self._token_class(content, type_, 0, len(content) - 1)
            analyses = self.morphology.analyze_without_cache(token=token).analysis_results
            if not analyses:
                analyses = (self._unknown(content),)
            if len(self._candidates) >= _MAX_CACHE_ENTRIES:
                self._candidates.clear()
            candidates = self._candidates[key] = tuple(analyses)
        return candidates

    def _unknown(self, content: str) -> Any:
        from zemberek.morphology.analysis.single_analysis import SingleAnalysis

        return SingleAnalysis.unknown(content)

    # -- the reference ------------------------------------------------------------------------

    def segment_reference(self, line: str) -> str:
        """The same segmentation from Zemberek's own per-sentence `analyze_and_disambiguate`."""
        _check_line(line)
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
        surfaces = [m.surface for m in analysis.morpheme_data_list if m.surface]
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

        Surfaces are mostly normalised ("istanbul" for "İstanbul", "kağıt" for "kâğıt") but some
        keep a circumflex ("emevîler" for "Emevîler'in"), and numbers keep their digits as is.
        """
        spellings = self._spellings_of.get(char)
        if spellings is None:
            lower = char.translate(self._alphabet.lower_map).lower()
            normalised = self._normalize_apostrophes(self._alphabet.normalize_circumflex(lower))
            spellings = self._spellings_of[char] = frozenset((char, lower, normalised))
        return spellings


def _check_line(line: str) -> None:
    if MORPHEME_BOUNDARY in line:
        raise ValueError(
            f"input already contains the morpheme boundary mark {MORPHEME_BOUNDARY!r} (U+FFED): "
            f"{line[:80]!r}"
        )
    if "\n" in line:
        raise ValueError(f"segment() takes one line, got a newline in {line[:80]!r}")


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


def _index_of(candidates: Tuple[Any, ...], analysis: Any) -> int:
    for index, candidate in enumerate(candidates):
        if candidate is analysis:
            return index
    raise AssertionError("the decoder returned an analysis that is not a candidate")


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


def _segment_in_worker(line: str) -> Tuple[str, int, bool]:
    return shared_segmenter()._segment(line)


def segment_lines(
    lines: Sequence[str],
    workers: int = 1,
    stats: Optional[SegmentationStats] = None,
    log_every_s: float = 30.0,
) -> List[str]:
    """Segment `lines` in order, over `workers` processes, adding to `stats` if given.

    The shared segmenter is built first, so that forked workers inherit it instead of building
    Zemberek again; where processes are spawned, each worker builds its own.
    """
    stats = SegmentationStats() if stats is None else stats
    segmenter = shared_segmenter()
    if workers <= 1:
        return _collect(map(segmenter._segment, lines), len(lines), stats, log_every_s)
    with multiprocessing.Pool(workers) as pool:
        results = pool.imap(_segment_in_worker, lines, chunksize=256)
        return _collect(results, len(lines), stats, log_every_s)


def _collect(
    results: Iterable[Tuple[str, int, bool]],
    total: int,
    stats: SegmentationStats,
    log_every_s: float,
) -> List[str]:
    segmented: List[str] = []
    started = last_log = time.monotonic()
    for text, tokens, disambiguated in results:
        segmented.append(text)
        stats.add(SegmentationStats(1, tokens, int(disambiguated)))
        if time.monotonic() - last_log >= log_every_s:
            last_log = time.monotonic()
            rate = stats.tokens / (last_log - started)
            logger.info("segmented %d/%d lines, %.0f tokens/s", len(segmented), total, rate)
    return segmented
