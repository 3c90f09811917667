"""Zemberek's perceptron disambiguator (`PerceptronAmbiguityResolver`), exact and faster.

`FastDecoder.best_paths` returns the analyses Zemberek's `Decoder.best_path` chooses, for many
sentences at once: feature weights memoised per template in numpy arrays, trigram scores summed
in float32 in Zemberek's order, Viterbi ties broken as Zemberek breaks them. Candidates are
`WordKey`s (lemma and inflectional groups), picklable tuples that workers send each other.
"""

from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np

from fairseq_struct.morph.zemberek.perceptron_weights import PerceptronWeights, StringTable

# What the feature extractor reads of an analysis: its lemma and inflectional groups (WordData).
WordKey = Tuple[str, Tuple[str, ...]]

# String ids are packed up to three to an int64 key, so there are at most 2**21 strings; all
# caches are emptied together before that.
_ID_BITS = 21
_MAX_STRINGS = 1 << _ID_BITS
# A feature family's memo is emptied (with all caches) when it reaches this many entries
# (12 bytes each).
_MAX_CACHE_ENTRIES = 4_000_000
# Trigram scores of steps kept across sentences (a few hundred bytes each).
_MAX_STEP_ENTRIES = 500_000

# Zemberek's FeatureExtractor.extract_from_trigram, per feature: its literal parts, and None
# for each variable part (the analyses of a trigram are a, b and c).
_TEMPLATES: Dict[str, Tuple[Optional[str], ...]] = {
    "2": ("2:", None, None, None),  # lemma of a, groups of b, lemma+groups of c
    "3": ("3:", None, "-", None),  # lemma+groups of b, of c
    "4": ("4:", None),  # lemma+groups of c
    "9": ("9:", None, "-", None),  # lemma of b, of c
    "10": ("10:", None),  # lemma of c
    "10b": ("10b:", None),  # lemma of b
    "10c": ("10c:", None),  # lemma of a
    "15": ("15:", None, "-", None, "-", None),  # last group of a, of b, a group of c
    "17": ("17:", None, None),  # last group of b, a group of c
    "20": (None, None),  # "20:{k}-", the k-th group of c
    "22": (None,),  # "22:{number of groups of c}"
}


class _Word:
    """What the feature extractor reads of one analysis (`WordData`), as interned string ids."""

    __slots__ = ("lemma", "groups", "lemma_groups", "last", "igs", "count", "slot_igs", "slots")

    def __init__(self, lemma: str, igs: Sequence[str], intern: StringTable) -> None:
        groups = "+".join(igs)
        self.lemma = intern(lemma)
        self.groups = intern(groups)
        self.lemma_groups = intern(f"{lemma}+{groups}")
        self.last = intern(igs[-1])
        self.igs = tuple(map(intern, igs))
        # feature 22: WordData has one group per group boundary
        self.count = intern(f"22:{len(igs)}")
        # Features 15 and 17 repeat when an inflectional group does: Zemberek's dict keeps the
        # first place and counts; (group, count) in the order of first occurrence.
        counts: Dict[int, int] = {}
        for ig in self.igs:
            counts[ig] = counts.get(ig, 0) + 1
        self.slot_igs = tuple(counts)
        self.slots = tuple(counts.values())


# A step of the search: the candidates of three consecutive tokens.
_Step = Tuple[Tuple[_Word, ...], Tuple[_Word, ...], Tuple[_Word, ...]]


class _Family:
    """The weights of one feature template, memoised by the packed ids of its variable parts."""

    def __init__(self, template: Tuple[Optional[str], ...], strings: StringTable) -> None:
        self.literals = [None if part is None else strings(part) for part in template]
        self.variables = sum(part is None for part in template)
        self.keys = np.zeros(0, dtype=np.int64)  # sorted
        self.weights = np.zeros(0, dtype=np.float32)

    def merge(self, keys: np.ndarray, weights: np.ndarray) -> None:
        """Memoise the weights of `keys` (sorted, none of them known yet)."""
        at = np.searchsorted(self.keys, keys)
        self.keys = np.insert(self.keys, at, keys)
        self.weights = np.insert(self.weights, at, weights)


