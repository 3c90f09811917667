"""Zemberek's perceptron disambiguator (`PerceptronAmbiguityResolver`), exact and faster.

`FastDecoder.best_path` returns the analyses Zemberek's `Decoder.best_path` chooses. Zemberek
extracts the features of every trigram of candidate analyses as strings, looks each weight up
in a minimal perfect hash computed one character at a time with numpy scalars, and sums in
float32; the Viterbi search keeps its hypotheses in a list searched linearly. Here:
- the weights are looked up for all new features of a sentence at once with numpy arithmetic
  (`PerceptronWeights`, an exact port of `CompressedWeights.get_`) and memoised;
- the features of a trigram are built from parts memoised per analysis and per pair of
  analyses, the weights of every trigram of the sentence go into one matrix, and its columns
  are summed with float32 array additions: the same float32 sums, term by term in Zemberek's
  order, as its scalar loop;
- the Viterbi step is a float32 array maximum whose ties go to the first hypothesis in
  Zemberek's insertion order, as its strict `>` replacement does;
- decoding stops where every token left has one segmentation and two tokens in a row have a
  single analysis: the best path to that point can no longer change;
- the scores of a step (three tokens' candidates) are kept across sentences in a bounded cache:
  they depend on those candidates alone.
Candidates are given as `WordKey`s, what the feature extractor reads of an analysis (lemma and
inflectional groups): small picklable tuples that worker processes can send to each other.
"""

from typing import Any, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

import numpy as np

# Caches are cleared when they reach this many entries, so a long corpus cannot exhaust memory
# (about 200 bytes an entry).
_MAX_CACHE_ENTRIES = 4_000_000
# Trigram scores of steps kept across sentences (a few hundred bytes each).
_MAX_STEP_ENTRIES = 500_000

# What the feature extractor reads of an analysis: its lemma and inflectional groups (WordData).
WordKey = Tuple[str, Tuple[str, ...]]


class PerceptronWeights:
    """Exact port of the disambiguator's weight look-up (`CompressedWeights.get_`).

    Zemberek computes its minimal perfect hash with numpy scalars, one call per character,
    about 90 µs a feature; `prefetch` does the same uint32 arithmetic on numpy arrays for all
    the new features of a sentence at once, and the weights are memoised.
    """

    _FNV_OFFSET = 0x811C9DC5  # MultiLevelMphf.INITIAL_HASH_SEED as an unsigned 32-bit int
    _FNV_PRIME = 16777619

    def __init__(self, model: Any) -> None:
        lookup = model.lookup  # CompressedWeights -> LossyIntLookup
        self._data = lookup.data
        self._levels = [
            (
                level.key_amount,
                level.bucket_amount,
                np.frombuffer(level.bucket_hash_seed_values, dtype=np.uint8),
            )
            for level in lookup.mphf.hash_level_data
        ]
        self._failed_indexes = [level.failed_indexes for level in lookup.mphf.hash_level_data]
        # float32 weights as Python floats (exact), so that lists of them become arrays fast
        self._cache: Dict[str, float] = {}

    def prefetch(self, features: Iterable[str]) -> None:
        """Look up every feature that is not memoised yet, in one pass of array arithmetic."""
        wanted = dict.fromkeys(features)
        missing = [feature for feature in wanted if feature not in self._cache]
        if not missing:
            return
        if len(self._cache) + len(missing) > _MAX_CACHE_ENTRIES:
            self._cache.clear()
            missing = list(wanted)  # all of them must be in the cache after this call
        missing.sort(key=len, reverse=True)
        codes = _CodePoints(missing)
        # LossyIntLookup.get_fingerprint: Java's String.hashCode, low 27 bits
        fingerprints = np.zeros(len(missing), dtype=np.uint32)
        for column in codes.columns():
            live = fingerprints[: len(column)]  # a view: updated in place, wrapping like Java
            live *= 31
            live += column
        indexes = self._indexes(codes) * 2
        stored = self._data[indexes].astype(np.int64)
        matches = (fingerprints & 0x7FFFFFF).astype(np.int64) == stored
        bits = np.where(matches, self._data[indexes + 1], 0)
        weights = bits.astype(np.int32).view(np.float32)
        self._cache.update(zip(missing, weights.tolist()))

    def _hash(self, codes: "_CodePoints", seeds: np.ndarray) -> np.ndarray:
        """MultiLevelMphf.hash_for_str of each string of `codes`, from `seeds` (0: the default)."""
        values = np.where(seeds > 0, seeds, self._FNV_OFFSET).astype(np.uint32)
        for column in codes.columns():
            live = values[: len(column)]  # a view: updated in place, uint32 wraps like Java's int
            live ^= column
            live *= self._FNV_PRIME
        return (values & 0x7FFFFFFF).astype(np.int64)

    def _indexes(self, codes: "_CodePoints") -> np.ndarray:
        """MultiLevelMphf.get_for_str of each string of `codes`."""
        initial = self._hash(codes, np.zeros(len(codes), dtype=np.int64))
        indexes = np.full(len(codes), -1, dtype=np.int64)
        pending = np.arange(len(codes))
        for level, (key_amount, bucket_amount, bucket_seeds) in enumerate(self._levels):
            seeds = bucket_seeds[initial[pending] % bucket_amount].astype(np.int64)
            found = pending[seeds != 0]
            slots = self._hash(codes.subset(found), seeds[seeds != 0]) % key_amount
            indexes[found] = slots if level == 0 else self._failed_indexes[level - 1][slots]
            pending = pending[seeds == 0]
            if not len(pending):
                return indexes
        raise AssertionError(f"Zemberek's perfect hash has no level for {len(pending)} features")

    @property
    def cached(self) -> Dict[str, float]:
        """The memoised weights: every feature of the last `prefetch` is in it."""
        return self._cache

    def __call__(self, feature: str) -> float:
        weight = self._cache.get(feature)
        if weight is None:
            self.prefetch((feature,))
            weight = self._cache[feature]
        return weight


