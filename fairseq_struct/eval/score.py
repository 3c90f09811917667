"""sacreBLEU BLEU, chrF and chrF++ of detokenized hypotheses against a raw reference file.

Each score carries its sacreBLEU signature; files are read as the sacrebleu command line reads
them, so the numbers equal its. With several `--hyp` files, `--paired-bs` or `--paired-ar` test
every system against the first with sacreBLEU's paired tests (`significance.py`).
"""

import argparse
import re
import sys
from dataclasses import asdict, dataclass
from typing import Dict, List, Optional, Sequence, Tuple

from sacrebleu.metrics import BLEU, CHRF
from sacrebleu.metrics.base import Metric

from fairseq_struct.corpus_io import atomic_write_json
from fairseq_struct.eval.significance import format_report, paired_test, report_to_json


@dataclass(frozen=True)
class MetricScore:
    """One corpus-level score as sacreBLEU reports it."""

    name: str  # sacreBLEU's own name: "BLEU", "chrF2", "chrF2++"
    score: float
    signature: str
    text: str  # sacreBLEU's one-line report, signature included


def _metrics() -> Dict[str, Metric]:
    return {
        "BLEU": BLEU(tokenize="13a", lowercase=False),
        "chrF": CHRF(),
        "chrF++": CHRF(word_order=2),
    }


def corpus_scores(hypotheses: Sequence[str], references: Sequence[str]) -> Dict[str, MetricScore]:
    """BLEU, chrF and chrF++ of the hypotheses against one reference per sentence.

    Raises:
        ValueError: the two lists differ in length.
    """
    if len(hypotheses) != len(references):
        raise ValueError(f"{len(hypotheses)} hypotheses but {len(references)} references")
    scores = {}
    for key, metric in _metrics().items():
        result = metric.corpus_score(list(hypotheses), [list(references)])
        signature = str(metric.get_signature())
        scores[key] = MetricScore(
            name=result.name,
            score=result.score,
            signature=signature,
            text=result.format(signature=signature),
        )
    return scores


def read_sacrebleu_lines(path: str) -> List[str]:
    """The lines of a text file, read as the sacrebleu command line reads them."""
    with open(path, encoding="utf-8", newline="\n") as lines:
        return [line.rstrip() for line in lines]


def score_files(hypothesis_path: str, reference_path: str) -> Dict[str, MetricScore]:
    """BLEU, chrF and chrF++ of a hypothesis file against a raw reference file, line by line.

    Raises:
        ValueError: the files differ in line count (the message names both).
    """
    hypotheses = read_sacrebleu_lines(hypothesis_path)
    references = read_sacrebleu_lines(reference_path)
    if len(hypotheses) != len(references):
        raise ValueError(
            f"{hypothesis_path} has {len(hypotheses)} lines but {reference_path} has "
            f"{len(references)}; every reference line needs exactly one hypothesis line"
        )
    return corpus_scores(hypotheses, references)


_LENGTH = re.compile(r"BP = (?P<bp>[\d.]+) ratio = (?P<ratio>[\d.]+)")


def brevity_penalty_and_ratio(bleu_text: str) -> Optional[Tuple[float, float]]:
    """(brevity penalty, hypothesis/reference length ratio) from sacreBLEU's BLEU line
    ("... (BP = 0.919 ratio = 0.922 hyp_len = ... ref_len = ...)"), None if it has none."""
    match = _LENGTH.search(bleu_text)
    return (float(match["bp"]), float(match["ratio"])) if match else None


def scores_to_json(
    scores: Dict[str, MetricScore], hypothesis_path: str, reference_path: str, num_sentences: int
) -> Dict[str, object]:
    """A JSON-ready record of the scores and the files they were computed from."""
    return {
        "hypotheses": hypothesis_path,
        "references": reference_path,
        "sentences": num_sentences,
        "scores": {key: asdict(score) for key, score in scores.items()},
    }


def main(argv: Optional[List[str]] = None) -> None:
    parser = argparse.ArgumentParser(
        description="sacreBLEU BLEU (13a, cased), chrF and chrF++ of detokenized hypotheses "
        "against a raw reference file, printed with their signatures; with several --hyp, "
        "paired significance tests of BLEU and chrF against the first (the baseline).",
    )
    parser.add_argument(
        "--hyp",
        required=True,
        action="append",
        help="detokenized hypotheses, one per line; repeat it for paired tests, baseline first",
    )
    parser.add_argument("--ref", required=True, help="raw (untokenized) reference, one per line")
    parser.add_argument("--json", help="also write the scores and signatures to this JSON file")
    paired = parser.add_mutually_exclusive_group()
    paired.add_argument(
        "--paired-bs", action="store_true", help="paired bootstrap resampling (sacreBLEU's)"
    )
    paired.add_argument(
        "--paired-ar", action="store_true", help="paired approximate randomization (sacreBLEU's)"
    )
    parser.add_argument(
        "--paired-n",
        type=int,
        default=0,
        help="bootstrap resamples or AR trials; 0 takes sacreBLEU's defaults, 1000 and 10000 "
        "(the seed is sacreBLEU's: the SACREBLEU_SEED environment variable, default 12345)",
    )
    args = parser.parse_args(argv)

    if args.paired_bs or args.paired_ar:
        _main_paired(args)
        return
    if len(args.hyp) > 1:
        parser.error("several --hyp files need --paired-bs or --paired-ar")
    hypotheses = args.hyp[0]
    try:
        scores = score_files(hypotheses, args.ref)
    except ValueError as error:
        sys.exit(f"error: {error}")
    for score in scores.values():
        print(score.text)
    if args.json:
        record = scores_to_json(scores, hypotheses, args.ref, len(read_sacrebleu_lines(args.ref)))
        atomic_write_json(args.json, record)


def _main_paired(args: argparse.Namespace) -> None:
    if len(args.hyp) < 2:
        sys.exit("error: a paired test needs at least two --hyp files, the baseline first")
    references = read_sacrebleu_lines(args.ref)
    systems = []
    for path in args.hyp:
        hypotheses = read_sacrebleu_lines(path)
        if len(hypotheses) != len(references):
            sys.exit(
                f"error: {path} has {len(hypotheses)} lines but {args.ref} has "
                f"{len(references)}; every reference line needs exactly one hypothesis line"
            )
        systems.append((path, hypotheses))
    report = paired_test(systems, references, "bs" if args.paired_bs else "ar", args.paired_n)
    for line in format_report(report):
        print(line)
    if args.json:
        record = {"references": args.ref, "sentences": len(references), **report_to_json(report)}
        atomic_write_json(args.json, record)


if __name__ == "__main__":
    from fairseq_struct.cli_logging import configure_logging

    configure_logging()
    main()