class _Request:
    """The weights of one family's features for arrays of variable parts (one id array each).

    The memoised ones are found at once; `missing_parts` lists the string ids of the others,
    whose weights `fill` then takes.
    """

    def __init__(self, family: _Family, variables: Sequence[np.ndarray]) -> None:
        self.family = family
        keys = variables[0]
        for ids in variables[1:]:
            keys = (keys << _ID_BITS) | ids
        self.unique, self.inverse = np.unique(keys, return_inverse=True)
        self.values = np.zeros(len(self.unique), dtype=np.float32)
        known = np.zeros(len(self.unique), dtype=bool)
        if len(family.keys):
            at = np.minimum(np.searchsorted(family.keys, self.unique), len(family.keys) - 1)
            known = family.keys[at] == self.unique
            self.values[known] = family.weights[at[known]]
        self.missing = np.flatnonzero(~known)

    def missing_parts(self, width: int, empty: int) -> np.ndarray:
        """The string ids of the missing features, a row each, padded with `empty`."""
        keys = self.unique[self.missing]
        parts = np.full((len(keys), width), empty, dtype=np.int64)
        shift = _ID_BITS * (self.family.variables - 1)
        for column, literal in enumerate(self.family.literals):
            if literal is not None:
                parts[:, column] = literal
            else:
                parts[:, column] = (keys >> shift) & ((1 << _ID_BITS) - 1)
                shift -= _ID_BITS
        return parts

    def fill(self, weights: np.ndarray) -> None:
        self.values[self.missing] = weights
        self.family.merge(self.unique[self.missing], weights)

    def weights(self) -> np.ndarray:
        """The float32 weight of every feature asked for, in order."""
        return self.values[self.inverse]


