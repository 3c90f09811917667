"""Fine-tune a pretrained encoder on a prepared downstream data set with the stock fairseq
trainer, in one process: what `scripts/finetune.sh` runs (docs/finetuning.md).

    fairseq-struct finetune --data data-bin/ner --pretrained checkpoints/bert2d/checkpoint_best.pt \\
        --save-dir checkpoints/bert2d-ner --head lcrf_ner --entity-fix

fairseq's RoBERTa recipe (--restore-file ... --reset-optimizer --reset-dataloader
--reset-meters; Adam, polynomial decay with 6% warm-up), or the same architecture from scratch
(--scratch). The architecture and every structure option come from the pretraining checkpoint
(`encoder-options`); the defaults are the BERT2D paper's Table 2. The update budget is the epochs
asked for times the updates fairseq's own iterator makes of the training split (its batches,
sharded over the workers, grouped by --update-freq), so the run ends with the last epoch and the
learning rate reaches 0 there. The equivalent `fairseq-train` command is logged first.
"""

import argparse
import logging
import math
import os
import shlex
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from fairseq_struct.commands import program_name

logger = logging.getLogger("fairseq_struct.downstream.finetune")

# task -> (batch size, epochs, learning rate): the BERT2D paper's Table 2 (Kaya & Tantuğ).
TASK_DEFAULTS: Dict[str, Tuple[int, int, str]] = {
    "ner": (16, 10, "5e-5"),
    "pos": (16, 10, "5e-5"),
    "qa": (64, 20, "3e-5"),
    "sentiment": (64, 3, "3e-5"),
}
HEADS = ("softmax", "cse", "lcrf", "lcrf_ner")
WARMUP_PERCENT = 6  # of the updates
CHECK_OPTIONS = "--check-options"


