"""Clean a raw parallel training corpus the way Moses' clean-corpus-n.perl does, with a report.

    fairseq-struct clean-corpus --src raw/OpenSubtitles.en-tr.en \\
        --tgt raw/OpenSubtitles.en-tr.tr --out-prefix raw/clean --min 1 --max 80 --ratio 9

streams the pairs into PREFIX.SRC_LANG, PREFIX.TGT_LANG and PREFIX.report.json. After whitespace
normalisation a pair is removed for the first of REASONS that applies: invalid UTF-8, a reserved
mark (U+FFED, U+2581), an empty side, fewer than --min or more than --max tokens on a side, a
token ratio above --ratio, or (--dedup, 16 bytes of memory per distinct pair) an exact repeat.
"""

import argparse
import hashlib
import os
import re
import sys
import tempfile
from contextlib import ExitStack, contextmanager
from itertools import zip_longest
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Sequence, Tuple, Union

from fairseq_struct.commands import program_name
from fairseq_struct.corpus_io import (
    RESERVED_CHARACTERS,
    CorpusError,
    atomic_write_json,
    count_lines,
)
from fairseq_struct.progress import StageProgress

PathLike = Union[str, Path]

# How many removed line numbers the report lists per reason; all are counted.
LISTED_PER_REASON = 20
MOSES_DEFAULT_RATIO = 9.0
REASONS = (
    "invalid UTF-8",
    "reserved character",
    "empty side",
    "too short",
    "too long",
    "length ratio",
    "duplicate pair",
)
_WHITESPACE_RUN = re.compile(r"\s+")


