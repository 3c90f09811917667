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

from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

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
        self._cache.update(zip(missing, self.lookup(missing).tolist()))

    def lookup(self, features: Sequence[str]) -> np.ndarray:
        """The float32 weights of `features`, computed together (not memoised)."""
        if not features:
            return np.zeros(0, dtype=np.float32)
        lengths = np.fromiter(map(len, features), dtype=np.int64, count=len(features))
        order = np.argsort(-lengths, kind="stable")  # _CodePoints wants the longest first
        codes = _CodePoints([features[index] for index in order.tolist()])
        # LossyIntLookup.get_fingerprint: Java's String.hashCode, low 27 bits
        fingerprints = np.zeros(len(features), dtype=np.uint32)
        for column in codes.columns():
            live = fingerprints[: len(column)]  # a view: updated in place, wrapping like Java
            live *= 31
            live += column
        indexes = self._indexes(codes) * 2
        stored = self._data[indexes].astype(np.int64)
        matches = (fingerprints & 0x7FFFFFF).astype(np.int64) == stored
        bits = np.where(matches, self._data[indexes + 1], 0)
        weights = np.empty(len(features), dtype=np.float32)
        weights[order] = bits.astype(np.int32).view(np.float32)
        return weights

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
    """What the feature extractor reads of one analysis (`WordData`), as interned string ids."""

    __slots__ = ("lemma", "groups", "lemma_groups", "last", "slot_igs", "slot_counts", "own_keys")

    def __init__(self, lemma: str, igs: Sequence[str], intern: "_Interner") -> None:
        groups = "+".join(igs)
        self.lemma = intern(lemma)
        self.groups = intern(groups)
        self.lemma_groups = intern(f"{lemma}+{groups}")
        self.last = intern(igs[-1])
        # Features 15 and 17 repeat when an inflectional group does: Zemberek's dict keeps the
        # first place and counts; (group, count) in the order of first occurrence.
        counts: Dict[str, int] = {}
        for ig in igs:
            counts[ig] = counts.get(ig, 0) + 1
        self.slot_igs = tuple(intern(ig) for ig in counts)
        self.slot_counts = tuple(counts.values())
        # Features of this analysis alone, as the third word: 4, 10, then 20 and 22 (WordData
        # has one group per group boundary: feature 22 counts them).
        self.own_keys = [f"4:{lemma}+{groups}", "10:" + lemma]
        self.own_keys += ["20:" + str(k) + "-" + ig for k, ig in enumerate(igs)]
        self.own_keys.append(f"22:{len(igs)}")


class _Interner:
    """Dense ids from 0 for values (strings, or pairs of ids packed in an int): `values[id]`."""

    def __init__(self) -> None:
        self.ids: Dict[Any, int] = {}
        self.values: List[Any] = []

    def __call__(self, value: Any) -> int:
        index = self.ids.get(value)
        if index is None:
            index = self.ids[value] = len(self.values)
            self.values.append(value)
        return index

    def __len__(self) -> int:
        return len(self.values)


# A step of the search: the candidates of three consecutive tokens.
_Step = Tuple[Tuple[_Word, ...], Tuple[_Word, ...], Tuple[_Word, ...]]


class _FeatureQuery:
    """The weights of one feature family for an array of (x, y) id pairs, memoised by pair.

    `missing` lists the spellings the memo lacks; once `resolve` gets their weights, `weights`
    gives the float32 weight of every pair, in the order given.
    """

    def __init__(
        self, memo: Dict[int, float], spell: Callable[[int, int], str], x: np.ndarray, y: np.ndarray
    ) -> None:
        self.memo = memo
        self.unique, self.inverse = np.unique((x << 32) | y, return_inverse=True)
        self.codes = self.unique.tolist()
        self.values = list(map(memo.get, self.codes))
        self.missing_at = [index for index, value in enumerate(self.values) if value is None]
        self.missing = [
            spell(self.codes[index] >> 32, self.codes[index] & 0xFFFFFFFF)
            for index in self.missing_at
        ]

    def resolve(self, weights: List[float]) -> None:
        for index, weight in zip(self.missing_at, weights):
            self.values[index] = self.memo[self.codes[index]] = weight

    def weights(self) -> np.ndarray:
        return np.array(self.values, dtype=np.float32)[self.inverse]


