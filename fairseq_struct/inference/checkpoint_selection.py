"""Which checkpoints of a fairseq save directory to average.

fairseq names its checkpoints `checkpoint<epoch>.pt` (end of an epoch), `checkpoint_<epoch>_
<updates>.pt` (every --save-interval-updates), `checkpoint_best.pt` / `checkpoint_last.pt` and
`checkpoint.best_<metric>_<value>.pt` (--keep-best-checkpoints); the last three are copies of
the others. Each file stores its validation metric (`extra_state["val_loss"]`, the value of
--best-checkpoint-metric despite its name) and whether higher is better
(`cfg.checkpoint.maximize_best_checkpoint_metric`).
"""

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional

EPOCH_PATTERN = r"checkpoint(\d+)\.pt"
UPDATE_PATTERN = r"checkpoint_\d+_(\d+)\.pt"


def fairseq_checkpoint_utils() -> Any:
    """fairseq's `checkpoint_utils` with the plugin in place (its safe loader, its models),
    imported when a checkpoint is first read: the command lines start without torch."""
    import fairseq_struct

    fairseq_struct.register()
    from fairseq import checkpoint_utils

    return checkpoint_utils


class SelectionError(ValueError):
    """Checkpoints that cannot be chosen as asked; the message names the directory or file."""


@dataclass(frozen=True)
class ScoredCheckpoint:
    path: Path
    num_updates: int
    metric: str  # --best-checkpoint-metric of the run
    value: float
    maximize: bool


def last_checkpoints(directory: Path, count: int, by: str) -> List[Path]:
    """The `count` newest checkpoints by update (`by="update"`) or epoch (`by="epoch"`),
    newest first (fairseq's own `checkpoint_paths`)."""
    pattern = UPDATE_PATTERN if by == "update" else EPOCH_PATTERN
    paths = fairseq_checkpoint_utils().checkpoint_paths(str(directory), pattern)
    found = [Path(path) for path in paths]
    if len(found) < count:
        kind = "checkpoint_<epoch>_<updates>.pt" if by == "update" else "checkpoint<epoch>.pt"
        raise SelectionError(
            f"{directory}: {len(found)} {kind} file(s), fewer than the {count} asked for "
            f"(train with --save-interval-updates/--keep-interval-updates or "
            f"--keep-last-epochs to keep more)"
        )
    return found[:count]


def scored_checkpoint(path: Path) -> Optional[ScoredCheckpoint]:
    """The validation metric a checkpoint was saved with; None when it has none (saved
    without validation, e.g. --disable-validation)."""
    state = fairseq_checkpoint_utils().load_checkpoint_to_cpu(str(path))
    value = state.get("extra_state", {}).get("val_loss")
    if value is None:
        return None
    cfg = state["cfg"]
    history = state.get("optimizer_history") or [{}]
    return ScoredCheckpoint(
        path=path,
        num_updates=int(history[-1].get("num_updates", 0)),
        metric=str(cfg.checkpoint.best_checkpoint_metric),
        value=float(value),
        maximize=bool(cfg.checkpoint.maximize_best_checkpoint_metric),
    )


def best_checkpoints(directory: Path, count: int) -> List[ScoredCheckpoint]:
    """The `count` checkpoints of `directory` with the best stored validation metric, best
    first. Copies (checkpoint_best.pt, checkpoint_last.pt, checkpoint.best_*.pt) count once:
    one file per number of updates, the epoch and update checkpoints preferred."""
    by_update: Dict[int, ScoredCheckpoint] = {}
    copies = re.compile(r"checkpoint(_best|_last|\.best_.*)\.pt$")
    for path in sorted(directory.glob("checkpoint*.pt"), key=lambda p: bool(copies.match(p.name))):
        scored = scored_checkpoint(path)
        if scored is not None:
            by_update.setdefault(scored.num_updates, scored)
    candidates = list(by_update.values())
    if len(candidates) < count:
        raise SelectionError(
            f"{directory}: {len(candidates)} checkpoint(s) with a stored validation metric "
            f"(after removing copies), fewer than the {count} asked for"
        )
    metrics = {(c.metric, c.maximize) for c in candidates}
    if len(metrics) > 1:
        raise SelectionError(
            f"{directory}: the checkpoints were saved with different validation metrics "
            f"({', '.join(sorted(m for m, _ in metrics))}); give the files to average instead"
        )
    maximize = candidates[0].maximize
    candidates.sort(key=lambda c: (-c.value if maximize else c.value, -c.num_updates))
    return candidates[:count]
