"""BLEU and chrF by morphological density of the reference (design.md §5.3; Soulos et al., Fig. 3).

A sentence's density is morphemes per word of its segmented reference
(`corpus_stats.morphological_density`); each system is scored with sacreBLEU against the raw
reference within each density bucket [low, high). Sentences below the first edge, or without a
word, belong to no bucket and are counted. Writes a markdown table, a JSON record and a PNG plot.
"""

import argparse
import math
import os
import sys
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from fairseq_struct.corpus_io import atomic_write_json
from fairseq_struct.eval.corpus_stats import morphological_density
from fairseq_struct.eval.score import corpus_scores, read_sacrebleu_lines
from fairseq_struct.pieces.markers import MORPHEME_BOUNDARY

DEFAULT_EDGES = (1.0, 1.25, 1.5, 1.75, 2.0, 2.25, 2.5, 3.0)
METRICS = ("BLEU", "chrF")


@dataclass(frozen=True)
class Bucket:
    low: float
    high: float  # math.inf for the last bucket
    sentences: List[int]  # line indices, in file order
    mean_density: Optional[float]
    scores: Dict[str, Dict[str, float]]  # system -> "BLEU" / "chrF" -> score; empty if no sentence

    @property
    def label(self) -> str:
        high = "inf" if math.isinf(self.high) else f"{self.high:.2f}"
        return f"[{self.low:.2f}, {high})"


@dataclass(frozen=True)
class DensityReport:
    edges: List[float]
    systems: List[str]
    buckets: List[Bucket]
    unbucketed: int  # sentences below the first edge or without words
    overall: Dict[str, Dict[str, float]]
    signatures: Dict[str, str]  # by sacreBLEU's metric name: "BLEU", "chrF2"


def sentence_densities(
    segmented_references: Sequence[str], references: Sequence[str], segmented_path: str, path: str
) -> List[Optional[float]]:
    """Morphemes per word of each segmented reference line, checked against the raw reference.

    Raises:
        ValueError: the files differ in line count, or a segmented line without its marks is
            not the raw line (up to whitespace): the message names both files and the line.
    """
    if len(segmented_references) != len(references):
        raise ValueError(
            f"{segmented_path} has {len(segmented_references)} lines but {path} has "
            f"{len(references)}; the segmented reference must be the raw reference, segmented"
        )
    for number, (segmented, raw) in enumerate(zip(segmented_references, references), start=1):
        if segmented.replace(MORPHEME_BOUNDARY, "").split() != raw.split():
            raise ValueError(
                f"{segmented_path} line {number}: without its {MORPHEME_BOUNDARY} marks it is "
                f"not line {number} of {path} ({segmented!r} vs {raw!r})"
            )
    return [morphological_density(line) for line in segmented_references]


def quantile_edges(densities: Sequence[Optional[float]], quantiles: int) -> List[float]:
    """Edges that split the sentences into `quantiles` buckets of about equal size."""
    values = np.array([density for density in densities if density is not None])
    if quantiles < 1 or values.size == 0:
        raise ValueError(f"need quantiles >= 1 and sentences with words, got {quantiles}")
    edges = np.quantile(values, [index / quantiles for index in range(quantiles)])
    return sorted({round(float(edge), 6) for edge in edges})


def bucket_scores(
    densities: Sequence[Optional[float]],
    references: Sequence[str],
    systems: Sequence[Tuple[str, Sequence[str]]],
    edges: Sequence[float] = DEFAULT_EDGES,
) -> DensityReport:
    """Score every system within each density bucket [edges[i], edges[i + 1]).

    Raises:
        ValueError: edges not strictly increasing, or a system with a different number of
            hypotheses than references.
    """
    edges = [float(edge) for edge in edges]
    if not edges or any(low >= high for low, high in zip(edges, edges[1:])):
        raise ValueError(f"bucket edges must be strictly increasing, got {edges}")
    for name, hypotheses in systems:
        if len(hypotheses) != len(references):
            raise ValueError(
                f"{name} has {len(hypotheses)} hypotheses but there are {len(references)} "
                "references"
            )
    bounds = list(zip(edges, edges[1:] + [math.inf]))
    members: List[List[int]] = [[] for _ in bounds]
    unbucketed = 0
    for index, density in enumerate(densities):
        bucket = None if density is None else _bucket_of(density, bounds)
        if bucket is None:
            unbucketed += 1
        else:
            members[bucket].append(index)

    buckets = []
    for (low, high), indices in zip(bounds, members):
        scores = {
            name: _scores([hypotheses[i] for i in indices], [references[i] for i in indices])
            for name, hypotheses in systems
            if indices
        }
        mean_density = sum(densities[i] for i in indices) / len(indices) if indices else None
        buckets.append(Bucket(low, high, indices, mean_density, scores))
    all_scores = corpus_scores(systems[0][1], references)
    return DensityReport(
        edges=edges,
        systems=[name for name, _ in systems],
        buckets=buckets,
        unbucketed=unbucketed,
        overall={name: _scores(hypotheses, references) for name, hypotheses in systems},
        signatures={all_scores[key].name: all_scores[key].signature for key in METRICS},
    )