class FastDecoder:
    """`PerceptronAmbiguityResolver.Decoder.best_path`, vectorised and memoised."""

    def __init__(self, resolver: Any) -> None:
        from zemberek.core.turkish import SecondaryPos

        self.weight = PerceptronWeights(resolver.decoder.model)
        self._no_secondary_pos = SecondaryPos.None_
        self.begin = self.word_key(type(resolver).sentence_begin)
        self.end = self.word_key(type(resolver).sentence_end)
        self._reset()

    def _reset(self) -> None:
        """Empty every cache (they are only ever emptied together, between batches)."""
        self._strings = StringTable()
        self._empty = self._strings("")
        self._words: Dict[WordKey, _Word] = {}
        self._candidate_words: Dict[int, Tuple[Sequence[WordKey], Tuple[_Word, ...]]] = {}
        self._families = {name: _Family(t, self._strings) for name, t in _TEMPLATES.items()}
        # (first, second, third candidates) -> their trigram scores; _Word objects hash by id,
        # and one key always gets the same _Word until the next _reset.
        self._steps: Dict[_Step, np.ndarray] = {}

    def _bound_caches(self) -> None:
        sizes = [len(self._words), len(self._candidate_words)]
        sizes += [len(family.keys) for family in self._families.values()]
        if (
            max(sizes) >= _MAX_CACHE_ENTRIES
            or len(self._strings) >= _MAX_STRINGS // 2
            or len(self._steps) >= _MAX_STEP_ENTRIES
        ):
            self._reset()

    def word_key(self, analysis: Any) -> WordKey:
        """What the decoder needs of a SingleAnalysis: its WordData (lemma, groups).

        As `WordData.from_analysis` makes it: one group per group boundary, each spelled as the
        first group (Zemberek reads group 0 every time), the first after the secondary POS.
        """
        item = analysis.item
        boundaries = analysis.group_boundaries
        morphemes = analysis.morpheme_data_list
        end = len(morphemes) if len(boundaries) == 1 else boundaries[1]
        first = "".join(data.morpheme.id_ for data in morphemes[boundaries[0] : end])
        secondary = "" if item.secondary_pos == self._no_secondary_pos else item.secondary_pos.name
        return item.lemma, (secondary + first,) + (first,) * (len(boundaries) - 1)

    def _word(self, key: WordKey) -> _Word:
        word = self._words.get(key)
        if word is None:
            word = self._words[key] = _Word(key[0], key[1], self._strings)
        return word

    def _words_of(self, candidates: Sequence[WordKey]) -> Tuple[_Word, ...]:
        """The _Words of a token's candidates, found by the identity of `candidates`: a token's
        candidates are one object wherever the segmenter's cached chunk occurs."""
        known = self._candidate_words.get(id(candidates))
        if known is not None and known[0] is candidates:
            return known[1]
        words = tuple(map(self._word, candidates))
        # keeping `candidates` alive keeps its id from being reused by another object
        self._candidate_words[id(candidates)] = (candidates, words)
        return words

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
        if len(self._strings) >= _MAX_STRINGS:  # too many new strings for one batch: halve it
            if len(sentences) == 1:
                raise ValueError("a sentence with over 2 million distinct lemmas and groups")
            self._reset()
            half = len(sentences) // 2
            return self.best_paths(sentences[:half]) + self.best_paths(sentences[half:])
        self._score_new(step for steps in plans for step in steps)
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
        positions += map(self._words_of, tokens)
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
        self._score_new(steps)
        return [self._steps[step] for step in steps]

    def _score_new(self, steps: Iterable[_Step]) -> None:
        """Score the `steps` that are not cached yet (each once, all together) and cache them."""
        missing = {step: None for step in steps if step not in self._steps}
        if missing:
            self._steps.update(zip(missing, self._score_steps(list(missing))))

    def _score_steps(self, steps: List[_Step]) -> List[np.ndarray]:
        """The float32 score of every trigram of `steps`, as Zemberek sums its features.

        Zemberek adds, in this order, the weights of features 2, 3, 4, 9, 10, 10b, 10c, then
        15 and 17 (times their counts) for each group of the third word, then 20 and 22. Here
        each term is an array over all trigrams of all `steps`, added in that order in float32;
        a word with fewer groups than another adds 0.0 in their place, which changes no sum.
        """
        local: Dict[_Word, int] = {}  # the words of `steps`, numbered
        numbered: Dict[int, List[int]] = {}  # id of a position's candidates -> their numbers
        flat: Tuple[List[int], List[int], List[int]] = ([], [], [])
        sizes: List[Tuple[int, int, int]] = []
        for step in steps:
            for position, candidates in enumerate(step):
                numbers = numbered.get(id(candidates))
                if numbers is None:  # (a position is in three steps, and often in others)
                    numbers = [local.setdefault(word, len(local)) for word in candidates]
                    numbered[id(candidates)] = numbers
                flat[position].extend(numbers)
            sizes.append(tuple(map(len, step)))
        n1, n2, n3 = np.array(sizes, dtype=np.int64).T
        # For every trigram: its step and its candidates (a, b, c) as indexes into `local`.
        counts = n1 * n2 * n3
        step_of = np.repeat(np.arange(len(steps)), counts)
        within = np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)
        i, rest = np.divmod(within, (n2 * n3)[step_of])
        j, k = np.divmod(rest, n3[step_of])
        starts = [np.cumsum(n) - n for n in (n1, n2, n3)]
        a = np.array(flat[0], dtype=np.int64)[starts[0][step_of] + i]
        b = np.array(flat[1], dtype=np.int64)[starts[1][step_of] + j]
        c = np.array(flat[2], dtype=np.int64)[starts[2][step_of] + k]

        terms = self._terms(list(local), a, b, c)
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
        lemma, groups, lemma_groups, last, count = (
            np.array([getattr(word, name) for word in words], dtype=np.int64)
            for name in ("lemma", "groups", "lemma_groups", "last", "count")
        )
        # the groups of each word (distinct ones for 15/17, all for 20), -1 where it has none
        slot_igs = _padded([word.slot_igs for word in words], -1)
        slots = _padded([word.slots for word in words], 0)  # how often each slot's group occurs
        igs = _padded([word.igs for word in words], -1)
        # features 15 and 17 for each group slot of c, feature 20 for each group of a word
        filled = [np.flatnonzero(slot_igs[c, slot] >= 0) for slot in range(slot_igs.shape[1])]
        has = [np.flatnonzero(igs[:, k] >= 0) for k in range(igs.shape[1])]
        k_literals = np.array([self._strings(f"20:{k}-") for k in range(igs.shape[1])])
        requests = {
            "2": [lemma[a], groups[b], lemma_groups[c]],
            "3": [lemma_groups[b], lemma_groups[c]],
            "9": [lemma[b], lemma[c]],
            "10b": [lemma[b]],
            "10c": [lemma[a]],
            "15": _stacked(
                [[last[a[t]], last[b[t]], slot_igs[c[t], s]] for s, t in enumerate(filled)]
            ),
            "17": _stacked([[last[b[t]], slot_igs[c[t], s]] for s, t in enumerate(filled)]),
            "4": [lemma_groups],  # the features of one word, c: per word, taken at c below
            "10": [lemma],
            "20": _stacked(
                [[np.full(len(w), k_literals[k]), igs[w, k]] for k, w in enumerate(has)]
            ),
            "22": [count],
        }
        weights = self._weights(requests)

        def by_slot(family: str, rows: List[np.ndarray], size: int) -> List[np.ndarray]:
            """The weights of `family` stacked over slots, back in arrays of `size`, 0 elsewhere."""
            columns, start = [], 0
            for where in rows:
                column = np.zeros(size, dtype=np.float32)
                column[where] = weights[family][start : start + len(where)]
                columns.append(column)
                start += len(where)
            return columns

        terms = [weights["2"], weights["3"], weights["4"][c], weights["9"], weights["10"][c]]
        terms += [weights["10b"], weights["10c"]]
        w15, w17 = by_slot("15", filled, len(a)), by_slot("17", filled, len(a))
        for slot, (term15, term17) in enumerate(zip(w15, w17)):
            times = slots[c, slot]
            # float32(weight * count): the product in float64 is exact, then rounded
            terms += [(term15 * times).astype(np.float32), (term17 * times).astype(np.float32)]
        terms += [column[c] for column in by_slot("20", has, len(words))]
        terms.append(weights["22"][c])
        return terms

    def _weights(self, requests: Dict[str, List[np.ndarray]]) -> Dict[str, np.ndarray]:
        """For each family, the weights of the features whose variable parts are given."""
        asked = {name: _Request(self._families[name], parts) for name, parts in requests.items()}
        width = max(len(_TEMPLATES[name]) for name in asked)
        parts = np.concatenate([r.missing_parts(width, self._empty) for r in asked.values()])
        found = self.weight.lookup_parts(self._strings, parts)
        start = 0
        for request in asked.values():
            request.fill(found[start : start + len(request.missing)])
            start += len(request.missing)
        return {name: request.weights() for name, request in asked.items()}


def _padded(rows: List[Tuple[int, ...]], fill: int) -> np.ndarray:
    """`rows` as a matrix, the shorter ones padded with `fill`."""
    width = max(map(len, rows))
    return np.array([row + (fill,) * (width - len(row)) for row in rows], dtype=np.int64)


def _stacked(groups: List[List[np.ndarray]]) -> List[np.ndarray]:
    """Variable parts given per slot, concatenated over the slots."""
    return [np.concatenate([group[part] for group in groups]) for part in range(len(groups[0]))]
