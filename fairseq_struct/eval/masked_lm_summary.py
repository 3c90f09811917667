"""Masked-token accuracy of several pretrained models against the unigram baseline.

    fairseq-struct mlm-summary --json out.json \\
        roberta=validate-roberta.log bert2d=validate-bert2d.log bert_elmo=validate-elmo.log

Each log is the output of `fairseq-validate ... --criterion masked_lm_struct --log-format json`,
read at its last "valid" record. Exits with status 1 when a model does not beat its baseline.
"""

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from fairseq_struct.corpus_io import atomic_write_json

_VALID_RECORD = re.compile(r"\| valid \| (\{.*\})\s*$")


def last_valid_record(log_path: Path) -> Dict[str, float]:
    records = [
        json.loads(match.group(1))
        for line in log_path.read_text(encoding="utf-8", errors="replace").splitlines()
        if (match := _VALID_RECORD.search(line))
    ]
    if not records:
        raise ValueError(
            f"{log_path}: no '| valid | {{...}}' record; run fairseq-validate with "
            "--log-format json and --criterion masked_lm_struct"
        )
    record = records[-1]
    try:
        return {
            "mlm_accuracy": float(record["valid_mlm_accuracy"]),
            "unigram_accuracy": float(record["valid_unigram_accuracy"]),
            "mlm_loss": float(record["valid_mlm_loss"]),
        }
    except KeyError as error:
        raise ValueError(f"{log_path}: the valid record has no {error}: {record}") from None


def summarise(named_logs: Sequence[str]) -> List[Dict[str, object]]:
    rows = []
    for item in named_logs:
        name, separator, path = item.partition("=")
        if not separator:
            raise ValueError(f"expected NAME=LOG, got {item!r}")
        figures = last_valid_record(Path(path))
        baseline = figures["unigram_accuracy"]
        rows.append(
            {
                "model": name,
                **figures,
                "accuracy_over_baseline": (
                    round(figures["mlm_accuracy"] / baseline, 2) if baseline > 0 else None
                ),
            }
        )
    return rows


def format_table(rows: List[Dict[str, object]]) -> str:
    lines = [
        f"{'model':<12} {'masked-token acc.':>18} {'unigram baseline':>17} {'ratio':>6}",
    ]
    for row in rows:
        ratio = row["accuracy_over_baseline"]
        lines.append(
            f"{row['model']:<12} {row['mlm_accuracy']:>17.2f}% {row['unigram_accuracy']:>16.2f}% "
            f"{'-' if ratio is None else f'{ratio:.2f}x':>6}"
        )
    return "\n".join(lines)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("logs", nargs="+", metavar="NAME=LOG")
    parser.add_argument("--json", type=Path, help="also write the table as JSON here")
    args = parser.parse_args(argv)
    try:
        rows = summarise(args.logs)
    except (ValueError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(format_table(rows))
    if args.json is not None:
        atomic_write_json(args.json, rows)
    return 0 if all(row["mlm_accuracy"] > row["unigram_accuracy"] for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