def _bucket_of(density: float, bounds: Sequence[Tuple[float, float]]) -> Optional[int]:
    for index, (low, high) in enumerate(bounds):
        if low <= density < high:
            return index
    return None


def _scores(hypotheses: Sequence[str], references: Sequence[str]) -> Dict[str, float]:
    scores = corpus_scores(hypotheses, references)
    return {key: scores[key].score for key in METRICS}


def format_table(report: DensityReport) -> List[str]:
    """A markdown table: one row per bucket (and one for all sentences), BLEU and chrF of each
    system; the signatures follow the table."""
    header = ["density", "sentences", "mean density"]
    header += [f"{name} {metric}" for name in report.systems for metric in METRICS]
    lines = ["| " + " | ".join(header) + " |", "|---|" + "---:|" * (len(header) - 1)]
    for bucket in report.buckets:
        mean = "" if bucket.mean_density is None else f"{bucket.mean_density:.3f}"
        cells = [bucket.label, str(len(bucket.sentences)), mean]
        cells += [
            f"{bucket.scores[name][metric]:.2f}" if bucket.scores else ""
            for name in report.systems
            for metric in METRICS
        ]
        lines.append("| " + " | ".join(cells) + " |")
    sentences = sum(len(bucket.sentences) for bucket in report.buckets) + report.unbucketed
    cells = ["all", str(sentences), ""]
    cells += [
        f"{report.overall[name][metric]:.2f}" for name in report.systems for metric in METRICS
    ]
    lines.append("| " + " | ".join(cells) + " |")
    if report.unbucketed:
        lines.append(f"{report.unbucketed} sentences below the first edge or without words")
    lines += [f"{metric}|{signature}" for metric, signature in report.signatures.items()]
    return lines


def report_to_json(report: DensityReport) -> Dict[str, object]:
    """A JSON-ready record of the buckets and scores."""
    return {
        "edges": report.edges,
        "systems": report.systems,
        "signatures": report.signatures,
        "unbucketed": report.unbucketed,
        "overall": report.overall,
        "buckets": [
            {
                "label": bucket.label,
                "low": bucket.low,
                "high": None if math.isinf(bucket.high) else bucket.high,
                "sentences": len(bucket.sentences),
                "mean_density": bucket.mean_density,
                "scores": bucket.scores,
            }
            for bucket in report.buckets
        ],
    }


def plot(report: DensityReport, path: str) -> None:
    """PNG: BLEU per non-empty bucket for every system; below it, with several systems, the
    BLEU difference of each system to the first one (Figure 3 of the paper)."""
    # Imported here: matplotlib is slow to import and only this function draws.
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    buckets = [bucket for bucket in report.buckets if bucket.sentences]
    positions = np.arange(len(buckets))
    labels = [f"{bucket.label}\nn={len(bucket.sentences)}" for bucket in buckets]
    baseline, others = report.systems[0], report.systems[1:]
    panels = 2 if others else 1
    figure = Figure(figsize=(max(6.0, 1.1 * len(buckets) + 2), 3.5 * panels))
    FigureCanvasAgg(figure)
    axes = figure.subplots(panels, 1, sharex=True, squeeze=False)[:, 0]
    for name in report.systems:
        bleu = [bucket.scores[name]["BLEU"] for bucket in buckets]
        axes[0].plot(positions, bleu, marker="o", label=name)
    axes[0].set_ylabel("BLEU")
    axes[0].legend()
    axes[0].grid(alpha=0.3)
    if others:
        width = 0.8 / len(others)
        for offset, name in enumerate(others):
            difference = [
                bucket.scores[name]["BLEU"] - bucket.scores[baseline]["BLEU"] for bucket in buckets
            ]
            shift = (offset - (len(others) - 1) / 2) * width
            axes[1].bar(
                positions + shift,
                difference,
                width=width,
                color=f"C{offset + 1}",  # the colour of the system's line above
                label=f"{name} - {baseline}",
            )
        axes[1].axhline(0.0, color="black", linewidth=0.8)
        axes[1].set_ylabel(f"BLEU difference to {baseline}")
        axes[1].legend()
        axes[1].grid(alpha=0.3, axis="y")
    axes[-1].set_xticks(positions, labels)
    axes[-1].set_xlabel("morphological density of the reference (morphemes per word)")
    figure.tight_layout()
    figure.savefig(path, dpi=120)


