"""Almost Stochastic Order between two systems' scores over several seeds (design.md §5.4).

ε_min(A, B) (Dror, Shlomov and Reichart 2019) is an upper bound, at confidence 1 − α, on how much
A's score distribution violates being stochastically larger than B's (0: A is always better, 1:
never), computed in both directions by deepsig (`deepsig.aso`, Ulmer et al. 2022), α = 0.05.
A is stochastically dominant over B when ε_min(A, B) < τ (`--threshold`, in (0, 0.5], default
0.5), symmetrically for B; otherwise there is no significant difference.
"""

import argparse
import json
import math
import sys
import warnings
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

import numpy as np
from tabulate import tabulate

from fairseq_struct.commands import program_name
from fairseq_struct.corpus_io import atomic_write_json
from fairseq_struct.eval.seed_scores import SeedScores

CONFIDENCE_LEVEL = 0.95  # α = 0.05, the BERT2D paper's appendix
DEFAULT_THRESHOLD = 0.5  # the BERT2D paper's figures; deepsig recommends 0.2
DEFAULT_SEED = 1234
DEFAULT_BOOTSTRAP_ITERATIONS = 1000  # deepsig's default
NO_DIFFERENCE = "no significant difference"


class ScoresError(ValueError):
    """Scores that cannot be read or cannot be tested; the message names the file."""


@dataclass(frozen=True)
class SystemScores(SeedScores):
    """One system's per-seed scores of one metric, and where they were read from."""

    name: str
    scores: List[float]
    source: str  # a path, or "command line"
    metric: Optional[str] = None  # as the file names it; None for text and the command line


@dataclass(frozen=True)
class ASOResult:
    a: SystemScores
    b: SystemScores
    metric: Optional[str]
    eps_min_a_over_b: float  # ε_min(A, B): A better than B is violated this much at most
    eps_min_b_over_a: float
    threshold: float
    confidence_level: float
    num_bootstrap_iterations: int
    seed: int

    @property
    def dominant(self) -> Optional[str]:
        """The dominant system, "A" or "B", whose ε_min is below τ; None when neither is.

        The BERT2D paper colours a cell red when ε_min(left, bottom) > 0.5; testing the opposite
        claim, ε_min(bottom, left) < τ, is the stronger statement."""
        # ε_min(A, B) + ε_min(B, A) >= 1 but for deepsig's integral skipping its first point,
        # so both fall below τ <= 0.5 only in a near tie; the smaller violation then wins.
        if (
            self.eps_min_a_over_b < self.threshold
            and self.eps_min_a_over_b <= self.eps_min_b_over_a
        ):
            return "A"
        if self.eps_min_b_over_a < self.threshold:
            return "B"
        return None

    @property
    def verdict(self) -> str:
        if self.dominant == "A":
            return f"{self.a.name} is stochastically dominant over {self.b.name}"
        if self.dominant == "B":
            return f"{self.b.name} is stochastically dominant over {self.a.name}"
        return NO_DIFFERENCE

    @property
    def signature(self) -> str:
        """The test's settings in one line, so an ε_min can be compared with another."""
        alpha = round(1 - self.confidence_level, 10)
        return (
            f"aso|alpha:{alpha}|tau:{self.threshold}|bootstrap:{self.num_bootstrap_iterations}"
            f"|seed:{self.seed}|deepsig:{version('deepsig')}"
        )


def check_scores(system: SystemScores) -> None:
    if len(system.scores) < 2:
        raise ScoresError(
            f"{system.source}: {system.name} has {len(system.scores)} score(s); Almost Stochastic "
            "Order compares score distributions and needs several seeds per system (the "
            "BERT2D paper uses five)"
        )
    bad = [score for score in system.scores if not math.isfinite(score)]
    if bad:
        raise ScoresError(f"{system.source}: {system.name} has non-finite scores {bad}")


