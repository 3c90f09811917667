"""Turn a raw parallel corpus into SentencePiece text for stock fairseq-preprocess (design.md §3).

    fairseq-struct prepare --src-lang en --tgt-lang tr \\
        --train raw/train --valid raw/valid --test raw/test \\
        --mode morph --vocab-size 8000 --out-dir data-bin/en-tr-morph [--workers 2]

checks PREFIX.en / PREFIX.tr of each split, segments the target side (morph mode), trains one
joint SentencePiece model and encodes every split, chunk by chunk (docs/translation.md). Written
atomically into --out-dir:
    spm.model                          the SentencePiece model
    {train,valid,test}.sp.{src,tgt}    pieces, the input of fairseq-preprocess
    {valid,test}.raw.{src,tgt}         the untouched raw text of the kept pairs, for sacreBLEU
    {train,valid,test}.seg.{tgt}       morph mode: the segmented target, for eval.density_buckets
    prepare_report.json                what was dropped and counted, stage times, and the decoding
                                       length limit fitted to the training pairs (`decoding_length`)
    morfessor.iu.segm                  Inuktitut only: the Morfessor model, reused when present
    segmentation_cache.sqlite          Turkish only: segmented lines, reused by the next run
"""

import argparse
import json
import logging
import sys
import time
from collections import Counter
from contextlib import ExitStack
from dataclasses import asdict
from functools import partial
from itertools import islice
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

from fairseq_struct.cli_logging import configure_logging
from fairseq_struct.commands import program_name
from fairseq_struct.corpus_io import (
    LONG_WORD_CHARS,
    CorpusError,
    SplitReport,
    atomic_write_bytes,
    atomic_write_json,
    atomic_write_lines,
    atomic_writer,
    count_lines,
    iter_parallel,
    split_paths,
)
from fairseq_struct.morph import chunk_encoding
from fairseq_struct.morph.chunk_store import (
    ChunkStats,
    ChunkStore,
    process_chunk,
    read_chunk,
    run_chunk_stage,
)
from fairseq_struct.morph.length_limit import decoding_length
from fairseq_struct.morph.pipeline_options import (
    add_pipeline_options,
    check_pipeline_options,
    train_sentencepiece,
)
from fairseq_struct.morph.segmenters import (
    CACHING_SEGMENTERS,
    DEFAULT_SEGMENTATION_CACHE,
    SEGMENTED_LANGUAGES,
    ChunkSegmenter,
    open_segmenter,
)
from fairseq_struct.morph.sentencepiece_model import MODEL_TYPES, SentencePieceModel
from fairseq_struct.pieces.markers import MORPHEME_BOUNDARY
from fairseq_struct.progress import StageProgress

logger = logging.getLogger(__name__)

