"""Text to pieces: morphological segmentation and the joint SentencePiece model (SPEC section 3).

- `markers`: the word-start and morpheme-boundary marks every stage agrees on.
- `turkish`: `TurkishSegmenter`, Zemberek morphemes with sentence-level disambiguation
  ("göremediklerimizden" -> "gör￭eme￭dik￭ler￭imiz￭den"), fast and identical to the reference.
- `sentencepiece_model`: `SentencePieceModel`, one joint model whose pieces never cross a
  morpheme boundary and always spell the original line again.
- `inuktitut`: `InuktitutSegmenter`, Morfessor Baseline learnt from the training text.
- `segmenters`: both segmenters behind one interface, a chunk of lines at a time, with their
  worker processes kept across chunks.
- `corpus_io`: validated, streamed reading of raw parallel files and atomic writing.
- `chunk_store`, `chunk_encoding`: the chunk files a streamed preparation works through and
  resumes from, and the SentencePiece encoding (with its round-trip check) of one chunk in a
  worker process.
- `prepare`: the command line that runs all of it before stock fairseq-preprocess
  (`python -m fairseq_struct.morph.prepare`, or `scripts/prepare-en-tr.sh`), in memory that
  does not grow with the corpus.

Zemberek and SentencePiece are imported only when used, so importing this package is cheap.
"""

from fairseq_struct.morph.corpus_io import CorpusError, ParallelSplit, SplitReport, read_parallel
from fairseq_struct.morph.markers import MORPHEME_BOUNDARY, WORD_START, pieces_to_text
from fairseq_struct.morph.sentencepiece_model import SentencePieceModel
from fairseq_struct.morph.turkish import (
    SegmentationStats,
    TurkishSegmenter,
    segment_lines,
    shared_segmenter,
)

__all__ = [
    "MORPHEME_BOUNDARY",
    "WORD_START",
    "CorpusError",
    "ParallelSplit",
    "SegmentationStats",
    "SentencePieceModel",
    "SplitReport",
    "TurkishSegmenter",
    "pieces_to_text",
    "read_parallel",
    "segment_lines",
    "shared_segmenter",
]
