"""A checkpoint's model without its optimizer state: read for prediction and export, written as
a model-only file of its own.

    fairseq-struct model-only checkpoints/bert2d-ner/checkpoint_best.pt   # -> model_best.pt

A fairseq checkpoint holds the model's weights and options and, to resume training, the
optimizer's state (`last_optimizer_state`): Adam keeps two tensors for each weight, so a BERT-base
fine-tuning checkpoint is 1.33 GB for 440 MB of weights. Prediction and export need only the
weights and options: `load_model_state` maps the file (`torch.load(mmap=True)`) instead of
reading it, so that only the pages of the tensors the model copies are read, gives those pages
back module by module as the model copies them (`mapped_pages`), and drops the optimizer state
unread. fairseq's own loader, which training resumes through, is left as it is:
resuming needs the optimizer state in memory anyway, and a training run's tensors must not stay
mapped from a file that fairseq later rewrites in place (it copies checkpoint_best.pt and
checkpoint_last.pt over the old files). The model-only file is the checkpoint as fairseq saved
it less `last_optimizer_state`: every command that takes a checkpoint takes it
(docs/finetuning.md).
"""

import argparse
import gc
import pickle
import sys
from pathlib import Path
from typing import Any, Dict, Optional, Sequence, Tuple

from fairseq_struct.commands import program_name

OPTIMIZER_STATE = "last_optimizer_state"
ZIP_MAGIC = b"PK\x03\x04"  # torch.save's format since torch 1.6, the one torch can map


def model_only_path(checkpoint: Path) -> Path:
    """Where the model-only file of `checkpoint` goes by default: beside it, `checkpoint` in its
    name replaced by `model` (checkpoint_best.pt -> model_best.pt), else NAME.model.pt."""
    name = checkpoint.name
    if name.startswith("checkpoint") and name.endswith(".pt"):
        return checkpoint.with_name("model" + name[len("checkpoint") :])
    return checkpoint.with_name(checkpoint.stem + ".model.pt")


def read_state(path: str) -> Dict[str, Any]:
    """The checkpoint's dict as saved (no upgrades), with `weights_only` on and its tensors mapped
    from the file: a tensor's bytes are read when it is first used, the others never (a file in
    torch's old, non-zip format is read whole).

    The file stays mapped while a tensor of the dict lives (`load_model` lets it go once the
    model holds its weights): a file rewritten in place meanwhile would change under it, as
    fairseq's copies over checkpoint_best.pt and checkpoint_last.pt do during training.

    Raises:
        CheckpointSecurityError: the file needs a global outside the allow-list.
    """
    import torch
    from fairseq.file_io import PathManager

    import fairseq_struct
    from fairseq_struct.fixes.checkpoint_safety import refusals_named

    fairseq_struct.register()  # the safe globals (and the models a caller builds next)
    local_path = PathManager.get_local_path(path)
    with open(local_path, "rb") as file:
        mapped = file.read(len(ZIP_MAGIC)) == ZIP_MAGIC
    with refusals_named(path):
        return torch.load(local_path, map_location="cpu", weights_only=True, mmap=mapped)


