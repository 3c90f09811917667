"""Predict and score with a fine-tuned checkpoint: one command for every downstream task.

The raw test file is cut into the pretraining run's units, as `downstream.prepare` did; the
predictions are written in the input's own format, with `scores.json` (docs/finetuning.md).
The fine-tuning data directory is the checkpoint's, or --data.
"""

import argparse
import sys
from pathlib import Path
from typing import Optional, Sequence

from fairseq_struct.corpus_io import atomic_write_json
from fairseq_struct.downstream import readers


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkpoint", type=Path, help="a fine-tuned checkpoint")
    parser.add_argument("--input", required=True, nargs="+", help="raw test file(s)")
    parser.add_argument("--out-dir", required=True, type=Path)
    parser.add_argument("--data", help="the fine-tuning data directory (default: the checkpoint's)")
    parser.add_argument("--batch-size", type=int, default=32)
    fix = parser.add_mutually_exclusive_group()
    fix.add_argument("--entity-fix", dest="entity_fix", action="store_true", default=None)
    fix.add_argument("--no-entity-fix", dest="entity_fix", action="store_false")
    parser.add_argument("--labels", nargs="+", help="sentiment: class names of the input files")
    parser.add_argument("--tsv", action="store_true", help="sentiment: text<TAB>label lines")
    parser.add_argument("--tag-column", type=int, help="ner: 1-based column of the gold tag")
    return parser.parse_args(argv)


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    # torch and fairseq load with the model, after the arguments.
    from fairseq_struct.downstream.prediction import PREDICTORS, load, predict_qa, table
    from fairseq_struct.morph.units import PretrainingUnits, UnitCutter

    try:
        model, task, report = load(args.checkpoint, args.data)
        cutter = UnitCutter(PretrainingUnits.from_data_dir(report["pretraining_data"]))
        args.out_dir.mkdir(parents=True, exist_ok=True)
        predictor = PREDICTORS.get(report["task"], predict_qa)
        scores = predictor(model, task, cutter, report, args)
    except (readers.DownstreamDataError, FileNotFoundError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    scores = {"task": report["task"], "checkpoint": str(args.checkpoint), **scores}
    atomic_write_json(args.out_dir / "scores.json", scores)
    print(table(scores))
    return 0


if __name__ == "__main__":
    sys.exit(main())