def _deepsig_aso() -> Any:
    """deepsig's `aso`, imported when a test runs (it loads pandas and joblib). deepsig's package
    imports torch only to accept torch tensors, which this module never passes: unless torch is
    loaded already, its import fails on purpose while deepsig's own modules load (deepsig
    expects that), so ASO starts without torch. Its dependencies load first, unblocked (scipy
    looks for torch among the loaded modules)."""
    import joblib  # noqa: F401
    import pandas  # noqa: F401
    import scipy.stats  # noqa: F401

    blocked = "torch" not in sys.modules
    if blocked:
        sys.modules["torch"] = None  # type: ignore[assignment]  (import torch: ImportError)
    try:
        from deepsig import aso
    finally:
        if blocked:
            del sys.modules["torch"]
    return aso


def eps_min(
    scores_a: Sequence[float],
    scores_b: Sequence[float],
    confidence_level: float = CONFIDENCE_LEVEL,
    num_bootstrap_iterations: int = DEFAULT_BOOTSTRAP_ITERATIONS,
    seed: int = DEFAULT_SEED,
) -> float:
    """ε_min(A, B) of deepsig's `aso`: small when A's scores are stochastically larger."""
    aso = _deepsig_aso()

    # deepsig seeds numpy's global generator; a caller's random stream must not depend on it.
    state = np.random.get_state()
    try:
        with warnings.catch_warnings():
            # Equal score sets have no Wasserstein distance; deepsig then sets the violation
            # ratio to 0.5, as it should, but warns on every such bootstrap sample.
            warnings.filterwarnings("ignore", "Division by zero encountered in violation ratio")
            return float(
                aso(
                    list(scores_a),
                    list(scores_b),
                    confidence_level=confidence_level,
                    num_bootstrap_iterations=num_bootstrap_iterations,
                    num_jobs=1,
                    show_progress=False,
                    seed=seed,
                )
            )
    finally:
        np.random.set_state(state)


def almost_stochastic_order(
    a: SystemScores,
    b: SystemScores,
    metric: Optional[str] = None,
    threshold: float = DEFAULT_THRESHOLD,
    num_bootstrap_iterations: int = DEFAULT_BOOTSTRAP_ITERATIONS,
    seed: int = DEFAULT_SEED,
) -> ASOResult:
    """ε_min in both directions and the verdict at threshold τ.

    Raises:
        ScoresError: a system with fewer than two scores, or with a non-finite one.
        ValueError: a threshold outside (0, 0.5] or no bootstrap iterations.
    """
    # ε-ASO says A is better than B only for ε < 0.5 (Dror et al. 2019, section 3).
    if not 0 < threshold <= 0.5:
        raise ValueError(f"the threshold τ must be in (0, 0.5], got {threshold}")
    if num_bootstrap_iterations < 1:
        raise ValueError(f"need at least one bootstrap iteration, got {num_bootstrap_iterations}")
    check_scores(a)
    check_scores(b)
    settings = dict(num_bootstrap_iterations=num_bootstrap_iterations, seed=seed)
    return ASOResult(
        a=a,
        b=b,
        metric=metric,
        eps_min_a_over_b=eps_min(a.scores, b.scores, CONFIDENCE_LEVEL, **settings),
        eps_min_b_over_a=eps_min(b.scores, a.scores, CONFIDENCE_LEVEL, **settings),
        threshold=threshold,
        confidence_level=CONFIDENCE_LEVEL,
        **settings,
    )


def _as_scores(values: Any, path: str, where: str) -> List[float]:
    if not isinstance(values, list) or not all(
        isinstance(value, (int, float)) and not isinstance(value, bool) for value in values
    ):
        raise ScoresError(f"{path}: {where} should be a list of numbers, got {values!r}")
    return [float(value) for value in values]


