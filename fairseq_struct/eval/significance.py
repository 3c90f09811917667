"""Paired significance tests between systems with sacreBLEU's own implementation (design.md §5.1).

Paired bootstrap resampling (`bs`, Koehn 2004) or approximate randomization (`ar`) of BLEU (13a,
cased) and chrF, every system against the first, the baseline; the seed is sacreBLEU's
(`SACREBLEU_SEED`, default 12345). A system identical to the baseline gets p = 1.0; AR reports
p = 1/(N+1) when only a sentence or two differ, which does not mean a real difference.
"""

from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

from sacrebleu.metrics import BLEU, CHRF
from sacrebleu.metrics.base import Metric
from sacrebleu.significance import PairedTest

TEST_NAMES = {"bs": "paired bootstrap resampling", "ar": "paired approximate randomization"}
# sacreBLEU's default for bootstrap confidence intervals.
CONFIDENCE_RESAMPLES = 1000
SIGNIFICANCE_LEVEL = 0.05


@dataclass(frozen=True)
class PairedScore:
    """One system's score for one metric, as sacreBLEU's paired test reports it."""

    score: float
    mean: Optional[float]  # bootstrap estimate of the true mean
    ci: Optional[float]  # half-width of the 95% confidence interval around `mean`
    p_value: Optional[float]  # None for the baseline


@dataclass(frozen=True)
class SystemResult:
    name: str
    identical_to_baseline: bool
    scores: Dict[str, PairedScore]  # by sacreBLEU's metric name: "BLEU", "chrF2"


@dataclass(frozen=True)
class PairedTestReport:
    test_type: str  # "bs" or "ar"
    n_samples: int
    signatures: Dict[str, str]
    systems: List[SystemResult]  # the baseline first


def paired_metrics() -> Dict[str, Metric]:
    """The metrics that are tested: BLEU and chrF, configured as in `score.py`."""
    return {"BLEU": BLEU(tokenize="13a", lowercase=False), "chrF": CHRF()}


def paired_test(
    named_systems: Sequence[Tuple[str, Sequence[str]]],
    references: Sequence[str],
    test_type: str = "bs",
    n_samples: int = 0,
) -> PairedTestReport:
    """Test every system against the first one (the baseline) with sacreBLEU's PairedTest.

    `n_samples` 0 takes sacreBLEU's defaults: 1000 bootstrap resamples, 10000 AR trials.

    Raises:
        ValueError: an unknown test type, fewer than two systems, or a system whose number of
            hypotheses differs from the number of references.
    """
    if test_type not in TEST_NAMES:
        raise ValueError(f"unknown paired test {test_type!r}, expected one of {list(TEST_NAMES)}")
    if len(named_systems) < 2:
        raise ValueError("a paired test needs a baseline and at least one other system")
    for name, hypotheses in named_systems:
        if len(hypotheses) != len(references):
            raise ValueError(
                f"{name} has {len(hypotheses)} hypotheses but there are {len(references)} "
                "references"
            )
    test = PairedTest(
        [(name, list(hypotheses)) for name, hypotheses in named_systems],
        paired_metrics(),
        references=[list(references)],
        test_type=test_type,
        n_samples=n_samples,
        # AR reports the bootstrap mean and 95% CI too, so both tests give a p-value and a CI.
        n_ar_confidence=CONFIDENCE_RESAMPLES if test_type == "ar" else -1,
    )
    signatures, columns = test()
    baseline = list(named_systems[0][1])
    systems = []
    for index, (name, hypotheses) in enumerate(named_systems):
        # sacreBLEU counts only differences strictly larger than the observed one, so a system
        # equal to the baseline would get p = 1/(N+1): "significant" for any N >= 20.
        identical = index > 0 and list(hypotheses) == baseline
        scores = {}
        for metric in signatures:
            result = columns[metric][index]
            p_value = None if index == 0 else 1.0 if identical else float(result.p_value)
            scores[metric] = PairedScore(
                score=float(result.score),
                mean=None if result.mean is None else float(result.mean),
                ci=None if result.ci is None else float(result.ci),
                p_value=p_value,
            )
        systems.append(SystemResult(name=name, identical_to_baseline=identical, scores=scores))
    return PairedTestReport(
        test_type=test_type,
        n_samples=test.n_samples,
        signatures={metric: signature.format() for metric, signature in signatures.items()},
        systems=systems,
    )


def format_report(report: PairedTestReport) -> List[str]:
    """Text lines: the test, each metric's signature, then one row per system.

    Cells read as sacreBLEU prints them: `score (mean ± CI)`, then `(p = 0.0010)*` where the
    difference to the baseline is significant at the 0.05 level.
    """
    lines = [
        f"{TEST_NAMES[report.test_type]} ({report.test_type}, {report.n_samples} samples); "
        f"baseline: {report.systems[0].name}"
    ]
    lines += [f"{metric}|{signature}" for metric, signature in report.signatures.items()]
    header = ["system"] + [f"{metric} (μ ± 95% CI)" for metric in report.signatures]
    rows = [header]
    for system in report.systems:
        row = [system.name]
        for metric in report.signatures:
            score = system.scores[metric]
            cell = f"{score.score:.2f}"
            if score.mean is not None:
                cell += f" ({score.mean:.2f} ± {score.ci:.2f})"
            if score.p_value is not None:
                cell += f" (p = {score.p_value:.4f})"
                cell += "*" if score.p_value <= SIGNIFICANCE_LEVEL else ""
            row.append(cell)
        if system.identical_to_baseline:
            row[0] += " (identical to baseline)"
        rows.append(row)
    widths = [max(len(row[column]) for row in rows) for column in range(len(header))]
    lines += [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows
    ]
    return lines


def report_to_json(report: PairedTestReport) -> Dict[str, object]:
    """A JSON-ready record of the test and its results."""
    return {
        "test": report.test_type,
        "test_name": TEST_NAMES[report.test_type],
        "n_samples": report.n_samples,
        "significance_level": SIGNIFICANCE_LEVEL,
        "baseline": report.systems[0].name,
        "signatures": report.signatures,
        "systems": [
            {
                "name": system.name,
                "identical_to_baseline": system.identical_to_baseline,
                "scores": {
                    metric: {
                        "score": score.score,
                        "mean": score.mean,
                        "ci95": score.ci,
                        "p_value": score.p_value,
                    }
                    for metric, score in system.scores.items()
                },
            }
            for system in report.systems
        ],
    }
