"""The encoder papers' comparisons as one command: pretrain encoders alike, fine-tune each on
the downstream tasks (pretrained and from scratch, several seeds), compare with Almost
Stochastic Order.

    python -m fairseq_struct.grid.encoders --pretrain-train raw/tr.txt --pretrain-valid \\
        raw/tr-valid.txt --tasks-dir raw/tasks --out grids/encoders --profile cpu \\
        --encoders roberta bert2d bert_elmo --tasks ner pos sentiment qa --seeds 1 2 3 4 5

`--tasks-dir` holds one directory per task, in the formats `downstream.prepare` reads:

    ner/{train,valid,test}.conll      pos/{train,valid,test}.conllu
    sentiment/{train,valid,test}.<label> (one file per class)   qa/{train,valid,test}.json

(a task without a valid file gets a seeded tenth of its training data). Steps, in order: the
pretraining data (`scripts/prepare-mlm.sh`: morpheme-aware SentencePiece pieces, and Moses words
for BERT-ELMo), each task's fine-tuning data in the units of each pretraining, the pretraining
of every encoder with one budget (same updates, batch, learning-rate schedule), then for every
seed, task and encoder a fine-tuning from the pretrained weights and one from scratch
(`scripts/finetune.sh`; NER with the CRF head and Entity-Fix) and its test scores
(`downstream.predict`). Finished steps are skipped (`grid.steps`). The report
(`grid.encoder_report`) compares every system with the first encoder's pretrained runs.

Encoders are named systems (`ENCODERS`): the three of the papers and ablations of BERT2D and
of whole-word masking.
"""

import argparse
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from fairseq_struct.commands import environment_tool
from fairseq_struct.grid.command_line import add_assignment_option, positive_int, run_grid
from fairseq_struct.grid.steps import GridError, Step
from fairseq_struct.grid.translation import scripts_dir

TASKS = ("ner", "pos", "sentiment", "qa")
INITS = ("pretrained", "scratch")
PROFILES = ("cpu", "paper")
# The raw test files of a task in --tasks-dir/<task>/ (downstream.prepare's formats).
TASK_FILES = {
    "ner": "{split}.conll",
    "pos": "{split}.conllu",
    "sentiment": "{split}.*",
    "qa": "{split}.json",
}


@dataclass(frozen=True)
class Encoder:
    units: str  # "pieces" (morph-mode SentencePiece) or "words" (BERT-ELMo)
    arch: Dict[str, Tuple[str, ...]]  # profile -> architecture options
    options: Tuple[str, ...] = ()  # what the system changes (an ablation)
    about: str = ""


_ROBERTA_TINY = (
    "--arch", "roberta", "--encoder-layers", "2", "--encoder-embed-dim", "128",
    "--encoder-ffn-embed-dim", "512", "--encoder-attention-heads", "4",
)  # fmt: skip
_BERT2D = {"cpu": ("--arch", "bert2d_tiny"), "paper": ("--arch", "bert2d_base")}
ENCODERS: Dict[str, Encoder] = {
    "roberta": Encoder(
        "pieces",
        {"cpu": _ROBERTA_TINY, "paper": ("--arch", "roberta_base")},
        about="BERT (fairseq's roberta) with whole-word masking: the papers' baseline",
    ),
    "bert2d": Encoder("pieces", _BERT2D, about="BERT2D: word + subword 2D positions (seed 000)"),
    "bert_elmo": Encoder(
        "words",
        {
            "cpu": ("--arch", "bert_elmo_tiny", "--tokens-are-words"),
            "paper": ("--arch", "bert_elmo_base", "--tokens-are-words"),
        },
        about="BERT-ELMo: character-CNN word embeddings (seed 001)",
    ),
    "roberta_no_wwm": Encoder(
        "pieces",
        {"cpu": _ROBERTA_TINY, "paper": ("--arch", "roberta_base")},
        ("--mask-strategy", "random"),
        "BERT with piece-level masking",
    ),
    "bert2d_no_wwm": Encoder(
        "pieces", _BERT2D, ("--mask-strategy", "random"), "BERT2D with piece-level masking"
    ),
    "bert2d_relative": Encoder(
        "pieces", _BERT2D, ("--relative-positions", "16"), "BERT2D with relative positions"
    ),
    "bert2d_wwa": Encoder(
        "pieces", _BERT2D, ("--whole-word-attention",), "BERT2D with Whole-Word Attention"
    ),
}
DEFAULT_ENCODERS = ("roberta", "bert2d", "bert_elmo")

