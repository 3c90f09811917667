"""Seed 004's Table 4 as one command: {bpe, morph} × {transformer_relpos, tp_transformer}.

    python -m fairseq_struct.grid.translation --tgt-lang tr \\
        --train raw/train --valid raw/valid --test raw/test --out grids/en-tr \\
        --profile cpu --max-update 2000 --seeds 1 2 3

prepares the data once per segmentation mode (`scripts/prepare-parallel.sh`), trains every
system with every seed with the same budget (`scripts/train-en-tr.sh`: one profile, the same
updates, batch and learning-rate schedule for all), translates the test set with each best
checkpoint (`scripts/evaluate.sh`: sacreBLEU on the raw reference) and writes the report
(`grid.translation_report`: report.md, report.json and figures in --out). Every step is skipped
when it finished before (`grid.steps`), so a killed grid started again with the same command
redoes only what was unfinished; `--systems` takes any subset, `--seeds` any number of seeds.

The grid runs the project's shell scripts, so it runs from a checkout (where `make venv`
installs the project). Layout of --out:

    data/<mode>/                 binarized data of a mode (prepare-parallel.sh --out)
    runs/<mode>-<arch>-seed<S>/  checkpoints/, train.log, eval/ (hyp.txt, scores.json)
    report.md report.json *.png  the report
"""

import argparse
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from fairseq_struct.grid.command_line import add_assignment_option, positive_float, run_grid
from fairseq_struct.grid.steps import GridError, Step

MODES = ("bpe", "morph")
ARCHITECTURES = ("transformer_relpos", "tp_transformer")
# The four systems of seed 004's Table 4; the first is the baseline of the significance tests.
DEFAULT_SYSTEMS = (
    ("bpe", "transformer_relpos"),
    ("morph", "transformer_relpos"),
    ("bpe", "tp_transformer"),
    ("morph", "tp_transformer"),
)
# Each profile of train-en-tr.sh with the size of architecture it trains.
PROFILE_ARCH_SIZE = {"cpu": "tiny", "paper": "base"}
DEFAULT_MAX_UPDATE = {"cpu": 2000, "paper": 100000}
# An architecture's peak rate where the profile's one rate (train-en-tr.sh's) handicaps it on
# real text: the TP-Transformer's at 0.003 (docs/results/en-tr-tp-analysis.md); the demo's
# synthetic grammar favours 0.003 for both, so the script keeps it.
PROFILE_ARCH_LR = {"cpu": {"tp_transformer": 0.006}, "paper": {}}


@dataclass(frozen=True)
class System:
    mode: str  # "bpe" or "morph"
    arch: str  # model family: "transformer_relpos" or "tp_transformer"

    @property
    def name(self) -> str:
        return f"{self.mode}-{self.arch}"

    @classmethod
    def parse(cls, spec: str) -> "System":
        """`mode:arch`, e.g. `morph:tp_transformer`."""
        mode, _, arch = spec.partition(":")
        if mode not in MODES or arch not in ARCHITECTURES:
            raise ValueError(
                f"system {spec!r}: expected MODE:ARCH with MODE one of {', '.join(MODES)} and "
                f"ARCH one of {', '.join(ARCHITECTURES)} (e.g. morph:tp_transformer)"
            )
        return cls(mode, arch)


@dataclass(frozen=True)
class TranslationGrid:
    train: str  # prefixes: PREFIX.<src> and PREFIX.<tgt>, raw text
    valid: str
    test: str
    tgt_lang: str
    out: Path
    src_lang: str = "en"
    profile: str = "cpu"
    max_update: int = DEFAULT_MAX_UPDATE["cpu"]
    seeds: Tuple[int, ...] = (1,)
    systems: Tuple[System, ...] = tuple(System(*pair) for pair in DEFAULT_SYSTEMS)
    vocab_size: int = 8000
    workers: int = 1  # preparation processes
    threads: int = 1  # OMP_NUM_THREADS of training and evaluation
    cpu: bool = True
    beam: int = 5
    lr: Optional[float] = None  # the profile's by default
    arch_lr: Tuple[Tuple[str, float], ...] = ()  # (arch, peak rate): overrides lr for that arch
    train_args: Tuple[str, ...] = ()  # more fairseq-train options, the same for every system
    segmentation_cache: Optional[str] = None

    @property
    def modes(self) -> List[str]:
        return [mode for mode in MODES if any(system.mode == mode for system in self.systems)]

    def data_dir(self, mode: str) -> Path:
        return self.out / "data" / mode

    def run_dir(self, system: System, seed: int) -> Path:
        return self.out / "runs" / f"{system.name}-seed{seed}"

    def peak_lr(self, system: System) -> Optional[float]:
        """The system's peak learning rate: its architecture's (--arch-lr), else --lr, else
        the profile's rate for its architecture; None leaves train-en-tr.sh's profile default."""
        default = self.lr if self.lr is not None else PROFILE_ARCH_LR[self.profile].get(system.arch)
        return dict(self.arch_lr).get(system.arch, default)

    def arch_name(self, system: System) -> str:
        return f"{system.arch}_{PROFILE_ARCH_SIZE[self.profile]}"

    def to_json(self) -> Dict[str, object]:
        record = asdict(self)
        record["out"] = str(self.out)
        record["systems"] = [system.name for system in self.systems]
        return record


