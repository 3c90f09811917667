"""The scores the papers report on each catalogued data set, as printed (fractions as percent),
so that `datasets show` and the encoder grid's report put them beside a user's own.

Kaya & Tantuğ do not say whether their tables give means over their (typically five) seeds;
Zöllner et al. give means of three fine-tuning runs; Polatbilek one run each.
"""

from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

from fairseq_struct.downstream_sets.catalog import KAYA_TANTUG, POLATBILEK, ZOELLNER

Value = Optional[float]


@dataclass(frozen=True)
class ReferenceTable:
    """One paper table's rows for one data set; `columns` names the (split, metric) of each
    value, in the metric names of this project's scores.json."""

    paper: str
    table: str
    columns: Tuple[Tuple[str, str], ...]
    rows: Tuple[Tuple[str, Tuple[Value, ...]], ...]
    note: str = ""


# Kaya & Tantuğ's tables share one layout: rows are models, columns vocabulary x masking; each
# cell holds two figures. The models that exist, as (row name, cell) -> the two figures.
_BERT2D_LAYOUT = (
    "mBERT",
    "BERTurk 32k",
    "BERTurk 128k",
    "ITUTurkBERT 32k WWM",
    "ITUTurkBERT 128k WWM",
    *(
        f"BERT2D M={m} {vocabulary} {masking}"
        for m in (1, 3, 10)
        for vocabulary in ("32k", "128k")
        for masking in ("RWM", "WWM")
    ),
)


def _kaya_tantug(table: str, columns, figures: Sequence[Tuple[float, float]]) -> ReferenceTable:
    return ReferenceTable(KAYA_TANTUG, table, columns, tuple(zip(_BERT2D_LAYOUT, figures)))


_DEV_TEST_F1 = (("valid", "f1"), ("test", "f1"))
_DEV_TEST_ACCURACY = (("valid", "accuracy"), ("test", "accuracy"))

# Figures in _BERT2D_LAYOUT's order.
_SENTIMENT = [
    (94.60, 96.72),
    (96.04, 97.61),
    (96.02, 97.60),
    (96.14, 97.66),
    (96.19, 97.70),
    (96.16, 97.67),
    (96.16, 97.68),
    (96.15, 97.68),
    (96.11, 97.65),
    (96.11, 97.64),
    (96.14, 97.66),
    (96.08, 97.63),
    (96.15, 97.67),
    (96.14, 97.66),
    (96.15, 97.67),
    (96.14, 97.67),
    (96.16, 97.68),
]
_NER = [
    (76.53, 76.13),
    (77.03, 77.46),
    (77.06, 77.38),
    (77.38, 77.54),
    (77.40, 77.93),
    (77.17, 77.68),
    (77.30, 77.90),
    (77.39, 78.22),
    (76.54, 77.62),
    (77.24, 77.24),
    (77.12, 77.46),
    (77.18, 77.44),
    (77.31, 78.20),
    (76.94, 77.39),
    (77.06, 77.41),
    (76.87, 77.90),
    (77.35, 77.74),
]
_IMST = [
    (94.47, 94.70),
    (96.01, 96.17),
    (95.70, 96.25),
    (95.92, 96.20),
    (95.66, 96.00),
    (95.93, 96.28),
    (95.89, 96.22),
    (95.88, 96.23),
    (95.76, 96.20),
    (95.94, 96.21),
    (96.06, 96.36),
    (95.67, 96.19),
    (95.77, 96.13),
    (95.96, 96.31),
    (95.95, 96.26),
    (95.76, 96.09),
    (95.96, 96.28),
]
_BOUN = [
    (91.93, 92.51),
    (92.58, 92.85),
    (90.90, 90.99),
    (92.75, 93.05),
    (92.57, 92.64),
    (92.81, 93.05),
    (92.81, 92.97),
    (92.61, 92.82),
    (92.72, 93.01),
    (92.80, 92.92),
    (92.75, 93.02),
    (92.79, 92.90),
    (92.81, 92.91),
    (92.69, 92.94),
    (92.74, 92.96),
    (92.74, 92.92),
    (92.86, 92.96),
]
_TQUAD = [
    (58.54, 77.29),
    (60.07, 77.60),
    (61.19, 78.56),
    (61.35, 79.00),
    (61.64, 79.07),
    (60.11, 78.03),
    (60.61, 77.85),
    (62.00, 78.85),
    (61.30, 78.31),
    (60.99, 78.95),
    (61.86, 79.69),
    (60.58, 77.86),
    (61.61, 78.30),
    (60.56, 77.95),
    (61.35, 78.57),
    (61.70, 79.29),
    (60.78, 78.43),
]

