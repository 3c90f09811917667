"""Average the weights of fairseq checkpoints (pip users have no fairseq `scripts/`).

    fairseq-struct average-checkpoints --dir checkpoints --num-update-checkpoints 5 \\
        --output checkpoints/averaged.pt

The last or best N checkpoints of a run, or the files given; the output is the newest input
with the averaged weights, for translating and evaluating (docs/translating.md).
"""

import argparse
import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Dict, List, Optional, Sequence

from fairseq_struct.commands import program_name
from fairseq_struct.corpus_io import atomic_writer
from fairseq_struct.inference.checkpoint_selection import (
    SelectionError,
    best_checkpoints,
    fairseq_checkpoint_utils,
    last_checkpoints,
)

if TYPE_CHECKING:  # torch loads with the first checkpoint: `--help` starts without it
    from torch import Tensor

logger = logging.getLogger(__name__)


class AverageError(ValueError):
    """Checkpoints that cannot be averaged; the message names the file."""


def architecture(state: dict) -> str:
    model_cfg = state["cfg"]["model"]
    return str(getattr(model_cfg, "arch", None) or getattr(model_cfg, "_name", None))


def average_checkpoints(paths: Sequence[Path]) -> dict:
    """The newest-first `paths`' averaged checkpoint (the first path's state around it).

    Raises:
        AverageError: fewer than one path, or checkpoints that differ in architecture,
            parameter names or shapes.
    """
    import torch

    if not paths:
        raise AverageError("no checkpoints to average")
    checkpoint_utils = fairseq_checkpoint_utils()
    first_path = paths[0]
    first = checkpoint_utils.load_checkpoint_to_cpu(str(first_path))
    first_params: Dict[str, "Tensor"] = first["model"]
    # A copy even where a parameter is float64 already: the sums must not alias the weights.
    sums = {name: tensor.to(torch.float64, copy=True) for name, tensor in first_params.items()}
    for path in paths[1:]:
        state = checkpoint_utils.load_checkpoint_to_cpu(str(path))
        _check_same_model(path, state, first_path, first)
        for name, tensor in state["model"].items():
            sums[name] += tensor.to(torch.float64)
        del state  # the first checkpoint, the sums and one more in memory at a time
    averaged = {}
    for name, total in sums.items():
        dtype = first_params[name].dtype
        if dtype.is_floating_point:
            averaged[name] = (total / len(paths)).to(dtype)
        else:
            averaged[name] = torch.div(total, len(paths), rounding_mode="floor").to(dtype)
    first["model"] = averaged
    first.pop("last_optimizer_state", None)
    extra_state = first.setdefault("extra_state", {})
    extra_state.pop("val_loss", None)
    extra_state["averaged_from"] = [str(path) for path in paths]
    return first


def write_average(paths: Sequence[Path], output: Path) -> None:
    """Write the newest-first `paths`' averaged checkpoint to `output` (atomically).

    Raises:
        AverageError: as average_checkpoints.
    """
    import torch

    state = average_checkpoints(paths)
    with atomic_writer(output) as file:
        torch.save(state, file)


def _check_same_model(path: Path, state: dict, first_path: Path, first: dict) -> None:
    arch, first_arch = architecture(state), architecture(first)
    if arch != first_arch:
        raise AverageError(
            f"{path}: architecture {arch}, but {first_path} is {first_arch}; only checkpoints "
            "of one model can be averaged"
        )
    params: Dict[str, "Tensor"] = state["model"]
    first_params: Dict[str, "Tensor"] = first["model"]
    missing = sorted(set(first_params) - set(params))
    extra = sorted(set(params) - set(first_params))
    if missing or extra:
        raise AverageError(
            f"{path}: its parameters differ from {first_path}'s (missing: "
            f"{', '.join(missing[:5]) or 'none'}; not in {first_path}: "
            f"{', '.join(extra[:5]) or 'none'})"
        )
    for name, tensor in params.items():
        if tensor.shape != first_params[name].shape:
            raise AverageError(
                f"{path}: parameter {name} has shape {tuple(tensor.shape)}, but "
                f"{tuple(first_params[name].shape)} in {first_path}"
            )


def chosen_checkpoints(args: argparse.Namespace) -> List[Path]:
    """The files to average, newest (or best) first."""
    if args.inputs:
        paths = [Path(path) for path in args.inputs]
        for path in paths:
            if not path.is_file():
                raise SelectionError(f"{path}: no such checkpoint file")
        return paths
    directory = Path(args.dir)
    if not directory.is_dir():
        raise SelectionError(f"{directory}: no such directory")
    if args.num_update_checkpoints:
        return last_checkpoints(directory, args.num_update_checkpoints, by="update")
    if args.num_epoch_checkpoints:
        return last_checkpoints(directory, args.num_epoch_checkpoints, by="epoch")
    best = best_checkpoints(directory, args.num_best_checkpoints)
    for scored in best:
        logger.info(
            "%s: %s %.4g at %d updates", scored.path, scored.metric, scored.value,
            scored.num_updates,
        )  # fmt: skip
    return [scored.path for scored in best]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=program_name("fairseq_struct.inference.average_checkpoints"),
        description="Average the weights of the last or best checkpoints of a fairseq run.",
    )
    parser.add_argument("--output", required=True, help="the averaged checkpoint to write")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--inputs", nargs="+", help="the checkpoint files to average")
    source.add_argument("--dir", help="a fairseq --save-dir to choose checkpoints from")
    choice = parser.add_mutually_exclusive_group()
    choice.add_argument(
        "--num-update-checkpoints",
        type=int,
        metavar="N",
        help="the last N checkpoint_<epoch>_<updates>.pt",
    )
    choice.add_argument(
        "--num-epoch-checkpoints", type=int, metavar="N", help="the last N checkpoint<epoch>.pt"
    )
    choice.add_argument(
        "--num-best-checkpoints",
        type=int,
        metavar="N",
        help="the N best by the validation metric stored in each checkpoint",
    )
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    counts = (args.num_update_checkpoints, args.num_epoch_checkpoints, args.num_best_checkpoints)
    given = [count for count in counts if count is not None]
    if args.dir and not given:
        parser.error(
            "--dir needs one of --num-update-checkpoints, --num-epoch-checkpoints, "
            "--num-best-checkpoints"
        )
    if args.inputs and given:
        parser.error("--inputs takes the files as given; the --num-* options go with --dir")
    if given and given[0] < 1:
        parser.error("the number of checkpoints must be at least 1")
    try:
        paths = chosen_checkpoints(args)
        logger.info("averaging %d checkpoints: %s", len(paths), ", ".join(map(str, paths)))
        write_average(paths, Path(args.output))
    except (AverageError, SelectionError) as error:
        print(f"{parser.prog}: error: {error}", file=sys.stderr)
        return 1
    logger.info("wrote %s", args.output)
    return 0


if __name__ == "__main__":
    from fairseq_struct.cli_logging import configure_logging

    configure_logging()
    sys.exit(main())
