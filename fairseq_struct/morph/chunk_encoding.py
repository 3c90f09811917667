"""SentencePiece encoding of one chunk, with its round-trip check, in any worker process.

The model is set with `use_model` before the helpers fork, so a task carries only file names and
only the chunk's piece counts cross a pipe; the encoded lines go to the `ChunkStore`.
"""

import hashlib
from collections import Counter
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Iterator, List, Optional, Sequence, Tuple

from fairseq_struct.morph.chunk_store import ChunkStats, ChunkStore, process_chunk
from fairseq_struct.morph.sentencepiece_model import SentencePieceModel
from fairseq_struct.pieces.markers import pieces_to_text

STAGE = "encode"

# The model of this run, set before the helpers fork so that they inherit it.
_MODEL: Optional[SentencePieceModel] = None


def use_model(model: SentencePieceModel) -> str:
    """Encode with `model` from now on (call it before the helpers fork); returns the
    fingerprint of its encodings for `EncodeTask`."""
    global _MODEL
    _MODEL = model
    digest = hashlib.sha256(model.model_path.read_bytes()).hexdigest()[:16]
    return f"{STAGE}:{digest}:{model.keep_boundary_marks}"


@dataclass(frozen=True)
class EncodeTask:
    """One chunk to encode: `text` is what SentencePiece reads (segmented in morph mode), and
    the pieces must spell the whitespace-normalised lines of `normalised` again."""

    store: Path  # the ChunkStore's directory
    fingerprint: str  # the model's, from `use_model`
    text: Path
    normalised: Path
    output: str  # the file the chunk ends up in, and the number of its first line there,
    first_line: int  # for error messages


def encode_chunk(task: EncodeTask) -> Tuple[str, ChunkStats, bool]:
    """(key, statistics, reused) of the encoded chunk; see `chunk_store.process_chunk`."""
    inputs = [task.text] if task.text == task.normalised else [task.text, task.normalised]
    return process_chunk(
        ChunkStore(task.store), STAGE, task.fingerprint, inputs, partial(_encode, task)
    )


def _encode(
    task: EncodeTask, text: Sequence[str], normalised: Optional[Sequence[str]] = None
) -> Tuple[Iterator[str], ChunkStats]:
    """The chunk's pieces, checked; `normalised` is None where it is `text` itself (bpe mode)."""
    assert _MODEL is not None, "use_model() first"
    encoded = _MODEL.encode_lines(text)
    _check_round_trip(encoded, text if normalised is None else normalised, task)
    counts = Counter(piece for pieces in encoded for piece in pieces)
    stats = {"lines": len(encoded), "pieces": dict(counts)}
    return (" ".join(pieces) for pieces in encoded), stats


def _check_round_trip(encoded: Sequence[List[str]], lines: Sequence[str], task: EncodeTask) -> None:
    for number, (pieces, line) in enumerate(zip(encoded, lines, strict=True), task.first_line):
        if pieces_to_text(pieces) != line:
            raise RuntimeError(
                f"{task.output}:{number}: the pieces do not spell the raw line again: "
                f"{pieces_to_text(pieces)!r} != {line!r}"
            )
