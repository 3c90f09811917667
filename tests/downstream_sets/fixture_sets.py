"""The fixtures of tests/downstream_sets: each published file's layout, written small."""

from pathlib import Path
from typing import Dict

FIXTURES = Path(__file__).resolve().parent / "fixtures"

# The fixtures' sizes, in each data set's unit, instead of the published ones.
FIXTURE_SIZES: Dict[str, Dict[str, int]] = {
    "germeval2014": {"train": 3, "valid": 2, "test": 3},
    "ler-fg": {"train": 3, "valid": 2, "test": 2},
    "ler-cg": {"train": 3, "valid": 2, "test": 2},
    "arendt": {"train": 2, "valid": 1, "test": 1},
    "sturm": {"train": 2, "valid": 1, "test": 1},
    "turkish-wiki-ner": {"train": 3, "valid": 1, "test": 1},
    "ud-turkish-imst": {"train": 2, "valid": 2, "test": 2},
    "ud-turkish-boun": {"train": 1, "valid": 1, "test": 1},
    "tquad": {"train": 3, "test": 1},
    "turkish-sentiment": {"train": 12, "test": 4},
    "turkish-sentiment-balanced-test": {"train": 12, "test": 4},
    "turkish-sentiment-3class": {"train": 12, "test": 4},
}