class _CodePoints:
    """The code points of many strings, longest first, as a zero-padded matrix, one column each.

    Sorted by length, the strings that have a character at a position are a prefix of them, so
    the hashes are updated on contiguous slices instead of masked copies.
    """

    def __init__(
        self,
        strings: Sequence[str] = (),
        by_position: Optional[np.ndarray] = None,
        lengths: Optional[np.ndarray] = None,
    ) -> None:
        if by_position is None:
            lengths = np.fromiter(map(len, strings), dtype=np.int64, count=len(strings))
            if np.any(lengths[1:] > lengths[:-1]):
                raise ValueError("the strings must come longest first")
            flat = np.frombuffer("".join(strings).encode("utf-32-le"), dtype=np.uint32)
            by_position = np.zeros((int(lengths.max(initial=0)), len(strings)), dtype=np.uint32)
            rows = np.repeat(np.arange(len(strings)), lengths)
            starts = np.repeat(np.cumsum(lengths) - lengths, lengths)
            by_position[np.arange(len(flat)) - starts, rows] = flat
        self.by_position, self.lengths = by_position, lengths

    def __len__(self) -> int:
        return len(self.lengths)

    def subset(self, rows: np.ndarray) -> "_CodePoints":
        """The strings at `rows` (ascending, so still longest first)."""
        return _CodePoints(by_position=self.by_position[:, rows], lengths=self.lengths[rows])

    def columns(self) -> Iterator[np.ndarray]:
        """At each position, the code points of the strings long enough to have one there."""
        positions = self.by_position.shape[0]
        live = np.searchsorted(-self.lengths, -np.arange(positions), side="left")
        for position in range(positions):
            yield self.by_position[position, : live[position]]


class _Word:
    """What the feature extractor reads of one analysis (`WordData`), with its own weights."""

    __slots__ = ("lemma", "groups", "lemma_groups", "last", "slots", "own_keys", "own")

    def __init__(self, lemma: str, igs: Sequence[str], group_count: int) -> None:
        self.lemma = lemma
        self.groups = "+".join(igs)
        self.lemma_groups = f"{lemma}+{self.groups}"
        self.last = igs[-1]
        # Features 15 and 17 repeat when an inflectional group does: Zemberek's dict keeps the
        # first place and counts; (group, count) in the order of first occurrence.
        counts: Dict[str, int] = {}
        for ig in igs:
            counts[ig] = counts.get(ig, 0) + 1
        self.slots = list(counts.items())
        # Features of this analysis alone, as the third word: 4, 10, then 20 and 22.
        self.own_keys = ["4:" + self.lemma_groups, "10:" + lemma]
        self.own_keys += ["20:" + str(k) + "-" + ig for k, ig in enumerate(igs)]
        self.own_keys.append(f"22:{group_count}")
        self.own: Optional[List[float]] = None  # their weights, once looked up


