"""The encoder papers' comparisons as one command: pretrain encoders alike, fine-tune each on
the downstream tasks (pretrained and from scratch, several seeds), compare with Almost
Stochastic Order (docs/reproducing.md).

A task is a data set of the catalogue (`fairseq-struct datasets list`; a collection such as
bert2d-paper names a paper's), fetched by the grid into --datasets-dir, or a kind whose files
are in --tasks-dir/KIND/, in the formats `downstream.prepare` reads (a task without a valid file
gets a seeded tenth of its training data):

    ner/{train,valid,test}.conll      pos/{train,valid,test}.conllu
    sentiment/{train,valid,test}.<label> (one file per class)   qa/{train,valid,test}.json
"""

import argparse
import sys
from pathlib import Path
from typing import Optional, Sequence

from fairseq_struct.commands import program_name
from fairseq_struct.downstream_sets.catalog import COLLECTIONS, DATASETS
from fairseq_struct.grid.command_line import add_assignment_option, positive_int, run_grid
from fairseq_struct.grid.encoder_runs import (
    DEFAULT_ENCODERS,
    ENCODERS,
    PROFILES,
    TASKS,
    EncoderGrid,
    expand_tasks,
    runnable_steps,
)
from fairseq_struct.grid.steps import GridError


def _encoder_argument(name: str) -> str:
    if name not in ENCODERS:
        raise argparse.ArgumentTypeError(
            f"unknown encoder {name!r}; the named systems are: {', '.join(ENCODERS)}"
        )
    return name


def _task_argument(name: str) -> str:
    if name not in TASKS and name not in DATASETS and name not in COLLECTIONS:
        raise argparse.ArgumentTypeError(
            f"unknown task {name!r}: give a kind ({', '.join(TASKS)}: files in --tasks-dir), a "
            f"data set ({', '.join(DATASETS)}) or a collection ({', '.join(COLLECTIONS)})"
        )
    return name


def _imported_argument(value: str):
    name, equals, directory = value.partition("=")
    if not equals or not name or not directory:
        raise argparse.ArgumentTypeError(f"{value!r}: give NAME=DIR")
    return name, directory


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=program_name("fairseq_struct.grid.encoders"),
        description="Pretrain encoders alike, fine-tune each on downstream tasks (pretrained and "
        "from scratch, several seeds) and report with Almost Stochastic Order.",
    )
    parser.add_argument(
        "--pretrain-train", help="pretraining text, a line a sentence (for --encoders)"
    )
    parser.add_argument("--pretrain-valid", help="pretraining validation text (for --encoders)")
    parser.add_argument(
        "--tasks-dir", type=Path, help="KIND/{train,valid,test} files of the kinds in --tasks"
    )
    parser.add_argument(
        "--datasets-dir",
        type=Path,
        help="where the catalogue's data sets in --tasks are fetched, or already are "
        "(fairseq-struct datasets fetch NAME --out DIR; default: OUT/datasets)",
    )
    parser.add_argument("--out", required=True, type=Path, help="the grid's directory")
    parser.add_argument(
        "--encoders",
        nargs="*",
        type=_encoder_argument,
        default=list(DEFAULT_ENCODERS),
        help=f"named systems the grid pretrains, the baseline first (default: "
        f"{' '.join(DEFAULT_ENCODERS)}; all: {' '.join(ENCODERS)}; none: only --imported)",
    )
    parser.add_argument(
        "--imported",
        nargs="+",
        type=_imported_argument,
        default=[],
        metavar="NAME=DIR",
        help="imported models as systems after the encoders (DIR: fairseq-struct import-hf's "
        "output), e.g. berturk=imported/berturk-128k",
    )
    parser.add_argument(
        "--tasks",
        nargs="+",
        type=_task_argument,
        default=list(TASKS),
        help=f"kinds ({' '.join(TASKS)}; files in --tasks-dir), data sets of the catalogue or "
        f"collections ({' '.join(COLLECTIONS)}) (default: the four kinds)",
    )
    parser.add_argument("--seeds", type=int, nargs="+", default=[1], help="fine-tuning seeds")
    parser.add_argument("--profile", choices=PROFILES, default="cpu")
    parser.add_argument(
        "--max-update", type=int, help="pretraining updates (default: the profile's)"
    )
    add_assignment_option(
        parser, "--finetune-epochs", "TASK", TASKS + tuple(DATASETS), "EPOCHS", positive_int,
        ">= 1", help_text="fine-tuning epochs of a task, or of every task of a kind, instead of "
        "the profile's, e.g. qa=2 ler-fg=5",
    )  # fmt: skip
    parser.add_argument("--vocab-size", type=int, default=8000)
    parser.add_argument(
        "--lang",
        default="tr",
        help="language of the pretraining text: tr and iu are segmented into morphemes "
        "(Zemberek, Morfessor) before SentencePiece, others (de) are not",
    )
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
    if len({name for name, _ in args.imported}) != len(args.imported):
        raise GridError("a name is given twice in --imported")
    return EncoderGrid(
        pretrain_train=args.pretrain_train,
        pretrain_valid=args.pretrain_valid,
        tasks_dir=args.tasks_dir,
        out=args.out,
        encoders=tuple(args.encoders),
        imported=tuple(args.imported),
        tasks=expand_tasks(args.tasks),
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
        datasets_dir=args.datasets_dir,
    )


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    # Imported here: the report needs matplotlib, deepsig; the steps do not.
    from fairseq_struct.grid.encoder_report import write_report

    return run_grid(
        "fairseq_struct.grid.encoders", argv, args, grid_from_args, runnable_steps, write_report
    )


if __name__ == "__main__":
    from fairseq_struct.cli_logging import configure_logging

    configure_logging()
    sys.exit(main())
