"""Turn a raw parallel corpus into SentencePiece text for stock fairseq-preprocess (SPEC section 3).

    python -m fairseq_struct.morph.prepare --src-lang en --tgt-lang tr \\
        --train raw/train --valid raw/valid --test raw/test \\
        --mode morph --vocab-size 8000 --out-dir data-bin/en-tr-morph [--workers 2]

reads PREFIX.en / PREFIX.tr of each split and

1. validates every split (`corpus_io`): bad train pairs are dropped and listed, a bad valid or
   test pair stops the run;
2. in `morph` mode, segments the target side into morphemes (Turkish: Zemberek; Inuktitut:
   Morfessor Baseline learnt from the training split); the source side is never segmented;
3. trains one joint SentencePiece model on the training text of both sides;
4. encodes every split and checks that `pieces_to_text` gives back every line (with its
   whitespace normalised: one space between words, none at the edges; counted in the report);
5. writes, atomically, into --out-dir:
     spm.model                          the SentencePiece model
     {train,valid,test}.sp.{src,tgt}    pieces, the input of fairseq-preprocess
     {valid,test}.raw.{src,tgt}         the untouched raw text of the kept pairs, for sacreBLEU
     {train,valid,test}.seg.{tgt}       morph mode: the segmented target (￭ between morphemes),
                                        for morphological density (eval.density_buckets)
     prepare_report.json                what was dropped, unseen characters, long words,
                                        segmentation speed and share of split words
     morfessor.iu.segm                  Inuktitut only: the Morfessor model, reused when present
     segmentation_cache.sqlite          Turkish only: segmented lines, reused by the next run
A run that was interrupted starts again without redoing finished work: Turkish lines come from
the segmentation cache, and the SentencePiece model is reused when prepare_report.json records
the same training text and options (`training_fingerprint`).
and prints a summary. `scripts/prepare-parallel.sh` (behind prepare-en-tr.sh and
prepare-en-iu.sh) runs this and then fairseq-preprocess.
"""

import argparse
import hashlib
import json
import logging
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from fairseq_struct.cli_logging import configure_logging
from fairseq_struct.morph.corpus_io import (
    LONG_WORD_CHARS,
    CorpusError,
    ParallelSplit,
    atomic_write_bytes,
    atomic_write_json,
    atomic_write_lines,
    read_parallel,
    split_paths,
)
from fairseq_struct.morph.markers import MORPHEME_BOUNDARY, pieces_to_text
from fairseq_struct.morph.sentencepiece_model import MODEL_TYPES, SentencePieceModel

logger = logging.getLogger(__name__)

SPLITS = ("train", "valid", "test")
MODES = ("bpe", "morph")
MODEL_FILE = "spm.model"
REPORT_FILE = "prepare_report.json"
# SentencePiece's training sample (its memory grows with it; the paper's 36M pairs are 72M lines).
DEFAULT_SPM_SAMPLE = 10_000_000
# How many distinct unseen characters the report lists per split.
MAX_UNSEEN_LISTED = 200


def _segment_turkish(
    lines: Sequence[str],
    workers: int,
    segmentation_cache: Optional[str] = None,
    **_context: object,
) -> Tuple[List[str], Dict[str, object]]:
    # Imported here: bpe mode must work without zemberek installed.
    from fairseq_struct.morph.segmentation_cache import SegmentationCache
    from fairseq_struct.morph.turkish import (
        SegmentationStats,
        cache_fingerprint,
        segment_lines,
        shared_segmenter,
    )

    started = time.monotonic()
    shared_segmenter()  # built before the workers fork, so that they inherit it
    built = time.monotonic()
    stats = SegmentationStats()
    if segmentation_cache is None:
        segmented = segment_lines(lines, workers=workers, stats=stats)
    else:
        with SegmentationCache(segmentation_cache, cache_fingerprint()) as cache:
            segmented = segment_lines(lines, workers=workers, stats=stats, cache=cache)
    seconds = time.monotonic() - built
    return segmented, {
        **asdict(stats),
        "build_seconds": round(built - started, 2),
        "seconds": round(seconds, 2),
        "tokens_per_second": round(stats.tokens / seconds) if seconds > 0 else None,
        "workers": workers,
        "segmentation_cache": segmentation_cache,
    }