# Zöllner et al., Table 8: the best pre-training (MLM, relative positions, whole-word masking)
# fine-tuned with each head, without and with the Entity-Fix rule; columns GermEval, H. Arendt,
# Sturm, LER CG, LER FG (entity F1, fractions in the paper).
_ZOELLNER_HEADS = (
    ("DFT", (0.8086, 0.7741, 0.8555, 0.9347, 0.9206)),
    ("DFT + Entity-Fix", (0.8408, 0.7903, 0.8706, 0.9474, 0.9427)),
    ("CSE", (0.8397, 0.8048, 0.8647, 0.9429, 0.9401)),
    ("CSE + Entity-Fix", (0.8397, 0.8048, 0.8647, 0.9429, 0.9401)),
    ("LCRF", (0.8216, 0.7822, 0.8453, 0.9365, 0.9261)),
    ("LCRF + Entity-Fix", (0.8422, 0.7941, 0.8629, 0.9477, 0.9410)),
    ("LCRF_NER", (0.8220, 0.7857, 0.8508, 0.9394, 0.9278)),
    ("LCRF_NER + Entity-Fix", (0.8448, 0.7999, 0.8783, 0.9488, 0.9455)),
)
_ZOELLNER_COLUMN = {"germeval2014": 0, "arendt": 1, "sturm": 2, "ler-cg": 3, "ler-fg": 4}


def _percent(fraction: float) -> float:
    return round(100 * fraction, 2)


def _zoellner(name: str) -> ReferenceTable:
    column = _ZOELLNER_COLUMN[name]
    return ReferenceTable(
        ZOELLNER,
        "Table 8",
        (("test", "f1"),),
        tuple(
            (f"small BERT (34M), {head}", (_percent(values[column]),))
            for head, values in _ZOELLNER_HEADS
        ),
        "mean of 3 fine-tuning runs; their 6-layer BERT pre-trained with MLM, relative "
        "positions and whole-word masking",
    )


def _tables() -> Dict[str, List[ReferenceTable]]:
    sentiment = _kaya_tantug("Table 3", (("test", "accuracy"), ("test", "f1")), _SENTIMENT)
    tables = {
        "turkish-sentiment": [sentiment],
        "turkish-sentiment-balanced-test": [sentiment],
        "turkish-wiki-ner": [_kaya_tantug("Table 4", _DEV_TEST_F1, _NER)],
        "ud-turkish-imst": [_kaya_tantug("Table 5", _DEV_TEST_ACCURACY, _IMST)],
        "ud-turkish-boun": [_kaya_tantug("Table 6", _DEV_TEST_ACCURACY, _BOUN)],
        "tquad": [
            _kaya_tantug("Table 8", (("test", "exact_match"), ("test", "f1")), _TQUAD),
            ReferenceTable(
                POLATBILEK,
                "Table 5.11",
                (("test", "exact_match"),),
                tuple(
                    (model, (_percent(em),))
                    for model, em in (
                        ("BERT-6M, 10 epochs", 0.394),
                        ("BERT-500K, 10 epochs", 0.306),
                        ("BERT-ELMo, 10 epochs", 0.344),
                        ("BERT-6M, 5 epochs", 0.349),
                        ("BERT-500K, 5 epochs", 0.235),
                        ("BERT-ELMo, 5 epochs", 0.257),
                    )
                ),
                "one run each, lower-cased text; the thesis does not name its data set, whose "
                "892 test questions match TQuAD's dev file",
            ),
        ],
    }
    for name in _ZOELLNER_COLUMN:
        tables[name] = [_zoellner(name)]
    tables["germeval2014"].append(
        ReferenceTable(
            ZOELLNER,
            "Table 11",
            (("test", "f1"),),
            (
                ("BiLSTM-WikiEmb (Riedl and Padó)", (82.93,)),
                ("DistilBERT base (66M)", (85.63,)),
                ("GBERT base (110M)", (87.98,)),
                ("GELECTRA large (335M)", (88.95,)),
            ),
            "published models the paper compares with",
        )
    )
    return tables


REFERENCE_TABLES: Dict[str, List[ReferenceTable]] = _tables()


def reference_lines(name: str) -> List[str]:
    """The papers' figures for data set `name`, a line per row: 'Table 4, BERTurk 32k:
    valid f1 77.03, test f1 77.46'."""
    lines = []
    for table in REFERENCE_TABLES.get(name, []):
        lines.append(f"{table.paper}, {table.table}" + (f" ({table.note})" if table.note else ""))
        for system, values in table.rows:
            figures = ", ".join(
                f"{split} {metric} {value:.2f}"
                for (split, metric), value in zip(table.columns, values)
                if value is not None
            )
            lines.append(f"  {system}: {figures}")
    return lines