def read_scores(path: str, metric: Optional[str] = None) -> SystemScores:
    """One system's per-seed scores from a file.

    Accepted forms:
    - the JSON of `fairseq_struct.downstream.seeds`: {"name", "metric", "scores": [...], ...};
      `metric`, when given, must be the file's;
    - a JSON object of metric name → list of per-seed scores; `metric` picks one (it may be
      left out when there is only one);
    - text, one score a line (blank lines and lines starting with # are skipped).

    Raises:
        ScoresError: the file is missing, malformed, or lacks the metric (the keys present are
            named).
    """
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as error:
        raise ScoresError(f"{path}: cannot read scores ({error.strerror})") from error
    if text.lstrip().startswith("{"):
        try:
            record = json.loads(text)
        except json.JSONDecodeError as error:
            raise ScoresError(f"{path}: invalid JSON ({error})") from error
        return _scores_from_json(record, path, metric)
    scores = []
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        try:
            scores.append(float(line))
        except ValueError:
            raise ScoresError(f"{path}, line {number}: expected one score, got {line!r}") from None
    return SystemScores(name=file.stem, scores=scores, source=path)


def _scores_from_json(record: Dict[str, Any], path: str, metric: Optional[str]) -> SystemScores:
    name = Path(path).name.removesuffix(".json").removesuffix(".seeds")
    if "scores" in record and "metric" in record:  # the seeds runner's summary
        if metric is not None and metric != record["metric"]:
            raise ScoresError(
                f"{path}: no metric {metric!r}; the file holds scores of metric "
                f"{record['metric']!r} (keys present: {sorted(record)})"
            )
        scores = _as_scores(record["scores"], path, '"scores"')
        return SystemScores(str(record.get("name") or name), scores, path, str(record["metric"]))
    if metric is None:
        if len(record) != 1:
            raise ScoresError(
                f"{path}: pick one metric with --metric; keys present: {sorted(record)}"
            )
        metric = next(iter(record))
    if metric not in record:
        raise ScoresError(f"{path}: no metric {metric!r}; keys present: {sorted(record)}")
    return SystemScores(name, _as_scores(record[metric], path, repr(metric)), path, metric)


def _decimals(result: ASOResult) -> int:
    # Scores in [0, 1] need four decimals to show a difference; percentages need two.
    largest = max(abs(score) for score in result.a.scores + result.b.scores)
    return 4 if largest <= 1.5 else 2


def format_result(result: ASOResult) -> List[str]:
    """Text lines: the signature, a table of the two systems, and the verdict."""
    digits = _decimals(result)
    metric = f" of {result.metric}" if result.metric else ""
    rows = [
        [
            system.name,
            len(system.scores),
            f"{system.mean:.{digits}f} ± {system.std:.{digits}f}",
            f"ε_min({system.name} > {other.name}) = {eps:.3f}",
        ]
        for system, other, eps in (
            (result.a, result.b, result.eps_min_a_over_b),
            (result.b, result.a, result.eps_min_b_over_a),
        )
    ]
    table = tabulate(rows, headers=["system", "n", f"mean ± std{metric}", "ε_min"])
    return [
        f"Almost Stochastic Order (Dror et al. 2019){metric}: {result.signature}",
        *table.splitlines(),
        f"verdict (ε_min < {result.threshold}): {result.verdict}",
    ]


