"""Table 4 of Soulos et al. as one command: {bpe, morph} × {transformer_relpos, tp_transformer}.

Prepares, trains, evaluates and reports every system with every seed on one budget, skipping
finished steps (docs/reproducing.md); it runs the checkout's shell scripts, so it runs from a
clone. Layout of --out:

    data/<mode>/                 binarized data of a mode (prepare-parallel.sh --out)
    runs/<mode>-<arch>-seed<S>/  checkpoints/, train.log, eval/ (selection.json, hyp.txt,
                                 scores.json), eval-<rule>/ for each of --compare-rules
    report.md report.json *.png  the report
"""

import argparse
import sys
from pathlib import Path
from typing import Optional, Sequence

from fairseq_struct.commands import program_name
from fairseq_struct.grid.checkpoint_rules import DEFAULT_RULE, CheckpointRule
from fairseq_struct.grid.command_line import add_assignment_option, positive_float, run_grid
from fairseq_struct.grid.steps import GridError
from fairseq_struct.grid.translation_runs import (
    ARCHITECTURES,
    DEFAULT_MAX_UPDATE,
    DEFAULT_SYSTEMS,
    LENPEN_GRID,
    PROFILE_ARCH_SIZE,
    Evaluation,
    System,
    TranslationGrid,
    grid_steps,
)


def _system_argument(spec: str) -> System:
    try:
        return System.parse(spec)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from error


def _checked(parse):
    """An argparse type that keeps the text as written once `parse` accepts it (its
    ValueError's message is argparse's error)."""

    def argument(spec: str) -> str:
        try:
            parse(spec)
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(error)) from error
        return spec

    return argument


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=program_name("fairseq_struct.grid.translation"),
        description="Prepare, train, evaluate and report a grid of translation systems (Soulos "
        "et al.'s Table 4 by default). Finished steps are skipped when the grid runs again.",
    )
    parser.add_argument("--train", required=True, help="prefix of the raw training pair files")
    parser.add_argument("--valid", required=True, help="prefix of the raw validation pair files")
    parser.add_argument("--test", required=True, help="prefix of the raw test pair files")
    parser.add_argument("--tgt-lang", required=True, help="tr (Zemberek) or iu (Morfessor)")
    parser.add_argument("--src-lang", default="en")
    parser.add_argument("--out", required=True, help="the grid's directory (data, runs, report)")
    parser.add_argument(
        "--profile",
        choices=sorted(PROFILE_ARCH_SIZE),
        default="cpu",
        help="train-en-tr.sh's profile: cpu (tiny models) or paper (base models, GPUs)",
    )
    parser.add_argument(
        "--max-update",
        type=int,
        help=f"updates of every run (default: {DEFAULT_MAX_UPDATE['cpu']} for cpu, "
        f"{DEFAULT_MAX_UPDATE['paper']} for paper, with its early stopping)",
    )
    parser.add_argument("--seeds", type=int, nargs="+", default=[1], help="(default: 1)")
    parser.add_argument(
        "--systems",
        nargs="+",
        type=_system_argument,
        default=[System(*pair) for pair in DEFAULT_SYSTEMS],
        metavar="MODE:ARCH",
        help="the systems, the baseline first (default: bpe:transformer_relpos "
        "morph:transformer_relpos bpe:tp_transformer morph:tp_transformer)",
    )
    parser.add_argument("--vocab-size", type=int, default=8000, help="(default: 8000)")
    parser.add_argument("--workers", type=int, default=1, help="preparation processes")
    parser.add_argument(
        "--threads", type=int, default=1, help="CPU threads of each training run (default: 1)"
    )
    parser.add_argument("--gpu", action="store_true", help="train and translate on a GPU")
    parser.add_argument("--beam", type=int, default=5)
    parser.add_argument("--lr", type=float, help="peak learning rate (default: the profile's)")
    add_assignment_option(
        parser, "--arch-lr", "ARCH", ARCHITECTURES, "LR", positive_float, "> 0",
        help_text="peak learning rate of one architecture instead of --lr, e.g. tp_transformer=0.006",
    )  # fmt: skip
    parser.add_argument(
        "--checkpoint-rule",
        type=_checked(CheckpointRule.parse),
        default=DEFAULT_RULE,
        metavar="RULE",
        help="the checkpoint each run reports: valid-nll (lowest validation NLL), valid-bleu "
        "(best beam-1 validation BLEU, fairseq's checkpoint_best.pt), last, average-last-N or "
        "valid-bleu-beam (the validation set decoded with --beam); docs/results/README.md has "
        f"the measurements behind the default ({DEFAULT_RULE})",
    )
    parser.add_argument(
        "--tune-lenpen",
        action="store_true",
        help="choose each run's length penalty on the validation set (from --lenpen-grid)",
    )
    parser.add_argument(
        "--lenpen-grid",
        type=float,
        nargs="+",
        default=list(LENPEN_GRID),
        metavar="LENPEN",
        help=f"the length penalties --tune-lenpen tries (default: {' '.join(map(str, LENPEN_GRID))})",
    )
    parser.add_argument(
        "--compare-rules",
        type=_checked(Evaluation.parse),
        nargs="+",
        default=[],
        metavar="RULE[+lenpen]",
        help="evaluate every run by these rules too (+lenpen: with the length penalty tuned) "
        "and compare in the report how stable each keeps the systems' differences over seeds",
    )
    parser.add_argument("--segmentation-cache", help="Turkish: sqlite cache of segmented lines")
    parser.add_argument(
        "--launcher",
        default="",
        help='a prefix for every command, e.g. "srun --gres=gpu:1 --time=24:00:00"',
    )
    parser.add_argument(
        "--report-only",
        action="store_true",
        help="write the report of the runs finished with this command (a step finished with "
        "another one, e.g. an evaluation under another --checkpoint-rule, is an error)",
    )
    parser.add_argument(
        "train_args",
        nargs="*",
        metavar="-- FAIRSEQ_TRAIN_ARGS",
        help="more fairseq-train options, given to every system alike",
    )
    return parser


