"""Run one fine-tuning configuration over several seeds and report mean ± std (design.md §5.4).

Only the literal `{seed}` is replaced, in each argument of the command after `--` and in
`--scores`; the command runs through no shell unless it names one (`bash -c '...'`). A seed whose
scores file exists is skipped unless `--rerun`, so a killed run resumes. The summary, which
`eval.almost_stochastic_order` reads: `{"name", "metric", "seeds", "scores", "mean", "std"}`,
with the sample standard deviation (0 for one seed).
"""

import argparse
import json
import logging
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

from fairseq_struct.commands import program_name
from fairseq_struct.corpus_io import atomic_write_json
from fairseq_struct.eval.seed_scores import SeedScores

logger = logging.getLogger(__name__)

SEED_FIELD = "{seed}"


class SeedRunError(Exception):
    """A seed's command failed or its scores are unusable; `exit_code` is what main returns."""

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code


@dataclass(frozen=True)
class SeedsSummary(SeedScores):
    name: str
    metric: str
    seeds: List[int]
    scores: List[float]

    def to_json(self) -> Dict[str, Any]:
        return {
            "name": self.name,
            "metric": self.metric,
            "seeds": self.seeds,
            "scores": self.scores,
            "mean": self.mean,
            "std": self.std,
        }

    def line(self) -> str:
        # Scores in [0, 1] need four decimals to show seed-to-seed variation; percentages two.
        digits = 4 if max(abs(score) for score in self.scores) <= 1.5 else 2
        return (
            f"{self.name}: {self.mean:.{digits}f} ± {self.std:.{digits}f} over "
            f"{len(self.scores)} seed{'s' if len(self.scores) > 1 else ''} ({self.metric})"
        )


def with_seed(template: str, seed: int) -> str:
    return template.replace(SEED_FIELD, str(seed))


def read_metric(path: Path, metric: str) -> float:
    """The number under `metric` in a scores JSON: a flat key, or a dotted path into nested dicts.

    Raises:
        SeedRunError: unreadable JSON, or no number under `metric` (the keys present are named).
    """
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as error:
        raise SeedRunError(f"{path}: cannot read scores JSON ({error})") from error
    value: Any = record
    if isinstance(record, dict) and metric in record:  # a flat key may itself contain dots
        value = record[metric]
    else:
        for depth, key in enumerate(metric.split(".")):
            if not isinstance(value, dict) or key not in value:
                at = ".".join(metric.split(".")[:depth]) or "the top level"
                present = sorted(value) if isinstance(value, dict) else type(value).__name__
                raise SeedRunError(f"{path}: no metric {metric!r}; keys at {at}: {present}")
            value = value[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise SeedRunError(f"{path}: {metric!r} is {value!r}, not a number")
    return float(value)


def run_seed(command: Sequence[str], seed: int) -> None:
    """Run the command of one seed, its output streamed; raise with its exit code if it fails."""
    argv = [with_seed(argument, seed) for argument in command]
    logger.info("seed %d: %s", seed, shlex.join(argv))
    sys.stdout.flush()  # our lines before the child's, which share the terminal
    sys.stderr.flush()
    try:
        completed = subprocess.run(argv, check=False)
    except OSError as error:
        raise SeedRunError(f"seed {seed}: cannot run {argv[0]!r} ({error})", 127) from error
    if completed.returncode != 0:
        # A command killed by signal N exits as a shell reports it: 128 + N.
        code = completed.returncode if completed.returncode > 0 else 128 - completed.returncode
        raise SeedRunError(
            f"seed {seed}: the command failed with exit code {code}: {shlex.join(argv)}", code
        )


def run_seeds(
    command: Sequence[str],
    seeds: Sequence[int],
    scores_template: str,
    metric: str,
    name: str,
    rerun: bool = False,
) -> SeedsSummary:
    """Run (or resume) every seed in order and collect its score.

    Raises:
        SeedRunError: a failing command (with its exit code), or a seed whose scores file is
            missing after its command succeeded or lacks the metric.
    """
    scores = []
    for seed in seeds:
        scores_path = Path(with_seed(scores_template, seed))
        if scores_path.exists() and not rerun:
            logger.info("seed %d: %s exists, skipped (--rerun runs it again)", seed, scores_path)
        else:
            run_seed(command, seed)
            if not scores_path.exists():
                raise SeedRunError(f"seed {seed}: the command succeeded but wrote no {scores_path}")
        scores.append(read_metric(scores_path, metric))
        logger.info("seed %d: %s = %s", seed, metric, scores[-1])
    return SeedsSummary(name=name, metric=metric, seeds=list(seeds), scores=scores)


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        usage=f"{program_name('fairseq_struct.downstream.seeds')} --seeds N [N ...] --scores "
        "PATH --metric KEY [options] -- COMMAND [ARG ...]",
        description="Run one configuration over several seeds ({seed} in COMMAND and in --scores "
        "is replaced by each seed) and report the metric's mean ± std.",
    )
    parser.add_argument("--seeds", nargs="+", type=int, required=True, help="the seeds, in order")
    parser.add_argument(
        "--scores",
        required=True,
        help="each seed's scores JSON, with {seed} in it: 'results/ner-seed{seed}/scores.json'",
    )
    parser.add_argument(
        "--metric", required=True, help="key of the metric in the scores JSON; dotted for nested"
    )
    parser.add_argument("--name", help="the configuration's name (default: --out's file name)")
    parser.add_argument("--out", help="write the summary JSON here (read by fairseq-struct aso)")
    parser.add_argument(
        "--rerun", action="store_true", help="run seeds whose scores file exists again"
    )
    argv = list(argv)
    split = argv.index("--") if "--" in argv else len(argv)
    args = parser.parse_args(argv[:split])  # before the checks below, so --help works
    if split == len(argv):
        parser.error("give the command to run after --")
    args.command = argv[split + 1 :]
    if not args.command:
        parser.error("the command after -- is empty")
    if len(set(args.seeds)) != len(args.seeds):
        parser.error(f"--seeds repeats a seed: {args.seeds}")
    if SEED_FIELD not in args.scores:
        parser.error(f"--scores needs {SEED_FIELD}, or every seed would share one scores file")
    if not any(SEED_FIELD in argument for argument in args.command):
        parser.error(f"the command after -- has no {SEED_FIELD}: every seed would run the same")
    return args


def default_name(out: Optional[str]) -> str:
    if out is None:
        return "system"
    return Path(out).name.removesuffix(".json").removesuffix(".seeds")


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else list(argv))
    try:
        summary = run_seeds(
            args.command,
            args.seeds,
            args.scores,
            args.metric,
            args.name or default_name(args.out),
            args.rerun,
        )
    except SeedRunError as error:
        print(f"error: {error}", file=sys.stderr)
        return error.exit_code
    if args.out:
        atomic_write_json(args.out, summary.to_json())
    print(summary.line())
    return 0


if __name__ == "__main__":
    from fairseq_struct.cli_logging import configure_logging

    configure_logging()
    sys.exit(main())
