"""The command-line options that both preparations (translation: `morph.prepare`, masked LM:
`masked_lm.prepare`) share: processes, chunks, and SentencePiece's training sample; and the
SentencePiece training that they configure."""

import argparse
from pathlib import Path
from typing import Callable, Dict, Iterable, Tuple

from fairseq_struct.morph.chunk_store import DEFAULT_CHUNK_LINES
from fairseq_struct.morph.sentencepiece_model import SentencePieceModel, train_or_reuse

# SentencePiece's training sample (its memory grows with it; the paper's 36M pairs are 72M lines).
DEFAULT_SPM_SAMPLE = 10_000_000


def add_pipeline_options(parser: argparse.ArgumentParser, workers_help: str) -> None:
    """--workers (what they run: `workers_help`), --spm-threads, --chunk-lines, --spm-sample and
    --seed; `check_pipeline_options` after parsing."""
    parser.add_argument(
        "--workers", type=int, default=1, help=f"processes for {workers_help} (default: 1)"
    )
    parser.add_argument(
        "--spm-threads",
        type=int,
        help="threads for SentencePiece training (default: --workers); the model depends on "
        "it, so keep it fixed to reproduce a model",
    )
    parser.add_argument(
        "--chunk-lines",
        type=int,
        default=DEFAULT_CHUNK_LINES,
        metavar="N",
        help="lines per chunk: what is in memory at a time, and the unit of work that a "
        f"killed run does not redo (default: {DEFAULT_CHUNK_LINES:,})",
    )
    parser.add_argument(
        "--spm-sample",
        type=int,
        default=DEFAULT_SPM_SAMPLE,
        metavar="N",
        help="SentencePiece trains on all training lines when there are at most N, else on a "
        f"seeded random sample of N (default: {DEFAULT_SPM_SAMPLE:,})",
    )
    parser.add_argument("--seed", type=int, default=1, help="SentencePiece random seed")


def check_pipeline_options(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """--spm-threads defaults to --workers; every count (and --vocab-size) must be positive."""
    if args.spm_threads is None:
        args.spm_threads = args.workers
    numbers = (args.vocab_size, args.workers, args.spm_threads, args.spm_sample, args.chunk_lines)
    if min(numbers) < 1:
        parser.error(
            "--vocab-size, --workers, --spm-threads, --spm-sample and --chunk-lines must be "
            "positive"
        )


def train_sentencepiece(
    args: argparse.Namespace,
    training_text: Callable[[], Iterable[str]],
    model_path: Path,
    report_path: Path,
    keep_boundary_marks: bool,
) -> Tuple[SentencePieceModel, Dict[str, object]]:
    """`train_or_reuse` with --vocab-size, --model-type, --spm-threads, --seed and
    --spm-sample; the model, and the training settings for the preparation report."""
    model, training = train_or_reuse(
        training_text,
        model_path,
        report_path,
        vocab_size=args.vocab_size,
        model_type=args.model_type,
        num_threads=args.spm_threads,
        seed=args.seed,
        keep_boundary_marks=keep_boundary_marks,
        sample_size=args.spm_sample,
    )
    return model, {
        **training,
        "model_type": args.model_type,
        "vocab_size_requested": args.vocab_size,
        "training_threads": args.spm_threads,
        "seed": args.seed,
    }
