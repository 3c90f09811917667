"""Which checkpoint of a training run a grid reports: the rules (`--checkpoint-rule`,
docs/reproducing.md), on the run's saved files and the validations fairseq-train logged.

Saved checkpoints are the interval ones (`checkpoint_<epoch>_<updates>.pt`) and
checkpoint_last.pt; ties go to the later checkpoint, as fairseq's own best does.
"""

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

# The rules without a count; average-last-N is the other.
SIMPLE_RULES = ("valid-bleu", "valid-nll", "last", "valid-bleu-beam")
# The grids' rule: it chose the better checkpoint wherever the rules disagreed
# (docs/results/README.md, "The checkpoint rules compared").
DEFAULT_RULE = "valid-bleu-beam"
INTERVAL_CHECKPOINT = re.compile(r"checkpoint_\d+_(\d+)\.pt$")


class RuleError(ValueError):
    """A rule that is not known or cannot be applied to a run; the message says which."""


@dataclass(frozen=True)
class CheckpointRule:
    kind: str  # one of SIMPLE_RULES, or "average-last"
    count: int = 1  # N of average-last-N

    @property
    def name(self) -> str:
        return f"average-last-{self.count}" if self.kind == "average-last" else self.kind

    @classmethod
    def parse(cls, spec: str) -> "CheckpointRule":
        """`valid-bleu`, `valid-nll`, `last`, `average-last-N` (N ≥ 2) or `valid-bleu-beam`."""
        averaged = re.fullmatch(r"average-last-(\d+)", spec)
        if averaged and int(averaged[1]) >= 2:
            return cls("average-last", int(averaged[1]))
        if spec in SIMPLE_RULES:
            return cls(spec)
        raise RuleError(
            f"checkpoint rule {spec!r}: expected one of valid-bleu, valid-nll, last, "
            "average-last-N (N ≥ 2, e.g. average-last-3) or valid-bleu-beam"
        )

    def keep_interval_updates(self) -> Optional[int]:
        """How many interval checkpoints training must keep for the rule (fairseq's
        --keep-interval-updates; -1: all); None where checkpoint_best/last suffice."""
        if self.kind == "average-last":
            return self.count
        return -1 if self.kind in ("valid-nll", "valid-bleu-beam") else None


def saved_checkpoints(checkpoints: Path, last_update: Optional[int]) -> Dict[int, Path]:
    """The run's saved checkpoints by update: the interval ones, and checkpoint_last.pt at
    `last_update` (the log's) where no interval checkpoint has that update."""
    found = {
        int(match[1]): path
        for path in checkpoints.glob("checkpoint_*_*.pt")
        if (match := INTERVAL_CHECKPOINT.search(path.name))
    }
    last = checkpoints / "checkpoint_last.pt"
    if last.is_file() and last_update is not None and last_update not in found:
        found[last_update] = last
    return dict(sorted(found.items()))


def best_of(values: Dict[int, float], maximize: bool) -> int:
    """The update with the best value, the later one on a tie.

    Raises:
        RuleError: no values.
    """
    if not values:
        raise RuleError("no checkpoint has a validation score to choose by")
    sign = 1.0 if maximize else -1.0
    return max(values, key=lambda update: (sign * values[update], update))


def validated_nll(
    saved: Dict[int, Path], nll_curve: Sequence[Tuple[int, float]]
) -> Dict[int, float]:
    """The validation NLL of the log of each saved checkpoint that was validated, by update.

    Raises:
        RuleError: no saved checkpoint was validated.
    """
    validated = {update: value for update, value in nll_curve if update in saved}
    if not validated:
        raise RuleError(
            f"none of the saved checkpoints (updates {sorted(saved)}) has a validation NLL in "
            "the training log"
        )
    return validated


def newest(saved: Dict[int, Path], count: int) -> List[int]:
    """The `count` newest saved checkpoints' updates, newest first.

    Raises:
        RuleError: fewer saved checkpoints than `count`.
    """
    if len(saved) < count:
        raise RuleError(
            f"{count} checkpoints to average, but the run saved {len(saved)} (updates "
            f"{sorted(saved)}): train with --save-interval-updates and --keep-interval-updates "
            f"{count} or more"
        )
    return sorted(saved, reverse=True)[:count]