SPLITS = ("train", "valid", "test")
MODES = ("bpe", "morph")
MODEL_FILE = "spm.model"
REPORT_FILE = "prepare_report.json"
# How many distinct unseen characters the report lists per split.
MAX_UNSEEN_LISTED = 200
# Chunks of a run in progress, under OUT_DIR (chunk_store); removed when the run completes.
WORK_DIR = ".prepare-work"
SEGMENT_STAGE = "segment"


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog=program_name("fairseq_struct.morph.prepare"),
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
    add_pipeline_options(parser, "segmentation, encoding and the round-trip check")
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
    check_pipeline_options(parser, args)
    if args.mode == "morph" and args.tgt_lang not in SEGMENTED_LANGUAGES:
        parser.error(
            f"--mode morph has no segmenter for --tgt-lang {args.tgt_lang!r} "
            f"(available: {', '.join(SEGMENTED_LANGUAGES)}); use --mode bpe"
        )
    if args.segmentation_cache is not None and args.tgt_lang not in CACHING_SEGMENTERS:
        parser.error(f"--segmentation-cache is not supported for --tgt-lang {args.tgt_lang!r}")
    return args


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
    out_dir.mkdir(parents=True, exist_ok=True)
    store = ChunkStore(out_dir / WORK_DIR)
    stage_seconds: Dict[str, float] = {}
    sides = (args.src_lang, args.tgt_lang)

    paths = {split: split_paths(getattr(args, split), *sides) for split in SPLITS}
    total = sum(count_lines(source) for source, _ in paths.values())
    with StageProgress("read and check", total, unit="pairs") as progress:
        reads = {
            split: _read_split(split, *paths[split], args, store, progress) for split in SPLITS
        }
    stage_seconds["read"] = progress.seconds
    chunks = {split: chunk_count for split, (_, chunk_count) in reads.items()}
    reports = {split: report for split, (report, _) in reads.items()}
    for split, report in reports.items():
        logger.info("%s: %d pairs kept", split, report.pairs_kept)

    # What SentencePiece reads, chunk by chunk: the source as it is, the target segmented in
    # morph mode; and the normalised lines that the pieces must spell again.
    normalised = {
        split: {
            side: [store.input_path(split, side, i) for i in range(chunks[split])] for side in sides
        }
        for split in SPLITS
    }
    text = {split: dict(normalised[split]) for split in SPLITS}
    segmentation: Optional[Dict[str, object]] = None
    if args.mode == "morph":
        pairs = sum(report.pairs_kept for report in reports.values())
        with StageProgress("segment", pairs) as progress:
            segmentation, segmented = _segment_target(args, store, normalised, progress)
        stage_seconds["segment"] = progress.seconds
        for split in SPLITS:
            text[split][args.tgt_lang] = segmented[split]

    started = time.monotonic()
    model, piece_model = _sentencepiece_model(args, out_dir, text["train"])
    stage_seconds["sentencepiece"] = time.monotonic() - started

    pieces = 2 * sum(report.pairs_kept for report in reports.values())
    with StageProgress("encode", pieces) as progress:
        counts, encoding = _encode(args, model, store, text, normalised, progress)
    stage_seconds["encode"] = progress.seconds

    encoded = _piece_counts(model, counts)
    report = {
        "mode": args.mode,
        "source_lang": args.src_lang,
        "target_lang": args.tgt_lang,
        "sentencepiece": piece_model,
        "splits": {
            split: {**asdict(reports[split]), "encoded": encoded[split]} for split in SPLITS
        },
        "segmentation": segmentation,
        "encoding": encoding,
        "chunk_lines": args.chunk_lines,
        "workers": args.workers,
        "stage_seconds": {stage: round(seconds, 2) for stage, seconds in stage_seconds.items()},
        "decoding_length": decoding_length(
            out_dir / f"train.sp.{args.src_lang}", out_dir / f"train.sp.{args.tgt_lang}"
        ),
    }
    atomic_write_json(out_dir / REPORT_FILE, report)
    store.remove()
    return report


def _read_split(
    split: str,
    source_path: Path,
    target_path: Path,
    args: argparse.Namespace,
    store: ChunkStore,
    progress: StageProgress,
) -> Tuple[SplitReport, int]:
    """Check and normalise one split into chunk files (and valid/test's untouched text into
    OUT_DIR/{split}.raw.*); the split's report and its number of chunks."""
    report = SplitReport(split, str(source_path), str(target_path))
    pairs = iter_parallel(source_path, target_path, report, drop_bad_pairs=split == "train")
    sides = (args.src_lang, args.tgt_lang)
    chunk_count = 0
    with ExitStack() as files:
        raw_files = []
        if split != "train":  # scores are computed against what the user gave
            raw_files = [
                files.enter_context(atomic_writer(Path(args.out_dir) / f"{split}.raw.{side}"))
                for side in sides
            ]
        read_before = 0
        while True:
            chunk = list(islice(pairs, args.chunk_lines))
            if not chunk:
                break
            for index, side in enumerate(sides):
                atomic_write_lines(
                    store.input_path(split, side, chunk_count), (pair[index] for pair in chunk)
                )
            for index, raw_file in enumerate(raw_files, start=2):  # raw_source, raw_target
                raw_file.write("".join(pair[index] + "\n" for pair in chunk).encode("utf-8"))
            chunk_count += 1
            progress.update(report.pairs_read - read_before)
            read_before = report.pairs_read
    return report, chunk_count


