"""The morphological segmenters of the preparation commands, one chunk of lines at a time.

`open_segmenter(lang, ...)` gives Turkish (Zemberek) or Inuktitut (Morfessor, learnt from the
training lines and saved as OUT_DIR/morfessor.iu.segm) behind one interface, `ChunkSegmenter`,
built once per run with its worker processes and caches kept warm across chunks.
"""

import hashlib
import time
from contextlib import ExitStack
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

from fairseq_struct.morph.forked_helpers import ForkedHelpers, shrinking_batches

# Inuktitut's Morfessor model, learnt on the first run and reused by later runs into OUT_DIR.
INUKTITUT_MODEL_FILE = "morfessor.iu.segm"
# Turkish's default segmentation cache in OUT_DIR.
DEFAULT_SEGMENTATION_CACHE = "segmentation_cache.sqlite"
# Lines per batch handed to an Inuktitut worker.
_INUKTITUT_BATCH_LINES = 2000

Counters = Dict[str, int]
TrainingLines = Callable[[], Iterable[str]]


class ChunkSegmenter(ExitStack):
    """What both segmenters share: `fingerprint` (what their segmentations depend on: a chunk
    segmented under another is segmented again, `chunk_store`), `segment(lines)` (the lines with
    MORPHEME_BOUNDARY between morphemes, in order, and counters of the work done, summed over
    chunks for the report) and `report()` (how the segmenter was built and run). What they start
    (worker processes, a cache) is pushed on this ExitStack as it is started, so that leaving the
    context stops it, last in first out."""


class TurkishChunkSegmenter(ChunkSegmenter):
    def __init__(self, workers: int, segmentation_cache: Optional[str]) -> None:
        # Imported here: bpe mode must work without zemberek installed.
        from fairseq_struct.morph.turkish import cache_fingerprint

        super().__init__()
        self.workers, self.segmentation_cache = workers, segmentation_cache
        self.fingerprint = f"zemberek:{cache_fingerprint()}"
        self.build_seconds = 0.0
        self._segmentation: Any = None

    def segment(self, lines: Sequence[str]) -> Tuple[List[str], Counters]:
        from fairseq_struct.morph.turkish import SegmentationStats

        # Built lazily: a run whose chunks are all done never loads Zemberek.
        if self._segmentation is None:
            self._segmentation = self._build()
        stats = SegmentationStats()
        return self._segmentation.segment(lines, stats), asdict(stats)

    def _build(self) -> Any:
        from fairseq_struct.morph.segmentation_cache import SegmentationCache
        from fairseq_struct.morph.turkish import LineSegmentation, cache_fingerprint

        started = time.monotonic()
        cache = None
        if self.segmentation_cache is not None:
            Path(self.segmentation_cache).parent.mkdir(parents=True, exist_ok=True)
            cache = SegmentationCache(self.segmentation_cache, cache_fingerprint())
            self.callback(cache.close)  # on exit, after the segmentation has committed it
        # stops its helpers and commits the cache on exit
        segmentation = self.enter_context(LineSegmentation(self.workers, cache=cache))
        self.build_seconds = time.monotonic() - started
        return segmentation

    def report(self) -> Dict[str, object]:
        return {
            "segmenter": "zemberek",
            "build_seconds": round(self.build_seconds, 2),
            "workers": self.workers,
            "segmentation_cache": self.segmentation_cache,
        }


# The Inuktitut segmenter of this run, set before the helpers fork so that they inherit it.
_INUKTITUT: Any = None


def _segment_inuktitut_batch(lines: Sequence[str]) -> Tuple[List[str], int]:
    words_before = _INUKTITUT.words
    segmented = [_INUKTITUT.segment(line) for line in lines]
    return segmented, _INUKTITUT.words - words_before


class InuktitutChunkSegmenter(ChunkSegmenter):
    def __init__(self, workers: int, model_path: Path, training_lines: TrainingLines) -> None:
        global _INUKTITUT
        from fairseq_struct.morph.inuktitut import InuktitutSegmenter

        super().__init__()
        started = time.monotonic()
        self.workers, self.model_path = workers, Path(model_path)
        # The model is learnt from the training split only, so that valid and test stay
        # unseen text; a rerun reuses it (delete the file to learn from new training text).
        self.model_reused = self.model_path.exists()
        if self.model_reused:
            segmenter = InuktitutSegmenter.load(self.model_path)
        else:
            segmenter = InuktitutSegmenter()
            segmenter.train(training_lines())
            segmenter.save(self.model_path)
        _INUKTITUT = segmenter
        model = hashlib.sha256(self.model_path.read_bytes()).hexdigest()[:16]
        self.fingerprint = f"morfessor:{model}"
        self.build_seconds = time.monotonic() - started
        self._workers: Optional[ForkedHelpers] = None  # forked at the first `segment`

    def segment(self, lines: Sequence[str]) -> Tuple[List[str], Counters]:
        if self._workers is None:
            self._workers = self.enter_context(ForkedHelpers(self.workers))
        batches = shrinking_batches(
            lines, self.workers, _INUKTITUT_BATCH_LINES, _INUKTITUT_BATCH_LINES // 20
        )
        segmented: List[str] = []
        words = 0
        for _, (batch, batch_words) in self._workers.map(_segment_inuktitut_batch, batches):
            segmented.extend(batch)
            words += batch_words
        return segmented, {"lines": len(lines), "tokens": words}

    def report(self) -> Dict[str, object]:
        return {
            "segmenter": "morfessor",
            "build_seconds": round(self.build_seconds, 2),
            "workers": self.workers,
            "model": str(self.model_path),
            "model_reused": self.model_reused,
        }


def open_segmenter(
    lang: str,
    workers: int,
    out_dir: Path,
    training_lines: TrainingLines,
    segmentation_cache: Optional[str] = None,
) -> ChunkSegmenter:
    """The segmenter for `lang` (one of SEGMENTED_LANGUAGES); see `ChunkSegmenter`.

    `training_lines()` streams the lines a learning segmenter may learn from (the training
    split); `segmentation_cache` is Turkish's sqlite file of segmented lines (None: no cache).
    """
    if lang == "tr":
        return TurkishChunkSegmenter(workers, segmentation_cache)
    if lang == "iu":
        return InuktitutChunkSegmenter(
            workers, Path(out_dir) / INUKTITUT_MODEL_FILE, training_lines
        )
    raise ValueError(
        f"no morphological segmenter for {lang!r} (available: {', '.join(SEGMENTED_LANGUAGES)})"
    )


SEGMENTED_LANGUAGES = ("iu", "tr")
# Those whose segmenter keeps a cache of segmented lines across runs.
CACHING_SEGMENTERS = frozenset({"tr"})


def segment_all(
    lang: str,
    lines: Sequence[str],
    workers: int,
    out_dir: Path,
    training_lines: TrainingLines = lambda: (),
    segmentation_cache: Optional[str] = None,
) -> List[str]:
    """`lines` segmented in one go, for the callers whose text fits in memory (fine-tuning
    data)."""
    with open_segmenter(lang, workers, out_dir, training_lines, segmentation_cache) as segmenter:
        return segmenter.segment(lines)[0]
