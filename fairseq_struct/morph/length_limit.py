"""The decoding length limit that fits a prepared data set.

fairseq stops a hypothesis after max_len_a × (source length) + max_len_b tokens (in pieces, end
of sentence included). The fitted max_len_a is the smallest, in tenths, under which COVERAGE of
the training pairs' targets fit with max_len_b = MAX_LEN_B: what the data says a translation's
length can be, while an undertrained model's repetition loops are still cut (fairseq's 200 are not).
"""

import json
import math
from collections import Counter
from pathlib import Path
from typing import Dict, Optional, Tuple, Union

MAX_LEN_B = 10
COVERAGE = 0.999
FAIRSEQ_DEFAULT = (0.0, 200)  # fairseq-generate's max_len_a, max_len_b


def fitted_max_len_a(
    source: Path, target: Path, coverage: float = COVERAGE, max_len_b: int = MAX_LEN_B
) -> float:
    """The smallest max_len_a, a multiple of 0.1, with which `coverage` of the pairs of two
    piece files (a sentence a line, pieces between spaces) fit; streamed, in tenths.

    Raises:
        ValueError: the files have no pairs.
    """
    tenths: Counter = Counter()
    with open(source, encoding="utf-8") as sources, open(target, encoding="utf-8") as targets:
        for source_line, target_line in zip(sources, targets):
            needed = (len(target_line.split()) + 1 - max_len_b) / (len(source_line.split()) + 1)
            tenths[max(0, math.ceil(needed * 10))] += 1
    total = sum(tenths.values())
    if total == 0:
        raise ValueError(f"{source}, {target}: no sentence pairs to fit a length limit on")
    covered = 0
    for tenth in sorted(tenths):
        covered += tenths[tenth]
        if covered >= coverage * total:
            return tenth / 10
    raise AssertionError("unreachable: the counts cover every pair")


def decoding_length(source: Path, target: Path) -> Dict[str, Union[float, int]]:
    """prepare_report.json's `decoding_length`: what train-en-tr.sh (validation BLEU) and
    evaluate.sh (the test set) give fairseq as --max-len-a / --max-len-b."""
    return {
        "max_len_a": fitted_max_len_a(source, target),
        "max_len_b": MAX_LEN_B,
        "coverage": COVERAGE,
    }


def fitted_limit(data_dir: Path) -> Optional[Tuple[float, int]]:
    """(max_len_a, max_len_b) fitted to a prepared data directory's training pairs; None for
    data prepared without it (before it was fitted, or by stock fairseq-preprocess)."""
    report = Path(data_dir) / "prepare_report.json"  # morph.prepare.REPORT_FILE
    if not report.is_file():
        return None
    limit = json.loads(report.read_text(encoding="utf-8")).get("decoding_length")
    return (float(limit["max_len_a"]), int(limit["max_len_b"])) if limit else None


def decoding_limit(
    data_dir: Path, max_len_a: Optional[float], max_len_b: Optional[int]
) -> Tuple[float, int]:
    """The limit to decode with, as evaluate.sh chooses it: the user's when either is given
    (the other at fairseq's default), else the data directory's fitted one, else fairseq's."""
    if max_len_a is None and max_len_b is None:
        return fitted_limit(data_dir) or FAIRSEQ_DEFAULT
    return (
        FAIRSEQ_DEFAULT[0] if max_len_a is None else max_len_a,
        FAIRSEQ_DEFAULT[1] if max_len_b is None else max_len_b,
    )