def load_model_state(path: str, arg_overrides: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """What fairseq's `load_checkpoint_to_cpu` returns (the overrides and upgrades applied)
    without the optimizer state, which is never read: the state `load_model` builds from, or
    fairseq's `load_model_ensemble_and_task` takes as `state`."""
    from fairseq import checkpoint_utils
    from fairseq.dataclass.utils import overwrite_args_by_name
    from omegaconf import OmegaConf

    state = read_state(path)
    state.pop(OPTIMIZER_STATE, None)
    # The rest is load_checkpoint_to_cpu's (fairseq 0.12.3, omegaconf >= 2.2).
    if state.get("args") is not None and arg_overrides is not None:
        for name, value in arg_overrides.items():
            setattr(state["args"], name, value)
    if state.get("cfg") is not None:
        state["cfg"] = OmegaConf.create(state["cfg"], flags={"allow_objects": True})
        if arg_overrides is not None:
            overwrite_args_by_name(state["cfg"], arg_overrides)
    state = checkpoint_utils._upgrade_state_dict(state)
    # Older layouts keep the optimizer state elsewhere; fairseq's upgrade moves it here.
    state.pop(OPTIMIZER_STATE, None)
    return state


def load_model(path: str, arg_overrides: Optional[Dict[str, Any]] = None) -> Tuple[Any, Any, Any]:
    """fairseq's `load_model_ensemble_and_task` for one checkpoint, without reading its optimizer
    state and without holding the weights twice: the model (on the CPU, in training mode as
    fairseq leaves it), its cfg and its task.

    What fairseq's function does for one unsharded file, with the load given back the file's
    pages module by module as it copies them (`mapped_pages`)."""
    import inspect

    from fairseq import tasks

    from fairseq_struct.mapped_pages import pages_given_back_as_loaded

    state = load_model_state(path, arg_overrides)
    cfg = state["cfg"]  # fairseq's upgrade made it from the `args` of an older checkpoint
    task = tasks.setup_task(cfg.task, from_checkpoint=True)
    if "task_state" in state:
        task.load_state_dict(state["task_state"])
    if "from_checkpoint" in inspect.getfullargspec(task.build_model).args:
        model = task.build_model(cfg.model, from_checkpoint=True)
    else:  # an older task's signature
        model = task.build_model(cfg.model)
    history = state.get("optimizer_history") or [{}]
    if "num_updates" in history[-1]:
        model.set_num_updates(history[-1]["num_updates"])
    weights = state.pop("model")
    with pages_given_back_as_loaded(model, weights):
        model.load_state_dict(weights, strict=True, model_cfg=cfg.model)
    del weights, state
    # fairseq's upgrade_state_dict_named leaves the loaded weights in a reference cycle (a
    # recursive closure): collected now, the file is unmapped before the model runs.
    gc.collect()
    return model, cfg, task


def write_model_only(checkpoint: Path, output: Path) -> None:
    """Write `checkpoint` less its optimizer state to `output` (atomically): the same model,
    options, task state and training metadata (updates, epoch, best metric), so that fairseq
    and every command of the project read it as the checkpoint itself; training can start from
    it with --reset-optimizer, not resume."""
    from fairseq import checkpoint_utils

    state = read_state(str(checkpoint))
    state.pop(OPTIMIZER_STATE, None)
    # As fairseq saves a checkpoint: OUTPUT.tmp renamed to OUTPUT, with the same permissions.
    checkpoint_utils.torch_persistent_save(state, str(output))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=program_name("fairseq_struct.model_checkpoint"),
        description="Write a checkpoint's model without its optimizer state: the file to predict, "
        "export, translate or share with (a third of an Adam checkpoint's size). The full "
        "checkpoint stays: training resumes from it.",
    )
    parser.add_argument("checkpoint", type=Path, help="a fairseq checkpoint")
    parser.add_argument(
        "--output",
        type=Path,
        help="the model-only file (default: beside the checkpoint, checkpoint_best.pt -> "
        "model_best.pt)",
    )
    return parser


def megabytes(path: Path) -> str:
    return f"{path.stat().st_size / 1e6:,.0f} MB"


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    output = args.output or model_only_path(args.checkpoint)
    if not args.checkpoint.is_file():
        print(f"error: {args.checkpoint}: no such checkpoint file", file=sys.stderr)
        return 1
    size = megabytes(args.checkpoint)  # before: the output may replace the checkpoint
    try:
        write_model_only(args.checkpoint, output)
    except (pickle.UnpicklingError, RuntimeError) as error:
        message = str(error)  # CheckpointSecurityError's names the file
        if str(args.checkpoint) not in message:
            message = f"{args.checkpoint}: {message}"
        print(f"error: {message}", file=sys.stderr)
        return 1
    print(f"{output}: {megabytes(output)}, the model of {args.checkpoint} ({size})")
    return 0


if __name__ == "__main__":
    from fairseq_struct.cli_logging import configure_logging

    configure_logging()
    sys.exit(main())