class FastDecoder:
    """`PerceptronAmbiguityResolver.Decoder.best_path`, vectorised and memoised."""

    def __init__(self, resolver: Any) -> None:
        self.weight = PerceptronWeights(resolver.decoder.model)
        self._word_data = type(resolver).WordData.from_analysis
        self.begin = self.word_key(type(resolver).sentence_begin)
        self.end = self.word_key(type(resolver).sentence_end)
        self._reset()

    def _reset(self) -> None:
        """Empty every cache (they are only ever emptied together, between sentences)."""
        self._strings = _Interner()
        self._pairs = _Interner()  # pairs of string ids as x << 32 | y: two-part prefixes
        self._words: Dict[WordKey, _Word] = {}
        # The weights of the features 4, 10, 20 and 22 of each word, once looked up.
        self._own: Dict[_Word, List[float]] = {}
        # Feature family -> (x << 32 | y) -> weight; see _queries for what x and y are.
        self._memos: Dict[str, Dict[int, float]] = {family: {} for family in _FAMILIES}
        # (first, second, third candidates) -> their trigram scores; _Word objects hash by id,
        # and one key always gets the same _Word until the next _reset.
        self._steps: Dict[_Step, np.ndarray] = {}

    def _bound_caches(self) -> None:
        sizes = [len(self._strings), len(self._pairs), len(self._words)]
        sizes += [len(memo) for memo in self._memos.values()]
        if max(sizes) >= _MAX_CACHE_ENTRIES or len(self._steps) >= _MAX_STEP_ENTRIES:
            self._reset()

    def word_key(self, analysis: Any) -> WordKey:
        """What the decoder needs of a SingleAnalysis: its WordData (lemma, groups)."""
        data = self._word_data(analysis)
        return data.lemma, tuple(data.igs)

    def _word(self, key: WordKey) -> _Word:
        word = self._words.get(key)
        if word is None:
            word = self._words[key] = _Word(key[0], key[1], self._strings)
        return word

    def best_path(self, sentence: Sequence[Sequence[WordKey]], decide: int) -> List[int]:
        """For each token, the index of the best of its candidate analyses.

        `sentence` holds each token's candidates as `word_key`s of distinct analyses (Zemberek's
        hypotheses compare analyses by value: of equal candidates only the first can be chosen;
        candidates with equal keys score alike, and ties go to the first). Tokens after
        index `decide` have candidates that need not be told apart: decoding may stop early,
        and they get index 0.
        """
        return self.best_paths([(sentence, decide)])[0]

    def best_paths(
        self, sentences: Sequence[Tuple[Sequence[Sequence[WordKey]], int]]
    ) -> List[List[int]]:
        """`best_path` of each (sentence, decide), scoring the new steps of all of them at once."""
        self._bound_caches()
        plans = [self._steps_of(sentence, decide) for sentence, decide in sentences]
        missing = {step: None for steps in plans for step in steps if step not in self._steps}
        if missing:
            self._steps.update(zip(missing, self._score_steps(list(missing))))
        return [
            self._viterbi([self._steps[step] for step in steps], len(sentence))
            for steps, (sentence, _) in zip(plans, sentences)
        ]

    def _steps_of(self, sentence: Sequence[Sequence[WordKey]], decide: int) -> List[_Step]:
        """The steps to decode: up to where the path is final, or to the sentence end."""
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
        begin = (self._word(self.begin),)
        positions = [begin, begin]
        positions += [tuple(self._word(key) for key in candidates) for candidates in tokens]
        if stop is None:
            positions.append((self._word(self.end),))
        return [
            (positions[step - 2], positions[step - 1], positions[step])
            for step in range(2, len(positions))
        ]

    @staticmethod
    def _viterbi(scores: List[np.ndarray], length: int) -> List[int]:
        """The best path through the trigram `scores` of consecutive steps, for `length` tokens."""
        # Viterbi over hypotheses (previous, current): best[j, k] and where it came from.
        best = np.zeros((1, 1), dtype=np.float32)
        back = []
        for trigram in scores:
            total = best[:, :, None] + trigram  # float32, as h.score + trigram_score
            back.append(total.argmax(axis=0))  # the first of equal scores, as Zemberek keeps
            best = total.max(axis=0)
        # best[j, k]; Zemberek's list is ordered by k, then j, and max() keeps the first best
        flat = int(best.T.argmax())
        previous, current = flat % best.shape[0], flat // best.shape[0]
        chosen = [current, previous]
        for came_from in reversed(back[2:]):
            previous, current = int(came_from[previous, current]), previous
            chosen.append(previous)
        chosen.reverse()  # the chosen index of every token (and of the sentence end)
        path = chosen[:length]
        return path + [0] * (length - len(path))

    def _trigram_scores(self, words: List[List[_Word]]) -> List[np.ndarray]:
        """The scores of every step of `words` (the candidates of each position), cached."""
        positions = [tuple(candidates) for candidates in words]
        steps = [tuple(positions[step - 2 : step + 1]) for step in range(2, len(positions))]
        missing = {step: None for step in steps if step not in self._steps}
        if missing:
            self._steps.update(zip(missing, self._score_steps(list(missing))))
        return [self._steps[step] for step in steps]

    def _score_steps(self, steps: List[_Step]) -> List[np.ndarray]:
        """The float32 score of every trigram of `steps`, as Zemberek sums its features.

        Zemberek adds, in this order, the weights of features 2, 3, 4, 9, 10, 10b, 10c, then
        15 and 17 (times their counts) for each group of the third word, then 20 and 22. Here
        each term is an array over all trigrams of all `steps`, added in that order in float32;
        a word with fewer groups than another adds 0.0 in their place, which changes no sum.
        """
        local: Dict[_Word, int] = {}  # the words of `steps`, numbered
        flat: Tuple[List[int], List[int], List[int]] = ([], [], [])
        sizes: List[Tuple[int, int, int]] = []
        for step in steps:
            for position, candidates in enumerate(step):
                flat[position].extend(local.setdefault(word, len(local)) for word in candidates)
            sizes.append(tuple(map(len, step)))
        words = list(local)
        n1, n2, n3 = np.array(sizes, dtype=np.int64).T
        # For every trigram: its step and its candidates (a, b, c) as indexes into `words`.
        counts = n1 * n2 * n3
        step_of = np.repeat(np.arange(len(steps)), counts)
        within = np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)
        per_first = (n2 * n3)[step_of]
        i, rest = np.divmod(within, per_first)
        j, k = np.divmod(rest, n3[step_of])
        starts = [np.cumsum(n) - n for n in (n1, n2, n3)]
        a = np.array(flat[0], dtype=np.int64)[starts[0][step_of] + i]
        b = np.array(flat[1], dtype=np.int64)[starts[1][step_of] + j]
        c = np.array(flat[2], dtype=np.int64)[starts[2][step_of] + k]

        terms = self._terms(words, a, b, c)
        totals = terms[0].copy()
        for term in terms[1:]:
            totals += term  # float32 additions in Zemberek's order
        ends = np.cumsum(counts).tolist()
        return [
            totals[end - size : end].reshape(shape)
            for end, size, shape in zip(ends, counts.tolist(), sizes)
        ]

    def _terms(
        self, words: List[_Word], a: np.ndarray, b: np.ndarray, c: np.ndarray
    ) -> List[np.ndarray]:
        """The float32 terms of every trigram (a, b, c), in Zemberek's order of addition."""
        lemma, groups, lemma_groups, last = (
            np.array([getattr(word, name) for word in words], dtype=np.int64)
            for name in ("lemma", "groups", "lemma_groups", "last")
        )
        slot_count = max(len(word.slot_igs) for word in words)
        slot_igs = np.array(
            [word.slot_igs + (-1,) * (slot_count - len(word.slot_igs)) for word in words],
            dtype=np.int64,
        )
        slot_counts = np.array(
            [word.slot_counts + (0,) * (slot_count - len(word.slot_counts)) for word in words],
            dtype=np.float64,
        )
        own = self._own_weights(words)
        strings = self._strings.values
        pairs = self._pairs.values
        memos = self._memos

        def spell_2(pair: int, lemma_groups_c: int) -> str:
            lemma_a, groups_b = pairs[pair] >> 32, pairs[pair] & 0xFFFFFFFF
            return "2:" + strings[lemma_a] + strings[groups_b] + strings[lemma_groups_c]

        def spell_15(pair: int, ig: int) -> str:
            last_a, last_b = pairs[pair] >> 32, pairs[pair] & 0xFFFFFFFF
            return "15:" + strings[last_a] + "-" + strings[last_b] + "-" + strings[ig]

        zero = np.zeros_like(a)
        queries = {
            "2": _FeatureQuery(
                memos["2"], spell_2, self._pair_ids(lemma[a], groups[b]), lemma_groups[c]
            ),
            "3": _FeatureQuery(
                memos["3"],
                lambda x, y: "3:" + strings[x] + "-" + strings[y],
                lemma_groups[b],
                lemma_groups[c],
            ),
            "9": _FeatureQuery(
                memos["9"], lambda x, y: "9:" + strings[x] + "-" + strings[y], lemma[b], lemma[c]
            ),
            "10b": _FeatureQuery(memos["10b"], lambda x, _: "10b:" + strings[x], lemma[b], zero),
            "10c": _FeatureQuery(memos["10c"], lambda x, _: "10c:" + strings[x], lemma[a], zero),
        }
        last_pairs = self._pair_ids(last[a], last[b])
        filled = [slot_igs[c, slot] >= 0 for slot in range(slot_count)]
        for slot, rows in enumerate(filled):
            ig = slot_igs[c[rows], slot]
            queries[f"15.{slot}"] = _FeatureQuery(memos["15"], spell_15, last_pairs[rows], ig)
            queries[f"17.{slot}"] = _FeatureQuery(
                memos["17"], lambda x, y: "17:" + strings[x] + strings[y], last[b[rows]], ig
            )
        missing = [feature for query in queries.values() for feature in query.missing]
        weights = self.weight.lookup(missing).tolist()
        start = 0
        for query in queries.values():
            query.resolve(weights[start : start + len(query.missing)])
            start += len(query.missing)

        terms = [queries["2"].weights(), queries["3"].weights(), own[c, 0]]
        terms += [queries["9"].weights(), own[c, 1], queries["10b"].weights()]
        terms.append(queries["10c"].weights())
        for slot, rows in enumerate(filled):
            count = slot_counts[c[rows], slot]
            for family in ("15", "17"):
                term = np.zeros(len(a), dtype=np.float32)
                # float32(weight * count): the product in float64 is exact, then rounded
                term[rows] = queries[f"{family}.{slot}"].weights() * count
                terms.append(term)
        terms += [own[c, column] for column in range(2, own.shape[1])]
        return terms

    def _pair_ids(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """An id for each pair (x[n], y[n]) of string ids, the same across calls."""
        unique, inverse = np.unique((x << 32) | y, return_inverse=True)
        ids = np.array(list(map(self._pairs, unique.tolist())), dtype=np.int64)
        return ids[inverse]

    def _own_weights(self, words: List[_Word]) -> np.ndarray:
        """The weights of features 4, 10, 20.. and 22 of each word, zero-padded, float32."""
        new = [word for word in words if word not in self._own]
        if new:
            self.weight.prefetch(key for word in new for key in word.own_keys)
            cached = self.weight.cached
            for word in new:
                self._own[word] = [cached[key] for key in word.own_keys]
        width = max(len(word.own_keys) for word in words)
        return np.array(
            [self._own[word] + [0.0] * (width - len(word.own_keys)) for word in words],
            dtype=np.float32,
        )


# The feature families whose weights are memoised by pairs of ids in FastDecoder._terms.
_FAMILIES = ("2", "3", "9", "10b", "10c", "15", "17")