def scripts_dir() -> Path:
    """The checkout's scripts/ (the grid runs them).

    Raises:
        GridError: the package is not run from a checkout.
    """
    scripts = Path(__file__).resolve().parents[2] / "scripts"
    if not (scripts / "train-en-tr.sh").is_file():
        raise GridError(
            f"the grid runs the project's scripts, which are not beside the package ({scripts}): "
            "run it from a clone of fairseq-struct (make venv installs it there)"
        )
    return scripts


def prepare_step(grid: TranslationGrid, mode: str, scripts: Path) -> Step:
    command = [
        "bash", str(scripts / "prepare-parallel.sh"),
        "--src-lang", grid.src_lang, "--tgt-lang", grid.tgt_lang,
        "--train", grid.train, "--valid", grid.valid, "--test", grid.test,
        "--mode", mode, "--vocab-size", str(grid.vocab_size), "--workers", str(grid.workers),
        "--out", str(grid.data_dir(mode)),
    ]  # fmt: skip
    if mode == "morph" and grid.segmentation_cache:
        command += ["--segmentation-cache", grid.segmentation_cache]
    return Step(f"data {mode}", "prepare", command, grid.data_dir(mode))


def train_step(grid: TranslationGrid, system: System, seed: int, scripts: Path) -> Step:
    run = grid.run_dir(system, seed)
    command = [
        "bash", str(scripts / "train-en-tr.sh"), "--profile", grid.profile,
        "--data", str(grid.data_dir(system.mode)), "--save-dir", str(run / "checkpoints"),
        "--arch", grid.arch_name(system), "--max-update", str(grid.max_update),
    ]  # fmt: skip
    lr = grid.peak_lr(system)
    if lr is not None:
        command += ["--lr", str(lr)]
    if grid.cpu:
        command.append("--cpu")
    command += ["--", "--seed", str(seed), "--num-workers", "0", *grid.train_args]
    return Step(_label(system, seed), "train", command, run, _threads(grid))


def evaluate_step(grid: TranslationGrid, system: System, seed: int, scripts: Path) -> Step:
    run = grid.run_dir(system, seed)
    data = grid.data_dir(system.mode)
    command = [
        "bash", str(scripts / "evaluate.sh"), str(data),
        str(run / "checkpoints" / "checkpoint_best.pt"),
        str(data / f"test.raw.{grid.tgt_lang}"), str(run / "eval"), "--beam", str(grid.beam),
    ]  # fmt: skip
    if grid.cpu:
        command += ["--", "--cpu"]
    return Step(_label(system, seed), "evaluate", command, run, _threads(grid))


def grid_steps(grid: TranslationGrid) -> List[Step]:
    """Every preparation first (bad input stops the grid before any training), then each run's
    training and evaluation, seed by seed, so that a first seed of every system comes early."""
    scripts = scripts_dir()
    steps = [prepare_step(grid, mode, scripts) for mode in grid.modes]
    for seed in grid.seeds:
        for system in grid.systems:
            steps.append(train_step(grid, system, seed, scripts))
            steps.append(evaluate_step(grid, system, seed, scripts))
    return steps


def _label(system: System, seed: int) -> str:
    return f"{system.mode} + {system.arch}, seed {seed}"


def _threads(grid: TranslationGrid) -> Dict[str, str]:
    return {"OMP_NUM_THREADS": str(grid.threads)}


def _system_argument(spec: str) -> System:
    try:
        return System.parse(spec)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from error


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m fairseq_struct.grid.translation",
        description="Prepare, train, evaluate and report a grid of translation systems (seed "
        "004's Table 4 by default). Finished steps are skipped when the grid runs again.",
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
    parser.add_argument("--segmentation-cache", help="Turkish: sqlite cache of segmented lines")
    parser.add_argument(
        "--launcher",
        default="",
        help='a prefix for every command, e.g. "srun --gres=gpu:1 --time=24:00:00"',
    )
    parser.add_argument(
        "--report-only", action="store_true", help="write the report of the finished runs"
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
    )


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    # Imported here: the report needs matplotlib; the steps do not.
    from fairseq_struct.grid.translation_report import write_report

    return run_grid(
        "fairseq_struct.grid.translation", argv, args, grid_from_args, grid_steps, write_report
    )


if __name__ == "__main__":
    from fairseq_struct.fixes.cli_logging import configure_logging

    configure_logging()
    sys.exit(main())
