"""A segmentation cache that outlives the run: segmented lines in an sqlite3 file (design.md §3).

It maps a raw line to its segmented form, so that a rerun on the same text segments only new
lines. The key is the whole line (the disambiguator reads a word's neighbours) and a fingerprint
of the analyser and rules: an entry of another fingerprint is never returned.
"""

import sqlite3
import time
from pathlib import Path
from types import TracebackType
from typing import Optional, Tuple, Type, Union

# The segmented line, its number of analyser tokens, and whether the disambiguator ran.
SegmentationResult = Tuple[str, int, bool]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS segmentation (
    fingerprint TEXT NOT NULL,
    line TEXT NOT NULL,
    segmented TEXT NOT NULL,
    tokens INTEGER NOT NULL,
    disambiguated INTEGER NOT NULL,
    PRIMARY KEY (fingerprint, line)
) WITHOUT ROWID
"""


class SegmentationCache:
    """Segmented lines of earlier runs of one segmenter (`fingerprint`), stored in `path`.

    Use it as a context manager, or call `close()`: what was put since the last commit is
    committed then.
    """

    def __init__(
        self, path: Union[str, Path], fingerprint: str, commit_every_s: float = 10.0
    ) -> None:
        self.path = Path(path)
        self.fingerprint = fingerprint
        self.commit_every_s = commit_every_s
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._db = sqlite3.connect(self.path)
            # WAL: a reader (another run) never blocks on this run's writes, and a crash can
            # only lose the uncommitted tail.
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(_SCHEMA)
            self._db.commit()
        except sqlite3.DatabaseError as error:
            raise ValueError(f"{self.path}: not a segmentation cache (sqlite3): {error}") from error
        self._last_commit = time.monotonic()
        self.hits = self.misses = 0

    def get(self, line: str) -> Optional[SegmentationResult]:
        row = self._db.execute(
            "SELECT segmented, tokens, disambiguated FROM segmentation "
            "WHERE fingerprint = ? AND line = ?",
            (self.fingerprint, line),
        ).fetchone()
        if row is None:
            self.misses += 1
            return None
        self.hits += 1
        return row[0], row[1], bool(row[2])

    def put(self, line: str, result: SegmentationResult) -> None:
        segmented, tokens, disambiguated = result
        self._db.execute(
            "INSERT OR REPLACE INTO segmentation VALUES (?, ?, ?, ?, ?)",
            (self.fingerprint, line, segmented, tokens, int(disambiguated)),
        )
        if time.monotonic() - self._last_commit >= self.commit_every_s:
            self.commit()

    def commit(self) -> None:
        self._db.commit()
        self._last_commit = time.monotonic()

    def __len__(self) -> int:
        """Entries of this fingerprint."""
        query = "SELECT COUNT(*) FROM segmentation WHERE fingerprint = ?"
        return self._db.execute(query, (self.fingerprint,)).fetchone()[0]

    def close(self) -> None:
        self.commit()
        self._db.close()

    def __enter__(self) -> "SegmentationCache":
        return self

    def __exit__(
        self,
        kind: Optional[Type[BaseException]],
        error: Optional[BaseException],
        traceback: Optional[TracebackType],
    ) -> None:
        self.close()
