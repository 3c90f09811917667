"""The weights of Zemberek's perceptron disambiguator, looked up for many features at once.

`PerceptronWeights.lookup_parts` does the uint32 arithmetic of `CompressedWeights.get_` (a
minimal perfect hash, FNV-1a per level, checked by Java's String.hashCode) on numpy arrays over
many features, each a row of `StringTable` ids whose strings spell it: no feature string is built.
"""

from typing import Any, Dict, List, Sequence, Tuple

import numpy as np


class StringTable:
    """Interned strings with dense ids from 0, their code points and their Java hashes."""

    def __init__(self) -> None:
        self.ids: Dict[str, int] = {}
        self.strings: List[str] = []
        self.flat = np.zeros(1024, dtype=np.uint32)  # code points of all strings, in id order
        self.starts = np.zeros(0, dtype=np.int64)  # where each string's are in `flat`
        self.lengths = np.zeros(0, dtype=np.int64)
        self.java_hashes = np.zeros(0, dtype=np.uint32)  # String.hashCode
        self.java_powers = np.zeros(0, dtype=np.uint32)  # 31 ** length, mod 2**32

    def __call__(self, string: str) -> int:
        index = self.ids.get(string)
        if index is None:
            index = self.ids[string] = len(self.strings)
            self.strings.append(string)
        return index

    def __len__(self) -> int:
        return len(self.strings)

    def encode(self) -> None:
        """Bring the arrays up to date with the strings interned since the last call."""
        done = len(self.lengths)
        if done == len(self.strings):
            return
        new = self.strings[done:]
        codes = np.frombuffer("".join(new).encode("utf-32-le"), dtype=np.uint32)
        lengths = np.fromiter(map(len, new), dtype=np.int64, count=len(new))
        used = int(self.starts[-1] + self.lengths[-1]) if done else 0
        if used + len(codes) > len(self.flat):  # grow by doubling: amortised constant time
            grown = np.zeros(max(2 * len(self.flat), used + len(codes)), dtype=np.uint32)
            grown[:used] = self.flat[:used]
            self.flat = grown
        self.flat[used : used + len(codes)] = codes
        starts = used + np.cumsum(lengths) - lengths
        hashes = np.zeros(len(new), dtype=np.uint32)
        powers = np.ones(len(new), dtype=np.uint32)
        for live, at in _PartReader(starts, lengths).positions():
            hashes[live] *= 31  # uint32 arithmetic wraps like Java's int
            hashes[live] += self.flat[at]
            powers[live] *= 31
        self.starts = np.concatenate([self.starts, starts])
        self.lengths = np.concatenate([self.lengths, lengths])
        self.java_hashes = np.concatenate([self.java_hashes, hashes])
        self.java_powers = np.concatenate([self.java_powers, powers])


class _PartReader:
    """The characters of one string per row, position by position.

    Rows are visited longest string first, so that the rows that have a character at a
    position are a prefix of them: `positions` gives, for each position, that prefix (as the
    rows' indexes) and where the characters are in the table's `flat`.
    """

    def __init__(self, starts: np.ndarray, lengths: np.ndarray) -> None:
        # a stable sort of 16-bit keys is a radix sort
        keys = -lengths.astype(np.int16) if len(lengths) and lengths.max() < 2**15 else -lengths
        self.order = np.argsort(keys, kind="stable")
        self.starts = starts[self.order]
        lengths = lengths[self.order]
        width = int(lengths[0]) if len(lengths) else 0
        self.live = np.searchsorted(-lengths, -np.arange(width), side="left").tolist()

    def positions(self) -> List[Tuple[np.ndarray, np.ndarray]]:
        return [
            (self.order[:live], self.starts[:live] + position)
            for position, live in enumerate(self.live)
        ]


class PerceptronWeights:
    """Exact port of the disambiguator's weight look-up (`CompressedWeights.get_`)."""

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

    def lookup(self, features: Sequence[str]) -> np.ndarray:
        """The float32 weights of `features`."""
        table = StringTable()
        parts = np.array([[table(feature)] for feature in features], dtype=np.int64)
        return self.lookup_parts(table, parts.reshape(len(features), 1))

    def lookup_parts(self, table: StringTable, parts: np.ndarray) -> np.ndarray:
        """The float32 weights of the features spelled by the rows of string ids `parts`."""
        if not len(parts):
            return np.zeros(0, dtype=np.float32)
        table.encode()
        # LossyIntLookup.get_fingerprint: Java's String.hashCode of the concatenation, low 27 bits
        fingerprints = np.zeros(len(parts), dtype=np.uint32)
        for column in parts.T:
            fingerprints *= table.java_powers[column]
            fingerprints += table.java_hashes[column]
        indexes = self._indexes(table, parts) * 2
        stored = self._data[indexes].astype(np.int64)
        matches = (fingerprints & 0x7FFFFFF).astype(np.int64) == stored
        bits = np.where(matches, self._data[indexes + 1], 0)
        return bits.astype(np.int32).view(np.float32)

    def _hash(
        self, table: StringTable, readers: List[_PartReader], seeds: np.ndarray
    ) -> np.ndarray:
        """MultiLevelMphf.hash_for_str of each feature `readers` read, from `seeds` (0: default)."""
        values = np.where(seeds > 0, seeds, self._FNV_OFFSET).astype(np.uint32)
        for reader in readers:
            ordered = values[reader.order]  # longest string of this part first
            for position, live in enumerate(reader.live):
                view = ordered[:live]  # a view: updated in place, uint32 wraps like Java's int
                view ^= table.flat[reader.starts[:live] + position]
                view *= self._FNV_PRIME
            values[reader.order] = ordered
        return (values & 0x7FFFFFFF).astype(np.int64)

    def _indexes(self, table: StringTable, parts: np.ndarray) -> np.ndarray:
        """MultiLevelMphf.get_for_str of each feature of `parts`."""
        readers = _readers(table, parts)
        initial = self._hash(table, readers, np.zeros(len(parts), dtype=np.int64))
        indexes = np.full(len(parts), -1, dtype=np.int64)
        pending = np.arange(len(parts))
        for level, (key_amount, bucket_amount, bucket_seeds) in enumerate(self._levels):
            seeds = bucket_seeds[initial[pending] % bucket_amount].astype(np.int64)
            found = pending[seeds != 0]
            if level == 0:  # most are found at once: hash them all rather than take a subset
                indexes[found] = (self._hash(table, readers, seeds) % key_amount)[found]
            else:
                subset = _readers(table, parts[found])
                slots = self._hash(table, subset, seeds[seeds != 0]) % key_amount
                indexes[found] = self._failed_indexes[level - 1][slots]
            pending = pending[seeds == 0]
            if not len(pending):
                return indexes
        raise AssertionError(f"Zemberek's perfect hash has no level for {len(pending)} features")


def _readers(table: StringTable, parts: np.ndarray) -> List[_PartReader]:
    """A reader of each column of the rows of string ids `parts`."""
    return [_PartReader(table.starts[column], table.lengths[column]) for column in parts.T]