def _segment_target(
    args: argparse.Namespace,
    store: ChunkStore,
    normalised: Dict[str, Dict[str, List[Path]]],
    progress: StageProgress,
) -> Tuple[Dict[str, object], Dict[str, List[Path]]]:
    """Segment the target side chunk by chunk into OUT_DIR/{split}.seg.{tgt}; the segmentation
    report and the segmented chunks of each split."""
    out_dir, tgt = Path(args.out_dir), args.tgt_lang
    cache = None
    if tgt in CACHING_SEGMENTERS and not args.no_segmentation_cache:
        cache = str(args.segmentation_cache or out_dir / DEFAULT_SEGMENTATION_CACHE)

    def training_lines() -> Iterator[str]:  # what a learning segmenter learns from
        return (line for path in normalised["train"][tgt] for line in read_chunk(path))

    segmented, built, totals, chunks = segment_chunks(
        store,
        open_segmenter(tgt, args.workers, out_dir, training_lines, cache),
        _segment_chunk,
        {split: normalised[split][tgt] for split in SPLITS},
        progress,
        # Kept for the analyses: morphological density of the references (eval/).
        lambda split: out_dir / f"{split}.seg.{tgt}",
    )
    seconds = max(progress.seconds - float(built["build_seconds"]), 1e-9)
    words = totals["words"]
    return {
        **built,
        **totals,
        "seconds": round(seconds, 2),
        "tokens_per_second": round(totals["tokens"] / seconds),
        "split_word_share": round(totals["split_words"] / words, 4) if words else 0.0,
        "morphemes_per_word": round((words + totals["boundaries"]) / words, 4) if words else 0.0,
        **chunks,
    }, segmented


def segment_chunks(
    store: ChunkStore,
    segmenter: ChunkSegmenter,
    segment_chunk: Callable[[Any, Sequence[str]], Tuple[List[str], ChunkStats]],
    chunks: Dict[str, List[Path]],
    progress: StageProgress,
    destination: Optional[Callable[[str], Path]] = None,
) -> Tuple[Dict[str, List[Path]], Dict[str, object], Counter, Dict[str, int]]:
    """The segmentation stage of both preparations: each split's `chunks` through
    `segment_chunk(segmenter, lines)` -> (segmented lines, counters), with `segmenter` (from
    `open_segmenter`, closed here), into `destination(split)` where given. Returns the segmented
    chunks of each split, the segmenter's report, its counters summed, and the chunks done and
    reused."""
    totals: Counter = Counter()
    with segmenter:
        fingerprint = f"{SEGMENT_STAGE}:{segmenter.fingerprint}"
        compute = partial(segment_chunk, segmenter)
        # In this process (the segmenter spreads each chunk over its own workers).
        segmented, counts = run_chunk_stage(
            store,
            SEGMENT_STAGE,
            lambda path: process_chunk(store, SEGMENT_STAGE, fingerprint, [path], compute),
            chunks,
            progress,
            lambda split, stats: totals.update(stats),
            destination,
        )
        built = segmenter.report()
    return segmented, built, totals, counts


def _segment_chunk(segmenter: Any, lines: Sequence[str]) -> Tuple[List[str], Dict[str, int]]:
    segmented, counters = segmenter.segment(lines)
    return segmented, {**counters, **_word_split_counts(segmented)}


def _word_split_counts(segmented: Sequence[str]) -> Dict[str, int]:
    """Whitespace words, how many got split into more than one morpheme, and the boundaries."""
    words = split_words = boundaries = 0
    for line in segmented:
        for word in line.split(" "):
            if word:
                words += 1
                marks = word.count(MORPHEME_BOUNDARY)
                boundaries += marks
                split_words += marks > 0
    return {"words": words, "split_words": split_words, "boundaries": boundaries}


