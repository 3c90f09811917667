"""One joint SentencePiece model over source and target text (design.md §3).

Its pieces spell the input exactly (`pieces_to_text(encode(line)) == line`) and never span a
morpheme boundary; the boundary marks are dropped from the token sequence unless
`keep_boundary_marks` (docs/segmentation.md says why).
"""

import hashlib
import io
import json
import logging
import random
import tempfile
from array import array
from pathlib import Path
from typing import Callable, Dict, Iterable, List, Sequence, Tuple, Union

import sentencepiece

from fairseq_struct.corpus_io import atomic_write_bytes
from fairseq_struct.pieces.markers import MORPHEME_BOUNDARY, pieces_to_text

logger = logging.getLogger(__name__)

MODEL_TYPES = ("unigram", "bpe")


def reservoir_sample(lines: Iterable[str], size: int, seed: int) -> List[str]:
    """`size` lines drawn uniformly from a stream (Algorithm R, random.Random(seed)), returned
    in their order in the stream; all of them when there are fewer. Memory: `size` lines (their
    positions in an 8-byte array)."""
    rng = random.Random(seed)
    kept: List[str] = []
    positions = array("q")
    for index, line in enumerate(lines):
        if index < size:
            kept.append(line)
            positions.append(index)
        else:
            slot = rng.randrange(index + 1)
            if slot < size:
                kept[slot] = line
                positions[slot] = index
    return [kept[slot] for slot in sorted(range(len(kept)), key=positions.__getitem__)]


def _write_training_text(
    lines: Iterable[str], sample_size: int, seed: int, path: Path
) -> Tuple[int, int]:
    """Write the training lines (or their `reservoir_sample`) to `path`; (lines, longest line in
    bytes). The sample is freed when this returns."""
    if sample_size > 0:
        lines = reservoir_sample(lines, sample_size, seed)
    count = longest = 0
    with open(path, "wb") as file:
        for line in lines:
            data = line.encode("utf-8")
            file.write(data + b"\n")
            count += 1
            longest = max(longest, len(data))
    return count, longest


class SentencePieceModel:
    """A trained SentencePiece model that encodes plain or segmented lines into pieces."""

    def __init__(self, model_path: Union[str, Path], keep_boundary_marks: bool = False) -> None:
        self.model_path = Path(model_path)
        self.keep_boundary_marks = keep_boundary_marks
        self.processor = sentencepiece.SentencePieceProcessor(model_file=str(model_path))
        self.vocabulary = frozenset(
            self.processor.id_to_piece(index) for index in range(self.processor.get_piece_size())
        )

    @classmethod
    def train(
        cls,
        lines: Iterable[str],
        model_path: Union[str, Path],
        vocab_size: int = 8000,
        model_type: str = "unigram",
        num_threads: int = 1,
        seed: int = 1,
        keep_boundary_marks: bool = False,
        sample_size: int = 0,
    ) -> "SentencePieceModel":
        """Train on `lines` (source and target training text together, read once, as a stream)
        and save to `model_path`.

        With `sample_size` > 0 and more lines than that, SentencePiece trains on a random sample
        of `sample_size` lines (`reservoir_sample`, seeded by `seed`); otherwise on all lines in
        order, as without sampling.
        """
        if model_type not in MODEL_TYPES:
            raise ValueError(f"model_type must be one of {MODEL_TYPES}, not {model_type!r}")
        model_path = Path(model_path)
        model_path.parent.mkdir(parents=True, exist_ok=True)
        # Through a file: the sample is freed before SentencePiece makes its own copy of it.
        with tempfile.TemporaryDirectory(dir=model_path.parent, prefix=".spm-training-") as work:
            text = Path(work) / "training.txt"
            _, longest = _write_training_text(lines, sample_size, seed, text)
            model = cls._train_on_file(
                text, model_path, vocab_size, model_type, num_threads, seed, longest
            )
        atomic_write_bytes(model_path, model)
        return cls(model_path, keep_boundary_marks)

    @staticmethod
    def _train_on_file(
        text: Path,
        model_path: Path,
        vocab_size: int,
        model_type: str,
        num_threads: int,
        seed: int,
        longest: int,
    ) -> bytes:
        model = io.BytesIO()
        sentencepiece.set_random_generator_seed(seed)
        try:
            # read from the file by an iterator, not as `input=`: the model would record the
            # temporary file's name among its options, and differ from run to run
            with open(text, encoding="utf-8", newline="\n") as lines:
                sentencepiece.SentencePieceTrainer.train(
                    sentence_iterator=(line[:-1] for line in lines),
                    model_writer=model,
                    vocab_size=vocab_size,
                    model_type=model_type,
                    hard_vocab_limit=False,  # a small corpus gets a smaller vocabulary, no error
                    # every character gets a piece, and the pieces spell the input exactly
                    character_coverage=1.0,
                    normalization_rule_name="identity",
                    remove_extra_whitespaces=False,
                    byte_fallback=False,
                    # always a piece of its own (SentencePiece's doc/special_symbols.md), so no
                    # piece spans a morpheme boundary
                    user_defined_symbols=[MORPHEME_BOUNDARY],
                    # above the longest line: SentencePiece skips longer lines without a word
                    max_sentence_length=max(longest + 1, 4192),  # 4192: SentencePiece default
                    # no sampling of its own (another sample in every process, whatever the
                    # seed): `reservoir_sample` drew the lines already
                    input_sentence_size=0,
                    shuffle_input_sentence=False,
                    num_threads=num_threads,
                    minloglevel=2,
                )
        except RuntimeError as error:
            raise ValueError(f"SentencePiece training for {model_path} failed: {error}") from error
        return model.getvalue()

    @property
    def vocab_size(self) -> int:
        return self.processor.get_piece_size()

    def encode(self, line: str) -> List[str]:
        """The pieces of one line, plain or segmented (morphemes joined by MORPHEME_BOUNDARY)."""
        return self.encode_lines([line])[0]

    def encode_lines(self, lines: Sequence[str], num_threads: int = 1) -> List[List[str]]:
        """The pieces of every line, in order."""
        encoded = self.processor.encode(list(lines), out_type=str, num_threads=num_threads)
        for pieces in encoded:
            for piece in pieces:
                if MORPHEME_BOUNDARY in piece and piece != MORPHEME_BOUNDARY:
                    raise RuntimeError(
                        f"SentencePiece returned the piece {piece!r}, which spans a morpheme "
                        f"boundary, with the model {self.model_path}"
                    )
        if self.keep_boundary_marks:
            return encoded
        return [[piece for piece in pieces if piece != MORPHEME_BOUNDARY] for pieces in encoded]

    @staticmethod
    def decode(pieces: Union[str, Iterable[str]]) -> str:
        """The original line: pieces joined, word-start marks to spaces, boundary marks removed."""
        return pieces_to_text(pieces)

    def unknown_characters(self, pieces: Iterable[str]) -> str:
        """The characters of `pieces` that the model never saw in training, in order."""
        return "".join(piece for piece in pieces if piece not in self.vocabulary)