def _segment_inuktitut(
    lines: Sequence[str], workers: int, train_lines: int, out_dir: Path
) -> Tuple[List[str], Dict[str, object]]:
    from fairseq_struct.morph.inuktitut import segment_corpus

    # `workers` is unused: with its per-word cache the segmenter does about 12,000 words/s in
    # one process, and Morfessor's training cannot be split. It learns from the training split
    # only, so that valid and test stay unseen text.
    return segment_corpus(lines, train_lines, out_dir / INUKTITUT_MODEL_FILE)


# Inuktitut's Morfessor model, learnt on the first run and reused by later runs into --out-dir.
INUKTITUT_MODEL_FILE = "morfessor.iu.segm"

# Target languages with a morphological segmenter, called as
# `segment(lines, workers, train_lines=N, out_dir=DIR)`: the target lines of train, valid and
# test in that order, of which the first N are the training split (all that a segmenter that
# learns may learn from), and the directory where it may keep what it learnt. Segmented lines
# and statistics come out. Segmenters in CACHING_SEGMENTERS also take
# `segmentation_cache=FILE` (by default a file in the output directory).
SEGMENTERS: Dict[str, Callable[..., Tuple[List[str], Dict[str, object]]]] = {
    "tr": _segment_turkish,
    "iu": _segment_inuktitut,
}
CACHING_SEGMENTERS = frozenset({"tr"})
DEFAULT_SEGMENTATION_CACHE = "segmentation_cache.sqlite"


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m fairseq_struct.morph.prepare",
        description="Validate, (morphologically) segment and SentencePiece-encode a parallel "
        "corpus for stock fairseq-preprocess.",
    )
    parser.add_argument("--src-lang", default="en", help="source language suffix (default: en)")
    parser.add_argument("--tgt-lang", default="tr", help="target language suffix (default: tr)")
    for split in SPLITS:
        parser.add_argument(
            f"--{split}",
            required=True,
            metavar="PREFIX",
            help=f"{split} split: PREFIX.SRC_LANG and PREFIX.TGT_LANG, raw UTF-8, one sentence "
            "a line",
        )
    parser.add_argument(
        "--mode",
        choices=MODES,
        default="morph",
        help="bpe: SentencePiece only; morph: segment the target side into morphemes first "
        "(default: morph)",
    )
    parser.add_argument("--vocab-size", type=int, default=8000, help="joint vocabulary size")
    parser.add_argument(
        "--model-type", choices=MODEL_TYPES, default="unigram", help="SentencePiece model type"
    )
    parser.add_argument(
        "--keep-boundary-marks",
        action="store_true",
        help="keep the morpheme boundary mark as a token of its own (default: dropped; the "
        "pieces still never cross a boundary)",
    )
    parser.add_argument(
        "--spm-model",
        metavar="PATH",
        help="encode with this existing SentencePiece model instead of training one (e.g. "
        "fine-tuning data for a pretrained model); its boundary-mark setting is read from the "
        "prepare_report.json next to it; --vocab-size and --model-type are then ignored",
    )
    parser.add_argument("--out-dir", required=True, help="where the outputs are written")
    parser.add_argument(
        "--workers",
        type=int,
        default=1,
        help="processes for segmentation and threads for encoding (default: 1)",
    )
    parser.add_argument(
        "--spm-threads",
        type=int,
        default=1,
        help="threads for SentencePiece training; the model depends on it, so keep it fixed to "
        "reproduce a model (default: 1)",
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
    parser.add_argument(
        "--segmentation-cache",
        metavar="FILE",
        help="sqlite3 file of segmented lines kept across runs: lines segmented by an earlier "
        "run with the same analyser are taken from it, new ones are added (Turkish only; "
        f"default: OUT_DIR/{DEFAULT_SEGMENTATION_CACHE}, so that an interrupted run starts "
        "again where it stopped)",
    )
    parser.add_argument(
        "--no-segmentation-cache",
        action="store_true",
        help="segment every line again and keep no cache (it takes about twice the size of the "
        "segmented text on disk)",
    )
    args = parser.parse_args(argv)
    if min(args.vocab_size, args.workers, args.spm_threads, args.spm_sample) < 1:
        parser.error("--vocab-size, --workers, --spm-threads and --spm-sample must be positive")
    if args.mode == "morph" and args.tgt_lang not in SEGMENTERS:
        parser.error(
            f"--mode morph has no segmenter for --tgt-lang {args.tgt_lang!r} "
            f"(available: {', '.join(sorted(SEGMENTERS))}); use --mode bpe"
        )
    if args.segmentation_cache is not None and args.tgt_lang not in CACHING_SEGMENTERS:
        parser.error(f"--segmentation-cache is not supported for --tgt-lang {args.tgt_lang!r}")
    return args


def _training_fingerprint(training_text: Sequence[str], args: argparse.Namespace) -> str:
    """sha256 of what the SentencePiece model is a function of."""
    digest = hashlib.sha256()
    options = (args.vocab_size, args.model_type, args.seed, args.spm_threads)
    if len(training_text) > args.spm_sample:  # the sample size matters only where it samples
        options += (args.spm_sample,)
    digest.update(repr(options + (args.keep_boundary_marks,)).encode("utf-8"))
    for line in training_text:
        digest.update(line.encode("utf-8"))
        digest.update(b"\n")
    return digest.hexdigest()


def _trained_before(out_dir: Path, fingerprint: str) -> bool:
    report_path = out_dir / REPORT_FILE
    if not (out_dir / MODEL_FILE).is_file() or not report_path.is_file():
        return False
    try:
        report = json.loads(report_path.read_text(encoding="utf-8"))
    except json.JSONDecodeError:
        return False
    return report.get("sentencepiece", {}).get("training_fingerprint") == fingerprint


def _existing_model(source: Path, destination: Path) -> SentencePieceModel:
    """The model that encoded earlier data, copied into this output directory.

    Its boundary-mark setting must be the one it was used with, so it comes from the
    prepare_report.json written next to it, not from this run's options.
    """
    if not source.is_file():
        raise CorpusError(f"{source}: no such SentencePiece model")
    report_path = source.parent / REPORT_FILE
    if not report_path.is_file():
        raise CorpusError(
            f"{report_path}: missing; --spm-model needs the prepare_report.json of the run that "
            "trained the model (it records whether boundary marks were kept)"
        )
    settings = json.loads(report_path.read_text(encoding="utf-8"))["sentencepiece"]
    destination.parent.mkdir(parents=True, exist_ok=True)
    if source.resolve() != destination.resolve():
        atomic_write_bytes(destination, source.read_bytes())
    return SentencePieceModel(destination, keep_boundary_marks=settings["keep_boundary_marks"])


def prepare(args: argparse.Namespace) -> Dict[str, object]:
    """Run all steps; returns the report that is also written to prepare_report.json."""
    out_dir = Path(args.out_dir)
    src, tgt = args.src_lang, args.tgt_lang
    splits: Dict[str, ParallelSplit] = {}
    for split in SPLITS:
        source_path, target_path = split_paths(getattr(args, split), src, tgt)
        splits[split] = read_parallel(source_path, target_path, split, split == "train")
        logger.info("%s: %d pairs kept", split, splits[split].report.pairs_kept)

    # What SentencePiece sees: the source as it is, the target segmented in morph mode.
    texts = {split: {src: splits[split].source, tgt: splits[split].target} for split in SPLITS}
    segmentation: Optional[Dict[str, object]] = None
    if args.mode == "morph":
        everything = [line for split in SPLITS for line in splits[split].target]
        logger.info("segmenting %d %s lines with %d worker(s)", len(everything), tgt, args.workers)
        context: Dict[str, object] = {
            "train_lines": len(splits["train"].target),
            "out_dir": out_dir,
        }
        if tgt in CACHING_SEGMENTERS and not args.no_segmentation_cache:
            out_dir.mkdir(parents=True, exist_ok=True)
            context["segmentation_cache"] = str(
                args.segmentation_cache or out_dir / DEFAULT_SEGMENTATION_CACHE
            )
        segmented, stats = SEGMENTERS[tgt](everything, args.workers, **context)
        segmentation = {**stats, **_word_split_counts(segmented)}
        lines = iter(segmented)
        for split in SPLITS:
            texts[split][tgt] = [next(lines) for _ in splits[split].target]
            # Kept for the analyses: morphological density of the references (eval/).
            atomic_write_lines(out_dir / f"{split}.seg.{tgt}", texts[split][tgt])

    if args.spm_model is not None:
        model = _existing_model(Path(args.spm_model), out_dir / MODEL_FILE)
        args.keep_boundary_marks = model.keep_boundary_marks
    else:
        training_text = texts["train"][src] + texts["train"][tgt]
        fingerprint = _training_fingerprint(training_text, args)
        if _trained_before(out_dir, fingerprint):
            logger.info("reusing %s: same training text and options", out_dir / MODEL_FILE)
            model = SentencePieceModel(out_dir / MODEL_FILE, args.keep_boundary_marks)
        else:
            # The old report vouches for the old model only: a run killed while training must
            # not leave a report whose fingerprint would make the next run trust a new model.
            (out_dir / REPORT_FILE).unlink(missing_ok=True)
            logger.info(
                "training SentencePiece (%s, vocabulary %d)", args.model_type, args.vocab_size
            )
            model = SentencePieceModel.train(
                training_text,
                out_dir / MODEL_FILE,
                vocab_size=args.vocab_size,
                model_type=args.model_type,
                num_threads=args.spm_threads,
                seed=args.seed,
                keep_boundary_marks=args.keep_boundary_marks,
                sample_size=args.spm_sample,
            )

    encoded: Dict[str, Dict[str, List[List[str]]]] = {}
    for split in SPLITS:
        # The pieces spell the whitespace-normalised line; scoring reads the untouched one.
        normalised = {src: splits[split].source, tgt: splits[split].target}
        untouched = {src: splits[split].raw_source, tgt: splits[split].raw_target}
        encoded[split] = {}
        for lang, lines in texts[split].items():
            pieces = model.encode_lines(lines, num_threads=args.workers)
            path = out_dir / f"{split}.sp.{lang}"
            _check_round_trip(pieces, normalised[lang], path)
            atomic_write_lines(path, (" ".join(line_pieces) for line_pieces in pieces))
            if split != "train":
                atomic_write_lines(out_dir / f"{split}.raw.{lang}", untouched[lang])
            encoded[split][lang] = pieces

    piece_counts = _piece_counts(model, encoded)
    report = {
        "mode": args.mode,
        "source_lang": src,
        "target_lang": tgt,
        "sentencepiece": {
            "model": str(out_dir / MODEL_FILE),
            "copied_from": args.spm_model,
            "training_fingerprint": None if args.spm_model else fingerprint,
            "model_type": None if args.spm_model else args.model_type,
            "vocab_size_requested": None if args.spm_model else args.vocab_size,
            "vocab_size": model.vocab_size,
            "keep_boundary_marks": args.keep_boundary_marks,
            "training_threads": args.spm_threads,
            "training_lines": None if args.spm_model else len(training_text),
            "training_sample": (
                None if args.spm_model else min(len(training_text), args.spm_sample)
            ),
            "seed": args.seed,
        },
        "splits": {
            split: {**asdict(splits[split].report), "encoded": piece_counts[split]}
            for split in SPLITS
        },
        "segmentation": segmentation,
    }
    atomic_write_json(out_dir / REPORT_FILE, report)
    return report


def _piece_counts(
    model: SentencePieceModel, encoded: Dict[str, Dict[str, List[List[str]]]]
) -> Dict[str, Dict[str, Dict[str, object]]]:
    """Per split and language: pieces, pieces fairseq maps to <unk>, never-seen characters."""
    # fairseq-preprocess --joined-dictionary maps every piece missing from the training text to
    # <unk>: unseen characters, and pieces of the vocabulary that the training text never used.
    train_pieces = {piece for side in encoded["train"].values() for line in side for piece in line}
    counts: Dict[str, Dict[str, Dict[str, object]]] = {}
    for split, sides in encoded.items():
        counts[split] = {}
        for lang, pieces in sides.items():
            unseen = "".join(model.unknown_characters(line_pieces) for line_pieces in pieces)
            counts[split][lang] = {
                "pieces": sum(len(line_pieces) for line_pieces in pieces),
                "pieces_not_in_train": sum(
                    piece not in train_pieces for line_pieces in pieces for piece in line_pieces
                ),
                "unseen_characters": len(unseen),
                "unseen_character_set": "".join(sorted(set(unseen)))[:MAX_UNSEEN_LISTED],
            }
    return counts


def _word_split_counts(segmented: Sequence[str]) -> Dict[str, object]:
    """Whitespace words, how many got split into more than one morpheme, and morphemes per word."""
    words = split_words = boundaries = 0
    for line in segmented:
        for word in line.split(" "):
            if word:
                words += 1
                marks = word.count(MORPHEME_BOUNDARY)
                boundaries += marks
                split_words += marks > 0
    return {
        "words": words,
        "split_words": split_words,
        "split_word_share": round(split_words / words, 4) if words else 0.0,
        "morphemes_per_word": round((words + boundaries) / words, 4) if words else 0.0,
    }


def _check_round_trip(encoded: Sequence[List[str]], raw: Sequence[str], path: Path) -> None:
    for number, (pieces, line) in enumerate(zip(encoded, raw), start=1):
        if pieces_to_text(pieces) != line:
            raise RuntimeError(
                f"{path}:{number}: the pieces do not spell the raw line again: "
                f"{pieces_to_text(pieces)!r} != {line!r}"
            )


def format_summary(report: Dict[str, object]) -> str:
    """A few readable lines: what was kept and dropped, unseen characters, segmentation."""
    lines = []
    piece_model = report["sentencepiece"]
    lines.append(
        f"mode {report['mode']}: SentencePiece {piece_model['model_type']} with "
        f"{piece_model['vocab_size']} pieces (asked for {piece_model['vocab_size_requested']}), "
        f"boundary marks {'kept' if piece_model['keep_boundary_marks'] else 'dropped'}"
        + (
            f", trained on {piece_model['training_sample']} of {piece_model['training_lines']} "
            "lines"
            if piece_model["training_lines"] is not None
            else ""
        )
    )
    for split, split_report in report["splits"].items():
        dropped = split_report["pairs_read"] - split_report["pairs_kept"]
        reasons = ", ".join(f"{n} {kind}" for kind, n in split_report["dropped_by_reason"].items())
        lines.append(
            f"{split}: {split_report['pairs_kept']} pairs kept, {dropped} dropped"
            + (f" ({reasons})" if reasons else "")
            + f", {split_report['long_words']} words over {LONG_WORD_CHARS} characters"
            + f", {split_report['whitespace_normalised']} lines with whitespace normalised"
        )
        for lang, counts in split_report["encoded"].items():
            if counts["pieces_not_in_train"]:
                note = (
                    f"{counts['pieces_not_in_train']} of {counts['pieces']} pieces not in the "
                    "training text (<unk> for fairseq)"
                )
                if counts["unseen_characters"]:
                    note += (
                        f"; {counts['unseen_characters']} never-seen characters "
                        f"{counts['unseen_character_set']!r}"
                    )
                lines.append(f"  {lang}: {note}")
    segmentation = report["segmentation"]
    if segmentation is not None:
        lines.append(
            f"segmentation: {segmentation['tokens']} tokens in {segmentation['seconds']} s "
            f"({segmentation['tokens_per_second']} tokens/s, {segmentation['workers']} "
            f"worker(s), after {segmentation['build_seconds']} s building the segmenter); "
            f"{segmentation['split_word_share']:.1%} of {segmentation['words']} words split, "
            f"{segmentation['morphemes_per_word']} morphemes per word"
        )
    return "\n".join(lines)


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    configure_logging()  # also when main() is called from Python (the tests do)
    try:
        report = prepare(args)
    except CorpusError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(format_summary(report))
    print(f"report: {Path(args.out_dir) / REPORT_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