class FastDecoder:
    """`PerceptronAmbiguityResolver.Decoder.best_path`, vectorised and memoised."""

    def __init__(self, resolver: Any) -> None:
        self.weight = PerceptronWeights(resolver.decoder.model)
        self._word_data = type(resolver).WordData.from_analysis
        self.begin = self.word_key(type(resolver).sentence_begin)
        self.end = self.word_key(type(resolver).sentence_end)
        self._words: Dict[WordKey, _Word] = {}
        # (first, second, third candidates) -> their trigram scores; _Word objects hash by id,
        # and one key always gets the same _Word while the _words cache is not cleared.
        self._steps: Dict[Tuple[Tuple[_Word, ...], ...], np.ndarray] = {}

    def word_key(self, analysis: Any) -> WordKey:
        """What the decoder needs of a SingleAnalysis: its WordData (lemma, groups)."""
        data = self._word_data(analysis)
        return data.lemma, tuple(data.igs)

    def _word(self, key: WordKey) -> _Word:
        word = self._words.get(key)
        if word is None:
            if len(self._words) >= _MAX_CACHE_ENTRIES:
                self._words.clear()
            # Zemberek's WordData has one group per group boundary: feature 22 counts them.
            word = self._words[key] = _Word(key[0], key[1], len(key[1]))
        return word

    def best_path(self, sentence: Sequence[Sequence[WordKey]], decide: int) -> List[int]:
        """For each token, the index of the best of its candidate analyses.

        `sentence` holds each token's candidates as `word_key`s of distinct analyses (Zemberek's
        hypotheses compare analyses by value: of equal candidates only the first can be chosen;
        candidates with equal keys score alike, and ties go to the first). Tokens after
        index `decide` have candidates that need not be told apart: decoding may stop early,
        and they get index 0.
        """
        # Two single-candidate tokens in a row leave one hypothesis: the path to it is final.
        stop = next(
            (
                position
                for position in range(max(decide + 1, 1), len(sentence))
                if len(sentence[position]) == 1 and len(sentence[position - 1]) == 1
            ),
            None,
        )
        tokens = sentence if stop is None else sentence[: stop + 1]
        words = [[self._word(self.begin)]] * 2
        words += [[self._word(key) for key in candidates] for candidates in tokens]
        if stop is None:
            words.append([self._word(self.end)])
        scores = self._trigram_scores(words)
        # Viterbi over hypotheses (previous, current): best[j, k] and where it came from.
        best = np.zeros((1, 1), dtype=np.float32)
        back = []
        for trigram in scores:
            total = best[:, :, None] + trigram  # float32, as h.score + trigram_score
            came_from = total.argmax(axis=0)  # the first of equal scores, as Zemberek keeps
            best = np.take_along_axis(total, came_from[None], axis=0)[0]
            back.append(came_from)
        # best[j, k]; Zemberek's list is ordered by k, then j, and max() keeps the first best
        flat = int(best.T.argmax())
        previous, current = flat % best.shape[0], flat // best.shape[0]
        chosen = [current, previous]
        for came_from in reversed(back[2:]):
            previous, current = int(came_from[previous, current]), previous
            chosen.append(previous)
        chosen.reverse()  # the chosen index of every token (and of the sentence end)
        path = chosen[: len(sentence)]
        return path + [0] * (len(sentence) - len(path))

    def _trigram_scores(self, words: List[List[_Word]]) -> List[np.ndarray]:
        """The float32 score of every trigram at every step, as Zemberek sums its features."""
        positions = [tuple(candidates) for candidates in words]
        step_keys = [tuple(positions[step - 2 : step + 1]) for step in range(2, len(words))]
        missing = [step for step, key in enumerate(step_keys, 2) if key not in self._steps]
        if missing:
            if len(self._steps) + len(missing) > _MAX_STEP_ENTRIES:
                self._steps.clear()
                missing = list(range(2, len(words)))
            computed = self._compute_trigram_scores(words, missing)
            self._steps.update((step_keys[step - 2], scores) for step, scores in computed)
        return [self._steps[key] for key in step_keys]

    def _compute_trigram_scores(
        self, words: List[List[_Word]], steps: List[int]
    ) -> List[Tuple[int, np.ndarray]]:
        """The trigram scores of `steps` (indexes into `words` of the third token)."""
        keys: List[str] = []  # laid out step by step as read back below
        own_keys: List[str] = []
        for step in steps:
            first, second, third = words[step - 2], words[step - 1], words[step]
            # each key is a prefix of (first, second) or of second, built once, + a part of third
            prefixes = ["2:" + a.lemma + b.groups for a in first for b in second]
            keys += [prefix + c.lemma_groups for prefix in prefixes for c in third]
            prefixes = ["3:" + b.lemma_groups + "-" for b in second]
            keys += [prefix + c.lemma_groups for prefix in prefixes for c in third]
            prefixes = ["9:" + b.lemma + "-" for b in second]
            keys += [prefix + c.lemma for prefix in prefixes for c in third]
            keys += ["10b:" + b.lemma for b in second]
            keys += ["10c:" + a.lemma for a in first]
            prefixes = ["15:" + a.last + "-" + b.last + "-" for a in first for b in second]
            keys += [prefix + ig for prefix in prefixes for c in third for ig, _ in c.slots]
            prefixes = ["17:" + b.last for b in second]
            keys += [prefix + ig for prefix in prefixes for c in third for ig, _ in c.slots]
            own_keys += [key for c in third if c.own is None for key in c.own_keys]
        self.weight.prefetch(keys + own_keys)
        weights = self.weight.cached
        for step in steps:
            for c in words[step]:
                if c.own is None:
                    c.own = [weights[key] for key in c.own_keys]
        rows: List[List[float]] = []
        shapes = []
        position = 0
        for step in steps:
            first, second, third = words[step - 2], words[step - 1], words[step]
            n1, n2, n3 = len(first), len(second), len(third)
            w2 = keys[position : position + n1 * n2 * n3]
            position += n1 * n2 * n3
            w3 = keys[position : position + n2 * n3]
            position += n2 * n3
            w9 = keys[position : position + n2 * n3]
            position += n2 * n3
            w10b = keys[position : position + n2]
            position += n2
            w10c = keys[position : position + n1]
            position += n1
            slots = sum(len(c.slots) for c in third)
            w15 = keys[position : position + n1 * n2 * slots]
            position += n1 * n2 * slots
            w17 = keys[position : position + n2 * slots]
            position += n2 * slots
            # the middle of each row, per (second, third): 3, 4, 9, 10, 10b
            middle = []
            tails17 = []
            at17 = 0
            for j, b in enumerate(second):
                for k, c in enumerate(third):
                    pair = j * n3 + k
                    middle.append(
                        [weights[w3[pair]], c.own[0], weights[w9[pair]], c.own[1], weights[w10b[j]]]
                    )
                    tails17.append([weights[key] for key in w17[at17 : at17 + len(c.slots)]])
                    at17 += len(c.slots)
            at2 = at15 = 0
            for i in range(n1):
                ten_c = weights[w10c[i]]
                for j in range(n2):
                    for k, c in enumerate(third):
                        pair = j * n3 + k
                        row = [weights[w2[at2]], *middle[pair], ten_c]
                        at2 += 1
                        for (_, count), key, w17_weight in zip(c.slots, w15[at15:], tails17[pair]):
                            # float32(weight * count) is this product rounded when cast below
                            row.append(weights[key] * count)
                            row.append(w17_weight * count)
                        at15 += len(c.slots)
                        row += c.own[2:]
                        rows.append(row)
            shapes.append((n1, n2, n3))
        width = max(map(len, rows))
        padded = [row + [0.0] * (width - len(row)) for row in rows]  # + 0.0 changes no sum
        terms = np.array(padded, dtype=np.float64).astype(np.float32)
        totals = terms[:, 0].copy()
        for column in range(1, width):
            totals += terms[:, column]  # float32 additions in Zemberek's order
        scores = []
        start = 0
        for step, (n1, n2, n3) in zip(steps, shapes):
            scores.append((step, totals[start : start + n1 * n2 * n3].reshape(n1, n2, n3)))
            start += n1 * n2 * n3
        return scores