# Pretraining settings of each profile. The cpu one is the masked-LM demo's, but with samples of
# 128 tokens: a sample is one sentence (`--sample-break-mode eos`), and 14% of Turkish Wikipedia
# sentences (tr-raw) have more than 64 pieces, none more than 128. fairseq-train skips a longer
# training sentence with a warning; the grid asks it to do the same in validation
# (`--skip-invalid-size-inputs-valid-test`) instead of stopping.
PRETRAINING = {
    "cpu": dict(tokens_per_sample=128, batch_size=32, lr="0.002", warmup=50, max_update=800),
    "paper": dict(
        tokens_per_sample=512, batch_size=256, lr="1e-4", warmup=10000, max_update=1000000
    ),
}
# Fine-tuning options of each task: the cpu profile's are the fine-tuning demo's; the paper
# profile takes finetune.sh's defaults (seed 000's Table 2).
FINETUNING = {
    "cpu": {
        "ner": ("--epochs", "15", "--lr", "1e-3"),
        "pos": ("--epochs", "8", "--lr", "1e-3"),
        "sentiment": ("--epochs", "8", "--batch-size", "16", "--lr", "5e-4"),
        "qa": ("--epochs", "8", "--batch-size", "16", "--lr", "1e-3"),
    },
    "paper": {task: () for task in TASKS},
}
NER_HEAD = ("--head", "lcrf_ner", "--entity-fix")  # seed 002's best head, Entity-Fix at decoding


@dataclass(frozen=True)
class EncoderGrid:
    pretrain_train: str
    pretrain_valid: str
    tasks_dir: Path
    out: Path
    encoders: Tuple[str, ...] = DEFAULT_ENCODERS
    tasks: Tuple[str, ...] = TASKS
    seeds: Tuple[int, ...] = (1,)
    profile: str = "cpu"
    max_update: Optional[int] = None  # the profile's by default
    vocab_size: int = 8000
    lang: str = "tr"
    workers: int = 1
    threads: int = 1
    cpu: bool = True
    scratch: bool = True  # also fine-tune each architecture from scratch
    finetune_epochs: Tuple[Tuple[str, int], ...] = ()  # (task, epochs): overrides the profile's

    @property
    def units(self) -> List[str]:
        return sorted({ENCODERS[name].units for name in self.encoders})

    @property
    def inits(self) -> Tuple[str, ...]:
        return INITS if self.scratch else INITS[:1]

    @property
    def pretraining_updates(self) -> int:
        return self.max_update or PRETRAINING[self.profile]["max_update"]

    def finetuning_options(self, task: str) -> List[str]:
        """finetune.sh's options for `task`: the profile's, with --epochs overridden where
        --finetune-epochs names the task."""
        options = list(FINETUNING[self.profile][task])
        epochs = dict(self.finetune_epochs).get(task)
        if epochs is None:
            return options
        if "--epochs" in options:
            options[options.index("--epochs") + 1] = str(epochs)
            return options
        return options + ["--epochs", str(epochs)]

    def pretraining_data(self, units: str) -> Path:
        return self.out / "data" / f"pretrain-{units}"

    def task_data(self, units: str, task: str) -> Path:
        return self.out / "data" / f"{units}-{task}"

    def pretraining_dir(self, encoder: str) -> Path:
        return self.out / "pretrain" / encoder

    def checkpoint(self, encoder: str) -> Path:
        return self.pretraining_dir(encoder) / "checkpoints" / "checkpoint_best.pt"

    def run_dir(self, encoder: str, task: str, init: str, seed: int) -> Path:
        return self.out / "runs" / f"{encoder}-{task}-{init}-seed{seed}"

    def task_files(self, task: str, split: str) -> List[str]:
        return sorted(
            str(path) for path in (self.tasks_dir / task).glob(TASK_FILES[task].format(split=split))
        )

    def to_json(self) -> Dict[str, object]:
        record = asdict(self)
        record.update(out=str(self.out), tasks_dir=str(self.tasks_dir))
        return record


def _threads(grid: EncoderGrid) -> Dict[str, str]:
    return {"OMP_NUM_THREADS": str(grid.threads)}


def pretraining_data_step(grid: EncoderGrid, units: str, scripts: Path) -> Step:
    command = [
        "bash", str(scripts / "prepare-mlm.sh"), "--train", grid.pretrain_train,
        "--valid", grid.pretrain_valid, "--units", units, "--out", str(grid.pretraining_data(units)),
        "--workers", str(grid.workers),
    ]  # fmt: skip
    if units == "pieces":
        command += ["--mode", "morph", "--lang", grid.lang, "--vocab-size", str(grid.vocab_size)]
    return Step(f"data pretraining {units}", "prepare", command, grid.pretraining_data(units))