def train_or_reuse(
    training_text: Callable[[], Iterable[str]],
    model_path: Path,
    report_path: Path,
    vocab_size: int,
    model_type: str,
    num_threads: int,
    seed: int,
    keep_boundary_marks: bool,
    sample_size: int,
) -> Tuple[SentencePieceModel, Dict[str, object]]:
    """The model `SentencePieceModel.train` makes of `training_text()` (a stream, read twice),
    or the one already at `model_path` when the preparation report at `report_path` records the
    same training text and options (its `sentencepiece.training_fingerprint`), so that a
    restarted preparation does not train again. Also returns the report's figures: whether
    the model was reused, the fingerprint, training lines and sample size."""
    options = (vocab_size, model_type, seed, num_threads)
    fingerprint, lines = _training_fingerprint(training_text(), options, sample_size)
    reused = _trained_before(model_path, report_path, fingerprint)
    if reused:
        logger.info("reusing %s: same training text and options", model_path)
        model = SentencePieceModel(model_path, keep_boundary_marks)
    else:
        # The old report vouches for the old model only: a run killed while training must
        # not leave a report whose fingerprint would make the next run trust a new model.
        Path(report_path).unlink(missing_ok=True)
        logger.info(
            "training SentencePiece (%s, vocabulary %d, %d threads) on %d of %d lines",
            model_type,
            vocab_size,
            num_threads,
            min(lines, sample_size),
            lines,
        )
        model = SentencePieceModel.train(
            training_text(),
            model_path,
            vocab_size=vocab_size,
            model_type=model_type,
            num_threads=num_threads,
            seed=seed,
            keep_boundary_marks=keep_boundary_marks,
            sample_size=sample_size,
        )
    return model, {
        "model_reused": reused,
        "training_fingerprint": fingerprint,
        "training_lines": lines,
        "training_sample": min(lines, sample_size),
    }


def _training_fingerprint(
    training_text: Iterable[str], options: Tuple[object, ...], sample_size: int
) -> Tuple[str, int]:
    """sha256 of what the model is a function of, and the number of training lines."""
    text = hashlib.sha256()
    lines = 0
    for line in training_text:
        text.update(line.encode("utf-8") + b"\n")
        lines += 1
    if lines > sample_size:  # the sample size matters only where it samples
        options += (sample_size,)
    return hashlib.sha256(repr(options).encode("utf-8") + text.digest()).hexdigest(), lines


def _trained_before(model_path: Path, report_path: Path, fingerprint: str) -> bool:
    if not Path(model_path).is_file() or not Path(report_path).is_file():
        return False
    try:
        report = json.loads(Path(report_path).read_text(encoding="utf-8"))
    except json.JSONDecodeError:
        return False
    return report.get("sentencepiece", {}).get("training_fingerprint") == fingerprint
