"""Validation curves from fairseq-train's log: a metric against updates.

fairseq-train (`--log-format simple`, or json) logs one `valid` line per validation, e.g.

    2026-11-25 14:25:47 | INFO | valid | epoch 056 | valid on 'valid' subset | loss 1.988 |
    nll_loss 0.645 | ppl 1.56 | bleu 59.08 | wps 6058.6 | ... | num_updates 500
"""

import json
import re
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from fairseq_struct.grid.checkpoint_rules import best_of

_SIMPLE = re.compile(r"\|\s*valid\s*\|.*\bvalid on '(?P<subset>[^']+)' subset\s*\|(?P<fields>.*)$")


def _simple_fields(text: str) -> Dict[str, str]:
    fields = {}
    for part in text.split("|"):
        key, _, value = part.strip().partition(" ")
        if key and value:
            fields[key] = value.strip()
    return fields


def _json_fields(line: str) -> Optional[Dict[str, str]]:
    """fairseq's `--log-format json` valid line: `... | INFO | valid | {"epoch": 1, ...}`."""
    start = line.find("{")
    if "| valid |" not in line or start < 0:
        return None
    try:
        record = json.loads(line[start:])
    except json.JSONDecodeError:
        return None
    return {key.removeprefix("valid_"): str(value) for key, value in record.items()}


def validation_curve(
    log: Path, metric: str = "bleu", subset: str = "valid"
) -> List[Tuple[int, float]]:
    """(updates, metric) of every validation on `subset` in the log, by update; a validation
    logged again at the same update (a resumed run's log holds every attempt) keeps the later."""
    points: Dict[int, float] = {}
    if not log.is_file():
        return []
    with open(log, encoding="utf-8", errors="replace") as lines:
        for line in lines:
            match = _SIMPLE.search(line)
            if match:
                if match["subset"] != subset:
                    continue
                fields = _simple_fields(match["fields"])
            else:
                fields = _json_fields(line)
                if fields is None:
                    continue
            if metric in fields and "num_updates" in fields:
                points[int(float(fields["num_updates"]))] = float(fields[metric])
    return sorted(points.items())


def last_update(log: Path) -> Optional[int]:
    """The last `num_updates` fairseq-train logged (training or validation line)."""
    if not log.is_file():
        return None
    found = None
    pattern = re.compile(r"num_updates[\"=: ]+(\d+)")
    with open(log, encoding="utf-8", errors="replace") as lines:
        for line in lines:
            for match in pattern.finditer(line):
                found = int(match.group(1))
    return found


def best_update(curve: List[Tuple[int, float]]) -> Optional[int]:
    """The update of fairseq's checkpoint_best.pt for a metric it maximises: the last validation
    that scored at least as high as every one before it (fairseq's `is_better` is >=), i.e. the
    best value, the later update on a tie."""
    return best_of(dict(curve), maximize=True) if curve else None