def task_data_step(grid: EncoderGrid, units: str, task: str) -> Step:
    train, valid = grid.task_files(task, "train"), grid.task_files(task, "valid")
    settings = PRETRAINING[grid.profile]
    command = [
        sys.executable, "-m", "fairseq_struct.downstream.prepare", task,
        "--pretraining-data", str(grid.pretraining_data(units)), "--train", *train,
        "--out-dir", str(grid.task_data(units, task)),
        "--max-positions", str(settings["tokens_per_sample"]), "--workers", str(grid.workers),
    ]  # fmt: skip
    command += ["--valid", *valid] if valid else ["--valid-fraction", "0.1"]
    if task == "qa" and grid.profile == "cpu":
        command += ["--max-length", "64", "--doc-stride", "32", "--max-query-length", "16"]
    return Step(f"data {units} {task}", "prepare", command, grid.task_data(units, task))


def pretraining_step(grid: EncoderGrid, name: str) -> Step:
    encoder = ENCODERS[name]
    settings = PRETRAINING[grid.profile]
    directory = grid.pretraining_dir(name)
    command = [
        environment_tool("fairseq-train"), str(grid.pretraining_data(encoder.units)),
        "--user-dir", str(Path(__file__).resolve().parents[1]),
        "--task", "masked_lm_struct", "--criterion", "masked_lm_struct",
        "--mask-strategy", "whole_word", "--sample-break-mode", "eos",
        "--tokens-per-sample", str(settings["tokens_per_sample"]),
        "--max-positions", str(settings["tokens_per_sample"]),
        *encoder.arch[grid.profile], *encoder.options,
        "--optimizer", "adam", "--adam-betas", "(0.9, 0.98)", "--lr", settings["lr"],
        "--lr-scheduler", "inverse_sqrt", "--warmup-updates", str(settings["warmup"]),
        "--dropout", "0.1", "--batch-size", str(settings["batch_size"]),
        "--max-update", str(grid.pretraining_updates), "--seed", "1", "--num-workers", "0",
        "--save-dir", str(directory / "checkpoints"), "--no-epoch-checkpoints",
        "--validate-interval-updates", str(max(1, grid.pretraining_updates // 8)),
        "--save-interval-updates", str(max(1, grid.pretraining_updates // 8)),
        "--keep-interval-updates", "1", "--log-format", "simple", "--log-interval", "50",
        "--skip-invalid-size-inputs-valid-test",
    ]  # fmt: skip
    if grid.cpu:
        command.append("--cpu")
    return Step(f"pretraining {name}", "train", command, directory, _threads(grid))


def finetuning_steps(
    grid: EncoderGrid, name: str, task: str, init: str, seed: int, scripts: Path
) -> List[Step]:
    encoder = ENCODERS[name]
    run = grid.run_dir(name, task, init, seed)
    command = [
        "bash", str(scripts / "finetune.sh"), "--data", str(grid.task_data(encoder.units, task)),
        "--pretrained", str(grid.checkpoint(name)), "--save-dir", str(run / "checkpoints"),
        "--seed", str(seed), *grid.finetuning_options(task),
    ]  # fmt: skip
    if task == "ner":
        command += NER_HEAD
    if init == "scratch":
        command.append("--scratch")
    if grid.cpu:
        command.append("--cpu")
    command += ["--", "--log-format", "simple", "--log-interval", "50"]
    predict = [
        sys.executable, "-m", "fairseq_struct.downstream.predict",
        str(run / "checkpoints" / "checkpoint_best.pt"),
        "--input", *grid.task_files(task, "test"), "--out-dir", str(run),
    ]  # fmt: skip
    label = f"{name} {task} {init}, seed {seed}"
    return [
        Step(label, "train", command, run, _threads(grid)),
        Step(label, "predict", predict, run, _threads(grid)),
    ]


def grid_steps(grid: EncoderGrid) -> List[Step]:
    """Every preparation first (bad input stops the grid before any training), then the
    pretrainings, then the fine-tunings seed by seed."""
    scripts = scripts_dir()
    steps = [pretraining_data_step(grid, units, scripts) for units in grid.units]
    steps += [task_data_step(grid, units, task) for units in grid.units for task in grid.tasks]
    steps += [pretraining_step(grid, name) for name in grid.encoders]
    for seed in grid.seeds:
        for task in grid.tasks:
            for name in grid.encoders:
                for init in grid.inits:
                    steps += finetuning_steps(grid, name, task, init, seed, scripts)
    return steps


def check_task_files(grid: EncoderGrid) -> None:
    """Every task has training and test files in --tasks-dir.

    Raises:
        GridError: naming the task directory and the files it lacks.
    """
    for task in grid.tasks:
        for split in ("train", "test"):
            if not grid.task_files(task, split):
                pattern = TASK_FILES[task].format(split=split)
                raise GridError(f"{grid.tasks_dir / task}: no {split} file ({pattern})")


def runnable_steps(grid: EncoderGrid) -> List[Step]:
    """`grid_steps`, once every task's files are there."""
    check_task_files(grid)
    return grid_steps(grid)


def _encoder_argument(name: str) -> str:
    if name not in ENCODERS:
        raise argparse.ArgumentTypeError(
            f"unknown encoder {name!r}; the named systems are: {', '.join(ENCODERS)}"
        )
    return name


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m fairseq_struct.grid.encoders",
        description="Pretrain encoders alike, fine-tune each on downstream tasks (pretrained and "
        "from scratch, several seeds) and report with Almost Stochastic Order.",
    )
    parser.add_argument(
        "--pretrain-train", required=True, help="pretraining text, a line a sentence"
    )
    parser.add_argument("--pretrain-valid", required=True, help="pretraining validation text")
    parser.add_argument(
        "--tasks-dir", required=True, type=Path, help="<task>/{train,valid,test} files"
    )
    parser.add_argument("--out", required=True, type=Path, help="the grid's directory")
    parser.add_argument(
        "--encoders",
        nargs="+",
        type=_encoder_argument,
        default=list(DEFAULT_ENCODERS),
        help=f"named systems, the baseline first (default: {' '.join(DEFAULT_ENCODERS)}; all: "
        f"{' '.join(ENCODERS)})",
    )
    parser.add_argument("--tasks", nargs="+", choices=TASKS, default=list(TASKS))
    parser.add_argument("--seeds", type=int, nargs="+", default=[1], help="fine-tuning seeds")
    parser.add_argument("--profile", choices=PROFILES, default="cpu")
    parser.add_argument(
        "--max-update", type=int, help="pretraining updates (default: the profile's)"
    )
    add_assignment_option(
        parser, "--finetune-epochs", "TASK", TASKS, "EPOCHS", positive_int, ">= 1",
        help_text="fine-tuning epochs of a task instead of the profile's, e.g. qa=2",
    )  # fmt: skip
    parser.add_argument("--vocab-size", type=int, default=8000)
    parser.add_argument("--lang", default="tr", help="tr (Zemberek) or iu (Morfessor)")
    parser.add_argument("--workers", type=int, default=1, help="preparation processes")
    parser.add_argument("--threads", type=int, default=1, help="CPU threads of each run")
    parser.add_argument("--gpu", action="store_true", help="train on a GPU")
    parser.add_argument("--no-scratch", action="store_true", help="skip the from-scratch runs")
    parser.add_argument("--launcher", default="", help='a prefix for every command, e.g. "srun"')
    parser.add_argument("--report-only", action="store_true")
    return parser


def grid_from_args(args: argparse.Namespace) -> EncoderGrid:
    if len(set(args.encoders)) != len(args.encoders):
        raise GridError("an encoder is listed twice in --encoders")
    return EncoderGrid(
        pretrain_train=args.pretrain_train,
        pretrain_valid=args.pretrain_valid,
        tasks_dir=args.tasks_dir,
        out=args.out,
        encoders=tuple(args.encoders),
        tasks=tuple(dict.fromkeys(args.tasks)),
        seeds=tuple(dict.fromkeys(args.seeds)),
        profile=args.profile,
        max_update=args.max_update,
        vocab_size=args.vocab_size,
        lang=args.lang,
        workers=args.workers,
        threads=args.threads,
        cpu=not args.gpu,
        scratch=not args.no_scratch,
        finetune_epochs=tuple(dict(args.finetune_epochs).items()),
    )


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    # Imported here: the report needs matplotlib, deepsig; the steps do not.
    from fairseq_struct.grid.encoder_report import write_report

    return run_grid(
        "fairseq_struct.grid.encoders", argv, args, grid_from_args, runnable_steps, write_report
    )


if __name__ == "__main__":
    from fairseq_struct.fixes.cli_logging import configure_logging

    configure_logging()
    sys.exit(main())
