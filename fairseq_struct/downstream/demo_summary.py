"""The fine-tuning demo's table: each task and encoder, pretrained next to from scratch.

Reads `RUNS/{model}-{task}-{pretrained,scratch}/scores.json` (written by downstream.predict) and
prints each task's main metrics (`MAIN_METRICS`).
"""

import argparse
import json
import sys
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from tabulate import tabulate

from fairseq_struct.corpus_io import atomic_write_json

MAIN_METRICS = {
    "pos": ("accuracy",),
    "ner": ("f1",),
    "sentiment": ("f1", "accuracy"),
    "qa": ("f1", "exact_match"),
}


def summary(runs: Path, models: Sequence[str], tasks: Sequence[str]) -> List[Dict[str, object]]:
    rows = []
    for task in tasks:
        for model in models:
            scores = {}
            for init in ("pretrained", "scratch"):
                path = runs / f"{model}-{task}-{init}" / "scores.json"
                if not path.exists():
                    raise FileNotFoundError(f"{path} not found: did the run of {model} fail?")
                scores[init] = json.loads(path.read_text(encoding="utf-8"))
            for metric in MAIN_METRICS[task]:
                pretrained, scratch = scores["pretrained"][metric], scores["scratch"][metric]
                rows.append(
                    {
                        "task": task,
                        "encoder": model,
                        "metric": metric,
                        "pretrained": pretrained,
                        "scratch": scratch,
                        "gain": round(pretrained - scratch, 2),
                    }
                )
    return rows


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", required=True, type=Path)
    parser.add_argument("--models", nargs="+", required=True)
    parser.add_argument("--tasks", nargs="+", required=True, choices=sorted(MAIN_METRICS))
    parser.add_argument("--json", type=Path, help="write the rows here")
    args = parser.parse_args(argv)
    try:
        rows = summary(args.runs, args.models, args.tasks)
    except FileNotFoundError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(tabulate(rows, headers="keys", floatfmt=".2f"))
    if args.json:
        atomic_write_json(args.json, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
