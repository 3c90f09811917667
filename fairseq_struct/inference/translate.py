"""Translate raw text with a trained model of the project: plain text in, plain text out.

    fairseq-struct translate --path checkpoints/checkpoint_best.pt --data data-bin/en-tr \\
        --input news.en --output news.tr --beam 5

One output line for every input line, in order; options and the n-best format:
docs/translating.md.
"""

import argparse
import logging
import os
import sys
import warnings
from contextlib import ExitStack
from itertools import islice
from typing import TYPE_CHECKING, BinaryIO, Iterable, List, Optional, Sequence, TextIO

from fairseq_struct.commands import program_name
from fairseq_struct.corpus_io import CorpusError, atomic_writer, count_lines
from fairseq_struct.inference.decoding import (
    PRECISIONS,
    DecodingOptions,
    Hypothesis,
    TranslatorError,
)
from fairseq_struct.inference.source_lines import SourceLine, cut_line, read_source_lines
from fairseq_struct.progress import StageProgress

if TYPE_CHECKING:  # the model code (torch, fairseq) loads when a translation starts
    from fairseq_struct.inference.translator import Translator

logger = logging.getLogger(__name__)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=program_name("fairseq_struct.inference.translate"),
        description="Translate raw text with a trained fairseq-struct translation model: "
        "one plain-text output line for every input line.",
    )
    parser.add_argument(
        "--path",
        action="append",
        required=True,
        metavar="CHECKPOINT[:CHECKPOINT...]",
        help="checkpoint(s); several (colon-separated or --path repeated) form an ensemble",
    )
    parser.add_argument(
        "--data",
        help="the prepared data directory (dictionaries, spm.model); default: the one the "
        "first checkpoint was trained on",
    )
    parser.add_argument("--input", default="-", help="raw source text (default: standard input)")
    parser.add_argument("--output", default="-", help="where to write (default: standard output)")
    parser.add_argument("--beam", type=int, default=5)
    parser.add_argument("--nbest", type=int, default=1, help="hypotheses per line (default 1)")
    parser.add_argument("--lenpen", type=float, default=1.0, help="length penalty (default 1)")
    parser.add_argument(
        "--max-len-a",
        type=float,
        help="the longest hypothesis is max_len_a * source length + max_len_b tokens (default: "
        "the limit fitted to the training pairs in --data's prepare_report.json, as "
        "scripts/evaluate.sh decodes; without one, fairseq's 0 and 200)",
    )
    parser.add_argument("--max-len-b", type=int, help="see --max-len-a")
    parser.add_argument(
        "--max-tokens", type=int, default=12000, help="source tokens per batch (default 12000)"
    )
    parser.add_argument("--batch-size", type=int, help="sentences per batch (default: no limit)")
    parser.add_argument(
        "--buffer-size",
        type=int,
        default=10000,
        help="lines read, sorted and translated together (default 10000)",
    )
    parser.add_argument("--cpu", action="store_true", help="translate on the CPU even with a GPU")
    precision = parser.add_mutually_exclusive_group()
    precision.add_argument("--fp16", action="store_true", help="half precision (GPU)")
    precision.add_argument("--bf16", action="store_true", help="bfloat16 (GPU)")
    parser.add_argument(
        "--log-every",
        type=int,
        default=1000,
        help="sentences between progress lines when not on a terminal (default 1000)",
    )
    return parser


def checkpoint_paths(path_arguments: Sequence[str]) -> List[str]:
    """`--path A:B --path C` -> [A, B, C]."""
    return [path for argument in path_arguments for path in argument.split(os.pathsep) if path]


def format_line(number: int, nbest: List[List[Hypothesis]], width: int) -> List[str]:
    """The output lines of one input line (0-based `number`): its parts' best translations
    joined by a space, or with `width` > 1 the n-best list (part by part, the k-th best of each
    part joined, its score the mean of theirs)."""
    if width == 1:
        return [" ".join(part[0].text for part in nbest)]
    if not nbest:
        return [f"{number} |||  ||| 0"]
    lines = []
    for rank in range(max(len(part) for part in nbest)):
        chosen = [part[min(rank, len(part) - 1)] for part in nbest]
        text = " ".join(hypothesis.text for hypothesis in chosen)
        score = sum(hypothesis.score for hypothesis in chosen) / len(chosen)
        lines.append(f"{number} ||| {text} ||| {score:.4f}")
    return lines


def translate_stream(
    translator: "Translator",
    lines: Iterable[str],
    name: str,
    output: TextIO,
    buffer_size: int,
    progress: StageProgress,
) -> int:
    """Translate the normalised `lines` buffer by buffer and write them in order; the number
    of lines translated."""
    numbered = enumerate(lines)
    done = 0
    width = translator.options.nbest
    while True:
        buffer = list(islice(numbered, buffer_size))
        if not buffer:
            return done
        sources: List[SourceLine] = [
            cut_line(index + 1, line, translator.pieces, translator.max_source_pieces, name)
            for index, line in buffer
        ]
        translated: List[Optional[List[str]]] = [None] * len(sources)
        for position, nbest in translator.translate(sources):
            translated[position] = format_line(done + position, nbest, width)
            progress.update(1)
        for output_lines in translated:
            assert output_lines is not None  # translate() answers every line of the buffer
            for line in output_lines:
                output.write(line + "\n")
        output.flush()
        done += len(sources)


def _open_input(path: str, stack: ExitStack) -> BinaryIO:
    if path == "-":
        return sys.stdin.buffer
    return stack.enter_context(open(path, "rb"))


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    # fairseq's batch iterator asks for pinned memory, which torch declines on a CPU-only
    # machine with a warning on every run; it changes nothing.
    warnings.filterwarnings("ignore", message="'pin_memory' argument is set as true")
    for option in ("beam", "nbest", "max_tokens", "buffer_size", "log_every"):
        if getattr(args, option) < 1:
            parser.error(f"--{option.replace('_', '-')} must be at least 1")
    options = DecodingOptions(
        beam=args.beam,
        nbest=args.nbest,
        lenpen=args.lenpen,
        max_len_a=args.max_len_a,
        max_len_b=args.max_len_b,
        max_tokens=args.max_tokens,
        batch_size=args.batch_size,
        cpu=args.cpu,
        precision="fp16" if args.fp16 else "bf16" if args.bf16 else PRECISIONS[0],
    )
    name = "<stdin>" if args.input == "-" else args.input
    try:
        if args.input != "-" and not os.path.isfile(args.input):
            raise TranslatorError(f"{args.input}: no such input file")
        from fairseq_struct.inference.translator import Translator

        translator = Translator(checkpoint_paths(args.path), args.data, options)
        total = None if args.input == "-" else count_lines(args.input)
        with ExitStack() as stack:
            source = read_source_lines(_open_input(args.input, stack), name)
            if args.output == "-":
                output: TextIO = sys.stdout
            else:
                binary = stack.enter_context(atomic_writer(args.output))
                output = stack.enter_context(
                    open(binary.fileno(), "w", encoding="utf-8", closefd=False)
                )
            progress = stack.enter_context(
                StageProgress("translate", total, unit="sentences", log_every=args.log_every)
            )
            done = translate_stream(translator, source, name, output, args.buffer_size, progress)
    except (TranslatorError, CorpusError) as error:
        print(f"{parser.prog}: error: {error}", file=sys.stderr)
        return 1
    logger.info("translated %d lines%s", done, "" if args.output == "-" else f" into {args.output}")
    return 0


if __name__ == "__main__":
    from fairseq_struct.cli_logging import configure_logging

    configure_logging()
    sys.exit(main())