def grid_from_args(args: argparse.Namespace) -> TranslationGrid:
    if len(set(args.systems)) != len(args.systems):
        raise GridError("a system is listed twice in --systems")
    if min(args.lenpen_grid) <= 0:
        raise GridError(f"--lenpen-grid: length penalties must be > 0, not {min(args.lenpen_grid)}")
    return TranslationGrid(
        train=args.train,
        valid=args.valid,
        test=args.test,
        tgt_lang=args.tgt_lang,
        src_lang=args.src_lang,
        out=Path(args.out),
        profile=args.profile,
        max_update=args.max_update or DEFAULT_MAX_UPDATE[args.profile],
        seeds=tuple(dict.fromkeys(args.seeds)),
        systems=tuple(args.systems),
        vocab_size=args.vocab_size,
        workers=args.workers,
        threads=args.threads,
        cpu=not args.gpu,
        beam=args.beam,
        lr=args.lr,
        arch_lr=tuple(dict(args.arch_lr).items()),
        train_args=tuple(args.train_args),
        segmentation_cache=args.segmentation_cache,
        checkpoint_rule=args.checkpoint_rule,
        tune_lenpen=args.tune_lenpen,
        lenpen_grid=tuple(args.lenpen_grid),
        compare=tuple(dict.fromkeys(args.compare_rules)),
    )


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    # Imported here: the report needs matplotlib; the steps do not.
    from fairseq_struct.grid.translation_report import write_report

    return run_grid(
        "fairseq_struct.grid.translation", argv, args, grid_from_args, grid_steps, write_report
    )


if __name__ == "__main__":
    from fairseq_struct.cli_logging import configure_logging

    configure_logging()
    sys.exit(main())