def _sentencepiece_model(
    args: argparse.Namespace, out_dir: Path, train_text: Dict[str, List[Path]]
) -> Tuple[SentencePieceModel, Dict[str, object]]:
    """The model (trained, reused from an earlier run, or given) and its part of the report."""
    settings: Dict[str, object] = {
        "model": str(out_dir / MODEL_FILE),
        "copied_from": args.spm_model,
        "training_fingerprint": None,
        "model_type": None,
        "vocab_size_requested": None,
        "training_threads": None,
        "training_lines": None,
        "training_sample": None,
        "seed": args.seed,
    }
    if args.spm_model is not None:
        model = _existing_model(Path(args.spm_model), out_dir / MODEL_FILE)
        args.keep_boundary_marks = model.keep_boundary_marks
    else:
        # Source training lines, then target ones: the order SentencePiece has always read.
        chunk_paths = train_text[args.src_lang] + train_text[args.tgt_lang]

        def training_text() -> Iterator[str]:
            return (line for path in chunk_paths for line in read_chunk(path))

        model, training = train_sentencepiece(
            args,
            training_text,
            out_dir / MODEL_FILE,
            out_dir / REPORT_FILE,
            args.keep_boundary_marks,
        )
        settings.update(training)
    settings.update(vocab_size=model.vocab_size, keep_boundary_marks=args.keep_boundary_marks)
    return model, settings


def _encode(
    args: argparse.Namespace,
    model: SentencePieceModel,
    store: ChunkStore,
    text: Dict[str, Dict[str, List[Path]]],
    normalised: Dict[str, Dict[str, List[Path]]],
    progress: StageProgress,
) -> Tuple[Dict[str, Dict[str, Counter]], Dict[str, int]]:
    """Encode every chunk over --workers processes into OUT_DIR/{split}.sp.{lang}; the pieces
    counted per split and language, and the chunks encoded and reused."""
    out_dir = Path(args.out_dir)

    def output(group: Tuple[str, str]) -> Path:  # group: (split, side)
        return out_dir / "{}.sp.{}".format(*group)

    fingerprint = chunk_encoding.use_model(model)  # before the helpers fork
    tasks = {
        (split, side): [
            chunk_encoding.EncodeTask(
                store.directory,
                fingerprint,
                chunk_path,
                normalised[split][side][index],
                str(output((split, side))),
                index * args.chunk_lines + 1,
            )
            for index, chunk_path in enumerate(chunk_paths)
        ]
        for split in SPLITS
        for side, chunk_paths in text[split].items()
    }
    counts: Dict[str, Dict[str, Counter]] = {
        split: {side: Counter() for side in text[split]} for split in SPLITS
    }
    _, chunks = run_chunk_stage(
        store,
        chunk_encoding.STAGE,
        chunk_encoding.encode_chunk,
        tasks,
        progress,
        lambda group, stats: counts[group[0]][group[1]].update(stats["pieces"]),
        output,
        args.workers,
    )
    logger.info(
        "encoded %d chunks (%d done by an earlier run)", chunks["chunks"], chunks["chunks_reused"]
    )
    return counts, chunks


def _piece_counts(
    model: SentencePieceModel, counts: Dict[str, Dict[str, Counter]]
) -> Dict[str, Dict[str, Dict[str, object]]]:
    """Per split and language: pieces, pieces fairseq maps to <unk>, never-seen characters."""
    # fairseq-preprocess --joined-dictionary maps every piece missing from the training text to
    # <unk>: unseen characters, and pieces of the vocabulary that the training text never used.
    train_pieces = {piece for side in counts["train"].values() for piece in side}
    result: Dict[str, Dict[str, Dict[str, object]]] = {}
    for split, sides in counts.items():
        result[split] = {}
        for side, pieces in sides.items():
            # a piece outside the vocabulary is the surface text of never-seen characters
            unseen = {piece: n for piece, n in pieces.items() if piece not in model.vocabulary}
            result[split][side] = {
                "pieces": sum(pieces.values()),
                "pieces_not_in_train": sum(
                    n for piece, n in pieces.items() if piece not in train_pieces
                ),
                "unseen_characters": sum(len(piece) * n for piece, n in unseen.items()),
                "unseen_character_set": "".join(sorted(set("".join(unseen))))[:MAX_UNSEEN_LISTED],
            }
    return result


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
    times = ", ".join(f"{stage} {seconds} s" for stage, seconds in report["stage_seconds"].items())
    lines.append(f"stages ({report['workers']} worker(s)): {times}")
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
