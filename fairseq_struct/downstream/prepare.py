"""Prepare a downstream data set for fine-tuning a pretrained encoder: one command per task.

The raw files (`readers`) are cut into the units of the pretraining run (`morph.units`) and
written as fairseq binarized data into --out-dir:

    input0/dict.txt, input0/{split}.bin|idx   token ids (`<s> ... </s>`)
    label/dict.txt, label/{split}.bin|idx     sentiment: one label per text (fairseq's
                                              `sentence_prediction` layout)
    labels/dict.txt, labels/{split}.bin|idx   ner, pos: one label per token (<pad>: none)
    spans/{split}.bin|idx, {split}.qa.json    qa: answer start/end per window; windows' text
                                              offsets, contexts and gold answers
    finetune.json                             task, labels, units, lengths, what was read,
                                              skipped, cut or split (the report)
"""

import argparse
import json
import sys
from pathlib import Path
from typing import Optional, Sequence

from fairseq_struct.cli_logging import configure_logging
from fairseq_struct.downstream.layout import REPORT_FILE, TASKS
from fairseq_struct.downstream.readers import DownstreamDataError


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("task", choices=TASKS)
    parser.add_argument(
        "--pretraining-data",
        required=True,
        type=Path,
        help="the pretraining data directory (scripts/prepare-mlm.sh --out): its units",
    )
    parser.add_argument("--train", required=True, nargs="+", help="training file(s)")
    parser.add_argument("--valid", nargs="+", help="validation file(s)")
    parser.add_argument("--test", nargs="+", help="test file(s)")
    parser.add_argument("--out-dir", required=True, type=Path)
    parser.add_argument(
        "--valid-fraction",
        type=float,
        default=0.0,
        help="without --valid: this share of the training data becomes the validation split",
    )
    parser.add_argument("--split-seed", type=int, default=1, help="seed of --valid-fraction")
    parser.add_argument(
        "--max-positions",
        type=int,
        help="tokens the encoder takes (its --max-positions); longer inputs are cut or windowed "
        "(default: an imported model's, else 512)",
    )
    parser.add_argument(
        "--labels",
        nargs="+",
        help="sentiment: class names of the per-class files (default: the file extensions)",
    )
    parser.add_argument(
        "--tsv", action="store_true", help="sentiment: files are text<TAB>label lines"
    )
    parser.add_argument(
        "--tag-column", type=int, help="ner: 1-based column of the tag (GermEval 2014: 3, outer)"
    )
    parser.add_argument("--max-length", type=int, default=384, help="qa: tokens per window")
    parser.add_argument("--doc-stride", type=int, default=128, help="qa: units between windows")
    parser.add_argument("--max-query-length", type=int, default=64, help="qa: question units kept")
    parser.add_argument("--workers", type=int, default=1, help="morphological segmentation")
    args = parser.parse_args(argv)
    if args.valid is None and not 0.0 < args.valid_fraction < 1.0:
        parser.error("give --valid, or --valid-fraction between 0 and 1")
    if args.valid is not None and args.valid_fraction:
        parser.error("--valid and --valid-fraction exclude each other")
    return args


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    from fairseq_struct.downstream.preparation import prepare  # fairseq: after the arguments

    try:
        report = prepare(args)
    except (DownstreamDataError, FileNotFoundError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(json.dumps(report["splits"], ensure_ascii=False, indent=1))
    print(f"{args.task} data for fine-tuning in {args.out_dir} ({args.out_dir / REPORT_FILE})")
    return 0


if __name__ == "__main__":
    configure_logging()
    sys.exit(main())