class FinetuneError(RuntimeError):
    """A fine-tuning that cannot start; the message names the file and the problem."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=program_name("fairseq_struct.downstream.finetune"),
        description=__doc__.split("\n\n")[0],
        epilog="Options after `--` go to fairseq-train as they are (and win over these), e.g. "
        "`-- --update-freq 2 --wandb-project NAME`. TensorBoard logs go to SAVE_DIR/tensorboard.",
    )
    parser.add_argument(
        "--data",
        required=True,
        type=Path,
        help="output of fairseq-struct prepare-downstream (its task is read from "
        "DATA/finetune.json: sentiment, ner, pos or qa)",
    )
    parser.add_argument(
        "--pretrained",
        required=True,
        type=Path,
        help="a pretraining checkpoint (roberta, bert2d or bert_elmo of the project), or the "
        "directory of an imported model (fairseq-struct import-hf)",
    )
    parser.add_argument(
        "--save-dir",
        required=True,
        type=Path,
        help="where checkpoint_best.pt goes (best validation F1 for ner, sentiment and qa; "
        "accuracy for pos), with model_best.pt, its model without Adam's state, to predict and "
        "export with",
    )
    parser.add_argument(
        "--scratch",
        action="store_true",
        help="the same architecture, randomly initialised (the from-scratch baseline)",
    )
    parser.add_argument("--head", choices=HEADS, default="softmax", help="ner and pos")
    parser.add_argument("--entity-fix", action="store_true", help="ner: decode with Entity-Fix")
    parser.add_argument("--epochs", type=_positive, help="default: the task's (Table 2)")
    parser.add_argument("--batch-size", type=_positive, help="default: the task's (Table 2)")
    parser.add_argument("--lr", help="default: the task's (Table 2)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--cpu", action="store_true", help="train on the CPU")
    return parser


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number >= 1")
    return int(text)


def parse_args(argv: Sequence[str]) -> Tuple[argparse.Namespace, List[str]]:
    """The options, and what follows `--` (fairseq-train's own options)."""
    argv = list(argv)
    extra: List[str] = []
    if "--" in argv:
        extra = argv[argv.index("--") + 1 :]
        argv = argv[: argv.index("--")]
    return build_parser().parse_args(argv), extra


def read_report(data: Path) -> Dict[str, Any]:
    """DATA/finetune.json, as the fine-tuning tasks read it, naming a task finetune knows."""
    from fairseq_struct.tasks.token_classification import read_finetune_report

    report = read_finetune_report(str(data))
    if report.get("task") not in TASK_DEFAULTS:
        raise FinetuneError(f"{data}/finetune.json names the unknown task {report.get('task')!r}")
    return report


def pretrained_checkpoint(pretrained: Path) -> Path:
    """The checkpoint of --pretrained: the file, or an imported model directory's model.pt."""
    from fairseq_struct.hf_import.directory import imported_checkpoint

    return Path(imported_checkpoint(str(pretrained)))


def task_arguments(report: Dict[str, Any], data: Path, head: str, entity_fix: bool) -> List[str]:
    task = report["task"]
    if task == "sentiment":
        classes = len((data / "label" / "dict.txt").read_text(encoding="utf-8").splitlines())
        return [
            "--task", "sentence_prediction", "--criterion", "sentence_prediction_f1",
            "--num-classes", str(classes), "--init-token", "0", "--separator-token", "2",
            "--best-checkpoint-metric", "f1", "--maximize-best-checkpoint-metric",
        ]  # fmt: skip
    if task in ("ner", "pos"):
        metric = "accuracy" if task == "pos" else "f1"
        arguments = [
            "--task", "token_classification", "--criterion", "token_classification",
            "--head", head, "--best-checkpoint-metric", metric, "--maximize-best-checkpoint-metric",
        ]  # fmt: skip
        return arguments + (["--entity-fix"] if entity_fix else [])
    # Validation answers are gathered from every GPU as lists, not summed: room for them.
    return [
        "--task", "extractive_qa", "--criterion", "extractive_qa",
        "--all-gather-list-size", "8388608",
        "--best-checkpoint-metric", "f1", "--maximize-best-checkpoint-metric",
    ]  # fmt: skip


def training_arguments(
    args: argparse.Namespace, report: Dict[str, Any], checkpoint: Path, encoder: List[str]
) -> List[str]:
    """fairseq-train's arguments, without the update budget (`budget_arguments`)."""
    batch, _, lr = TASK_DEFAULTS[report["task"]]
    plugin = Path(__file__).resolve().parents[1]
    restore = []
    if not args.scratch:
        restore = ["--restore-file", str(checkpoint), "--reset-optimizer", "--reset-dataloader",
                   "--reset-meters"]  # fmt: skip
    return [
        str(args.data), "--user-dir", str(plugin),
        *task_arguments(report, args.data, args.head, args.entity_fix), *encoder,
        "--max-positions", str(report["max_positions"]), *restore,
        "--optimizer", "adam", "--adam-betas", "(0.9, 0.98)", "--adam-eps", "1e-06",
        "--weight-decay", "0.01", "--clip-norm", "0.0", "--lr", str(args.lr or lr),
        "--lr-scheduler", "polynomial_decay", "--batch-size", str(args.batch_size or batch),
        "--max-epoch", str(epochs_of(args, report)), "--seed", str(args.seed),
        "--save-dir", str(args.save_dir), "--no-epoch-checkpoints", "--no-last-checkpoints",
        "--tensorboard-logdir", str(args.save_dir / "tensorboard"), "--num-workers", "0",
        *(["--cpu"] if args.cpu else []),
    ]  # fmt: skip


def epochs_of(args: argparse.Namespace, report: Dict[str, Any]) -> int:
    return args.epochs or TASK_DEFAULTS[report["task"]][1]


def budget_arguments(updates: int) -> List[str]:
    warmup = updates * WARMUP_PERCENT // 100
    return ["--total-num-update", str(updates), "--warmup-updates", str(warmup),
            "--max-update", str(updates)]  # fmt: skip


def parse_training(arguments: List[str]):
    """fairseq-train's configuration of `arguments`, parsed as fairseq-train parses them."""
    from fairseq import options
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf

    parser = options.get_training_parser()
    return convert_namespace_to_omegaconf(options.parse_args_and_arch(parser, input_args=arguments))


def updates_per_epoch(cfg) -> int:
    """The updates of one epoch: the batches fairseq's iterator makes of the training split,
    as the trainer asks for them (fairseq's Trainer.get_train_iterator), over the data-parallel
    workers and --update-freq."""
    from fairseq import tasks, utils

    world_size = int(os.environ.get("WORLD_SIZE", cfg.distributed_training.distributed_world_size))
    task = tasks.setup_task(cfg.task)
    split = cfg.dataset.train_subset
    task.load_dataset(split, combine=False, epoch=1)
    seed = cfg.common.seed + (1 if cfg.dataset.update_ordered_indices_seed else 0)
    iterator = task.get_batch_iterator(
        dataset=task.dataset(split),
        max_tokens=cfg.dataset.max_tokens,
        max_sentences=cfg.dataset.batch_size,
        max_positions=utils.resolve_max_positions(
            task.max_positions(), getattr(cfg.model, "max_positions", None), cfg.dataset.max_tokens
        ),
        ignore_invalid_inputs=True,
        required_batch_size_multiple=cfg.dataset.required_batch_size_multiple,
        seed=seed,
        num_shards=max(1, world_size),
        shard_id=0,
        num_workers=0,
        epoch=1,
        disable_iterator_cache=True,
        skip_remainder_batch=cfg.optimization.skip_remainder_batch,
        grouped_shuffling=cfg.dataset.grouped_shuffling,
        update_epoch_batch_itr=cfg.dataset.update_epoch_batch_itr,
    )
    return math.ceil(len(iterator) / cfg.optimization.update_freq[0])


def prepared_run(args: argparse.Namespace, extra: List[str]) -> List[str]:
    """fairseq-train's arguments for the run, its update budget counted.

    Raises:
        FinetuneError, OSError, ValueError: naming the file that cannot be used.
    """
    from fairseq_struct.downstream.encoder_options import encoder_arguments, model_config
    from fairseq_struct.model_checkpoint import read_state

    report = read_report(args.data)
    checkpoint = pretrained_checkpoint(args.pretrained)
    # The options only: the checkpoint is mapped, and its tensors are never read here.
    encoder = encoder_arguments(model_config(read_state(str(checkpoint))))
    base = training_arguments(args, report, checkpoint, encoder)
    # Counted under any budget (polynomial_decay wants one to parse): batching does not use it.
    per_epoch = updates_per_epoch(parse_training(base + budget_arguments(1) + extra))
    epochs = epochs_of(args, report)
    arguments = base + budget_arguments(per_epoch * epochs) + extra
    logger.info(
        "%d updates: %d epochs of %d; the same run with the stock trainer:\nfairseq-train %s",
        per_epoch * epochs, epochs, per_epoch, shlex.join(arguments),
    )  # fmt: skip
    return arguments


def train(arguments: List[str], save_dir: Path) -> None:
    """fairseq-train's own training (in this process, or one per GPU), then the model-only
    checkpoint of the best one."""
    from fairseq.distributed import utils as distributed_utils
    from fairseq_cli import train as fairseq_train

    from fairseq_struct.model_checkpoint import model_only_path, write_model_only

    best = save_dir / "checkpoint_best.pt"
    model_only = model_only_path(best)
    model_only.unlink(missing_ok=True)  # made below from this run's checkpoint_best.pt
    distributed_utils.call_main(parse_training(arguments), fairseq_train.main)
    if best.is_file():
        write_model_only(best, model_only)


def log_as_fairseq_train() -> None:
    """fairseq-train's own logging (fairseq_cli/train.py): its lines on standard output, in its
    format, so that what reads a training log reads this one."""
    logging.basicConfig(
        format="%(asctime)s | %(levelname)s | %(name)s | %(message)s",
        datefmt="%Y-%m-%d %H:%M:%S",
        level=os.environ.get("LOGLEVEL", "INFO").upper(),
        stream=sys.stdout,
        force=True,
    )


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    check_only = bool(argv) and argv[0] == CHECK_OPTIONS
    args, extra = parse_args(argv[1:] if check_only else argv)
    if check_only:
        return 0
    log_as_fairseq_train()
    try:
        arguments = prepared_run(args, extra)
    except (FinetuneError, OSError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    train(arguments, args.save_dir)
    return 0


if __name__ == "__main__":
    from fairseq_struct.cli_logging import configure_logging

    configure_logging()
    sys.exit(main())