def parse_system(spec: str) -> Tuple[str, str]:
    """NAME=PATH of a --system argument.

    Raises:
        ValueError: no "=", or an empty name or path.
    """
    name, separator, path = spec.partition("=")
    if not separator or not name or not path:
        raise ValueError(f"--system {spec!r}: expected NAME=HYPOTHESIS_FILE")
    return name, path


def parse_edges(spec: str) -> List[float]:
    """The numbers of a comma-separated --edges argument.

    Raises:
        ValueError: a part that is not a number.
    """
    try:
        return [float(edge) for edge in spec.split(",")]
    except ValueError as error:
        raise ValueError(f"--edges {spec!r}: expected comma-separated numbers") from error


def main(argv: Optional[List[str]] = None) -> None:
    parser = argparse.ArgumentParser(
        description="sacreBLEU BLEU and chrF of each system by morphological density (morphemes "
        "per word) of the reference sentence: markdown table, JSON and PNG plot.",
    )
    parser.add_argument(
        "--segmented-ref",
        required=True,
        help=f"the reference segmented into morphemes (joined with {MORPHEME_BOUNDARY})",
    )
    parser.add_argument("--ref", required=True, help="the raw (untokenized) reference")
    parser.add_argument(
        "--system",
        required=True,
        action="append",
        metavar="NAME=HYP",
        help="a system's name and detokenized hypothesis file; repeatable, the first one is the "
        "one the others are compared with in the plot",
    )
    parser.add_argument("--out-dir", required=True, help="where the .md, .json and .png go")
    buckets = parser.add_mutually_exclusive_group()
    buckets.add_argument(
        "--edges",
        default=",".join(f"{edge:g}" for edge in DEFAULT_EDGES),
        help="comma-separated lower bucket edges; the last bucket is open (default: %(default)s)",
    )
    buckets.add_argument(
        "--quantiles", type=int, help="instead of --edges: this many buckets of equal size"
    )
    args = parser.parse_args(argv)

    try:
        systems_paths = [parse_system(spec) for spec in args.system]
        names = [name for name, _ in systems_paths]
        if len(set(names)) != len(names):
            raise ValueError(f"--system names must differ, got {names}")
        references = read_sacrebleu_lines(args.ref)
        densities = sentence_densities(
            read_sacrebleu_lines(args.segmented_ref), references, args.segmented_ref, args.ref
        )
        systems = []
        for name, path in systems_paths:
            hypotheses = read_sacrebleu_lines(path)
            if len(hypotheses) != len(references):
                raise ValueError(
                    f"{path} ({name}) has {len(hypotheses)} lines but {args.ref} has "
                    f"{len(references)}; every reference line needs exactly one hypothesis line"
                )
            systems.append((name, hypotheses))
        if args.quantiles is not None:
            edges = quantile_edges(densities, args.quantiles)
        else:
            edges = parse_edges(args.edges)
        report = bucket_scores(densities, references, systems, edges)
    except (OSError, ValueError) as error:
        sys.exit(f"error: {error}")

    os.makedirs(args.out_dir, exist_ok=True)
    table = format_table(report)
    record = {
        "segmented_reference": args.segmented_ref,
        "reference": args.ref,
        "hypotheses": dict(systems_paths),
        **report_to_json(report),
    }
    with open(os.path.join(args.out_dir, "density_buckets.md"), "w", encoding="utf-8") as out:
        out.write("\n".join(table) + "\n")
    atomic_write_json(os.path.join(args.out_dir, "density_buckets.json"), record)
    plot(report, os.path.join(args.out_dir, "density_buckets.png"))
    print("\n".join(table))


if __name__ == "__main__":
    from fairseq_struct.cli_logging import configure_logging

    configure_logging()
    main()