@contextmanager
def atomic_outputs(paths: Sequence[PathLike], binary: bool = False) -> Iterator[List]:
    """Files opened for streaming (UTF-8 text, or bytes); all appear at their paths only if the
    block succeeds, so an interrupted run never leaves a truncated corpus behind."""
    temporaries: List[Tuple[str, Path]] = []
    with ExitStack() as stack:
        files = []
        for path in map(Path, paths):
            path.parent.mkdir(parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
            temporaries.append((temporary, path))
            files.append(
                stack.enter_context(
                    open(handle, "wb") if binary else open(handle, "w", encoding="utf-8")
                )
            )
        try:
            yield files
        except BaseException:
            stack.close()
            for temporary, _ in temporaries:
                os.unlink(temporary)
            raise
    for temporary, path in temporaries:
        os.replace(temporary, path)


def normalize_whitespace(line: str) -> str:
    """clean-corpus-n: `s/\\s+/ /g; s/^ //; s/ $//`."""
    return _WHITESPACE_RUN.sub(" ", line).strip(" ")


def removal_reason(
    source: str, target: str, min_tokens: int, max_tokens: int, ratio: float
) -> Optional[str]:
    """Why clean-corpus-n would drop the (whitespace-normalised) pair, or None to keep it."""
    if any(char in side for side in (source, target) for char in RESERVED_CHARACTERS):
        return "reserved character"
    if not source or not target:
        return "empty side"
    source_tokens, target_tokens = len(source.split(" ")), len(target.split(" "))
    if min(source_tokens, target_tokens) < min_tokens:
        return "too short"
    if max(source_tokens, target_tokens) > max_tokens:
        return "too long"
    if max(source_tokens / target_tokens, target_tokens / source_tokens) > ratio:
        return "length ratio"
    return None


def clean_parallel(
    source_path: PathLike,
    target_path: PathLike,
    out_source: PathLike,
    out_target: PathLike,
    min_tokens: int = 1,
    max_tokens: int = 80,
    ratio: float = MOSES_DEFAULT_RATIO,
    dedup: bool = False,
) -> Dict[str, object]:
    """Stream the pair of files through the filters; returns the report (also the JSON written
    by `main`). Raises CorpusError when the files are not line-aligned."""
    removed: Dict[str, int] = {reason: 0 for reason in REASONS}
    examples: Dict[str, List[int]] = {reason: [] for reason in REASONS}
    seen = set()
    read = kept = 0
    total = count_lines(source_path)  # a fast block count, for the progress bar's ETA
    with ExitStack() as stack:
        source_file = stack.enter_context(open(source_path, "rb"))
        target_file = stack.enter_context(open(target_path, "rb"))
        source_out, target_out = stack.enter_context(atomic_outputs([out_source, out_target]))
        progress = stack.enter_context(StageProgress("cleaning", total=total, unit="pairs"))
        for number, (raw_source, raw_target) in enumerate(
            _aligned(source_file, target_file, source_path, target_path), start=1
        ):
            read += 1
            progress.update()
            try:
                source = normalize_whitespace(raw_source.decode("utf-8"))
                target = normalize_whitespace(raw_target.decode("utf-8"))
                reason = removal_reason(source, target, min_tokens, max_tokens, ratio)
            except UnicodeDecodeError:
                reason = "invalid UTF-8"
            if reason is None and dedup:
                digest = hashlib.blake2b(f"{source}\n{target}".encode(), digest_size=16).digest()
                if digest in seen:
                    reason = "duplicate pair"
                seen.add(digest)
            if reason is not None:
                removed[reason] += 1
                if len(examples[reason]) < LISTED_PER_REASON:
                    examples[reason].append(number)
                continue
            source_out.write(source + "\n")
            target_out.write(target + "\n")
            kept += 1
    return {
        "source": str(source_path),
        "target": str(target_path),
        "output_source": str(out_source),
        "output_target": str(out_target),
        "settings": {"min": min_tokens, "max": max_tokens, "ratio": ratio, "dedup": dedup},
        "pairs_read": read,
        "pairs_kept": kept,
        "removed": {reason: n for reason, n in removed.items() if n},
        "first_removed_lines": {reason: lines for reason, lines in examples.items() if lines},
    }


def _aligned(source_file, target_file, source_path: PathLike, target_path: PathLike):
    """Pairs of raw lines without their line endings; CorpusError if one file ends early."""
    for number, (source, target) in enumerate(zip_longest(source_file, target_file), start=1):
        if source is None or target is None:
            longer, shorter = (
                (target_path, source_path) if source is None else (source_path, target_path)
            )
            raise CorpusError(
                f"{longer}:{number}: {shorter} ends after {number - 1} lines but {longer} goes "
                "on; the files of a parallel corpus must be line-aligned"
            )
        yield source.rstrip(b"\r\n"), target.rstrip(b"\r\n")


def language_of(path: PathLike) -> str:
    """The language suffix of a corpus file: `OpenSubtitles.en-tr.tr` -> `tr`."""
    return Path(path).suffix.lstrip(".")


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog=program_name("fairseq_struct.corpora.clean_corpus"),
        description="Remove empty, too short, too long and badly proportioned sentence pairs "
        "(Moses clean-corpus-n), optionally exact duplicates, with a JSON report.",
    )
    parser.add_argument("--src", required=True, help="source-side file, one sentence a line")
    parser.add_argument("--tgt", required=True, help="target-side file, line-aligned with --src")
    parser.add_argument(
        "--out-prefix",
        required=True,
        help="writes PREFIX.SRC_LANG, PREFIX.TGT_LANG and PREFIX.report.json",
    )
    parser.add_argument("--src-lang", help="source suffix (default: the suffix of --src)")
    parser.add_argument("--tgt-lang", help="target suffix (default: the suffix of --tgt)")
    parser.add_argument("--min", type=int, default=1, help="fewest tokens on a side (default 1)")
    parser.add_argument("--max", type=int, default=80, help="most tokens on a side (default 80)")
    parser.add_argument(
        "--ratio",
        type=float,
        default=MOSES_DEFAULT_RATIO,
        help="largest token-count ratio between the sides (default 9, as in Moses)",
    )
    parser.add_argument("--dedup", action="store_true", help="also remove exact duplicate pairs")
    args = parser.parse_args(argv)
    args.src_lang = args.src_lang or language_of(args.src)
    args.tgt_lang = args.tgt_lang or language_of(args.tgt)
    if not args.src_lang or not args.tgt_lang or args.src_lang == args.tgt_lang:
        parser.error(
            "cannot tell the two languages apart from the file names; give --src-lang "
            "and --tgt-lang"
        )
    if args.min < 1 or args.max < args.min or args.ratio < 1:
        parser.error("need 1 <= --min <= --max and --ratio >= 1")
    return args


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    out_source = Path(f"{args.out_prefix}.{args.src_lang}")
    out_target = Path(f"{args.out_prefix}.{args.tgt_lang}")
    try:
        report = clean_parallel(
            args.src, args.tgt, out_source, out_target, args.min, args.max, args.ratio, args.dedup
        )
    except (CorpusError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    report_path = Path(f"{args.out_prefix}.report.json")
    atomic_write_json(report_path, report)
    reasons = ", ".join(f"{n} {reason}" for reason, n in report["removed"].items()) or "none"
    print(
        f"kept {report['pairs_kept']} of {report['pairs_read']} pairs in {out_source} and "
        f"{out_target}; removed: {reasons}; report: {report_path}"
    )
    return 0


if __name__ == "__main__":
    from fairseq_struct.cli_logging import configure_logging

    configure_logging()
    sys.exit(main())