def result_to_json(result: ASOResult) -> Dict[str, Any]:
    """A JSON-ready record with the same content as `format_result`."""

    def system(scores: SystemScores, eps: float) -> Dict[str, Any]:
        return {
            "name": scores.name,
            "source": scores.source,
            "n": len(scores.scores),
            "scores": scores.scores,
            "mean": scores.mean,
            "std": scores.std,
            "eps_min_over_other": eps,
        }

    return {
        "test": "almost stochastic order",
        "signature": result.signature,
        "metric": result.metric,
        "confidence_level": result.confidence_level,
        "threshold": result.threshold,
        "num_bootstrap_iterations": result.num_bootstrap_iterations,
        "seed": result.seed,
        "a": system(result.a, result.eps_min_a_over_b),
        "b": system(result.b, result.eps_min_b_over_a),
        "eps_min_a_over_b": result.eps_min_a_over_b,
        "eps_min_b_over_a": result.eps_min_b_over_a,
        "dominant": result.dominant,
        "verdict": result.verdict,
    }


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog=program_name("fairseq_struct.eval.almost_stochastic_order"),
        description="Almost Stochastic Order (Dror et al. 2019, deepsig) between two systems' "
        "scores over several seeds: ε_min at α = 0.05 in both directions and a verdict.",
    )
    parser.add_argument(
        "files",
        nargs="*",
        metavar="FILE",
        help="scores of A, then of B: JSON of fairseq-struct seeds, JSON of metric → "
        "list, or text with one score a line (at most two; --scores-a/--scores-b replace them)",
    )
    parser.add_argument("--scores-a", nargs="+", type=float, metavar="X", help="A's scores")
    parser.add_argument("--scores-b", nargs="+", type=float, metavar="X", help="B's scores")
    parser.add_argument("--name-a", help="A's name (default: the JSON's name or the file name)")
    parser.add_argument("--name-b", help="B's name (default: the JSON's name or the file name)")
    parser.add_argument("--metric", help="the metric to read from JSON files, e.g. f1")
    parser.add_argument(
        "--threshold",
        type=float,
        default=DEFAULT_THRESHOLD,
        help="τ in (0, 0.5]: a system dominates when its ε_min < τ (default 0.5, the BERT2D "
        "paper's figures; deepsig recommends the stricter 0.2)",
    )
    parser.add_argument(
        "--num-bootstrap-iterations",
        type=int,
        default=DEFAULT_BOOTSTRAP_ITERATIONS,
        help="bootstrap iterations estimating ε_min's variance (default 1000, deepsig's)",
    )
    parser.add_argument(
        "--seed", type=int, default=DEFAULT_SEED, help="seed of the bootstrap (default 1234)"
    )
    parser.add_argument("--json", metavar="OUT", help="also write the result to this JSON file")
    return parser.parse_args(argv)


def _systems(args: argparse.Namespace) -> List[SystemScores]:
    """A and B from the files and the command line, in that order."""
    files = list(args.files)
    from_files = (args.scores_a is None) + (args.scores_b is None)
    if len(files) != from_files:
        raise ScoresError(
            f"expected {from_files} score file(s) besides --scores-a/--scores-b, got {len(files)}: "
            "give the scores of exactly two systems, A then B"
        )
    systems = []
    for given, label, name in (
        (args.scores_a, "A", args.name_a),
        (args.scores_b, "B", args.name_b),
    ):
        if given is None:
            system = read_scores(files.pop(0), args.metric)
        else:
            system = SystemScores(label, list(given), "command line")
        systems.append(
            SystemScores(name or system.name, system.scores, system.source, system.metric)
        )
    if systems[0].name == systems[1].name:  # e.g. two runs of one configuration
        systems = [
            SystemScores(f"{label}:{s.name}", s.scores, s.source, s.metric)
            for label, s in zip("AB", systems)
        ]
    return systems


def _metric(args: argparse.Namespace, a: SystemScores, b: SystemScores) -> Optional[str]:
    if args.metric:
        return args.metric
    named = {system.metric for system in (a, b) if system.metric is not None}
    if len(named) > 1:
        raise ScoresError(
            f"{a.source} holds {a.metric!r} scores but {b.source} holds {b.metric!r}: "
            "compare one metric"
        )
    return named.pop() if named else None


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    try:
        a, b = _systems(args)
        result = almost_stochastic_order(
            a, b, _metric(args, a, b), args.threshold, args.num_bootstrap_iterations, args.seed
        )
    except ValueError as error:  # ScoresError too
        print(f"error: {error}", file=sys.stderr)
        return 1
    for line in format_result(result):
        print(line)
    if args.json:
        atomic_write_json(args.json, result_to_json(result))
    return 0


if __name__ == "__main__":
    from fairseq_struct.cli_logging import configure_logging

    configure_logging()
    sys.exit(main())
