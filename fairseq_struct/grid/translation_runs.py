"""What the translation grid runs (`fairseq-struct grid-translation`): its systems,
the grid's settings and its steps (prepare, train, evaluate), shared by the command and its
report (`grid.translation_report`)."""

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from fairseq_struct.grid.checkpoint_rules import DEFAULT_RULE, CheckpointRule, RuleError
from fairseq_struct.grid.steps import Step, python_command, scripts_dir

MODES = ("bpe", "morph")
ARCHITECTURES = ("transformer_relpos", "tp_transformer")
# The four systems of Soulos et al.'s Table 4; the first is the baseline of the significance tests.
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
# The interval checkpoints each profile of train-en-tr.sh keeps (--keep-interval-updates).
PROFILE_KEPT_CHECKPOINTS = {"cpu": 1, "paper": 2}
# Length penalties --tune-lenpen tries on the validation set (fairseq's default is 1.0).
LENPEN_GRID = (0.6, 0.8, 1.0, 1.2, 1.5, 2.0)


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
class Evaluation:
    """How a run is evaluated: the checkpoint rule, and whether the length penalty is tuned on
    the validation set first."""

    rule: CheckpointRule
    tune_lenpen: bool = False

    @property
    def name(self) -> str:
        return self.rule.name + ("+lenpen" if self.tune_lenpen else "")

    @classmethod
    def parse(cls, spec: str) -> "Evaluation":
        """A checkpoint rule, `+lenpen` after it to tune the length penalty: `valid-nll+lenpen`."""
        rule, plus, rest = spec.partition("+")
        if plus and rest != "lenpen":
            raise RuleError(f"{spec!r}: only '+lenpen' may follow the checkpoint rule")
        return cls(CheckpointRule.parse(rule), bool(plus))


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
    checkpoint_rule: str = DEFAULT_RULE  # the reported checkpoint (checkpoint_rules)
    tune_lenpen: bool = False  # the reported runs' length penalty tuned on the validation set
    lenpen_grid: Tuple[float, ...] = LENPEN_GRID
    compare: Tuple[str, ...] = ()  # more evaluations (Evaluation specs) reported side by side

    @property
    def reported(self) -> Evaluation:
        return Evaluation(CheckpointRule.parse(self.checkpoint_rule), self.tune_lenpen)

    @property
    def evaluations(self) -> List[Evaluation]:
        """The reported evaluation first, then the compared ones (each once)."""
        found = [self.reported, *(Evaluation.parse(spec) for spec in self.compare)]
        return list(dict.fromkeys(found))

    def eval_dir(self, system: "System", seed: int, evaluation: Evaluation) -> Path:
        """eval/ for the reported evaluation, eval-<name>/ for a compared one."""
        suffix = "" if evaluation == self.reported else f"-{evaluation.name}"
        return self.run_dir(system, seed) / f"eval{suffix}"

    def kept_checkpoints(self) -> Optional[int]:
        """--keep-interval-updates for training when the evaluations' rules need more interval
        checkpoints than the profile keeps (-1: all), unless the fairseq-train options set it."""
        if any(arg.partition("=")[0] == "--keep-interval-updates" for arg in self.train_args):
            return None
        needs = [e.rule.keep_interval_updates() for e in self.evaluations]
        needs = [need for need in needs if need is not None]
        if not needs:
            return None
        keep = -1 if -1 in needs else max(needs)
        return keep if keep == -1 or keep > PROFILE_KEPT_CHECKPOINTS[self.profile] else None

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
        record["evaluations"] = [evaluation.name for evaluation in self.evaluations]
        return record


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
    command += ["--", "--seed", str(seed), "--num-workers", "0"]
    keep = grid.kept_checkpoints()
    if keep is not None:
        command += ["--keep-interval-updates", str(keep)]
    command += grid.train_args
    return Step(_label(system, seed), "train", command, run, _threads(grid))


def evaluate_step(grid: TranslationGrid, system: System, seed: int, evaluation: Evaluation) -> Step:
    """The run's checkpoint chosen by the evaluation's rule (and its length penalty tuned, if
    asked) on the validation set, then the test set translated (grid.run_evaluation)."""
    run = grid.run_dir(system, seed)
    out = grid.eval_dir(system, seed, evaluation)
    command = [
        python_command(), "-m", "fairseq_struct.grid.run_evaluation", "--run", str(run),
        "--data", str(grid.data_dir(system.mode)), "--tgt-lang", grid.tgt_lang,
        "--rule", evaluation.rule.name, "--beam", str(grid.beam), "--out", str(out),
    ]  # fmt: skip
    if evaluation.tune_lenpen:
        command += ["--tune-lenpen", *(f"{value:g}" for value in grid.lenpen_grid)]
    if grid.cpu:
        command += ["--", "--cpu"]
    name = evaluate_step_name(grid, evaluation)
    # Starts afresh each time: its decodes are reused only from the same checkpoint files.
    return Step(_label(system, seed), name, command, run, _threads(grid), resumable=False)


def evaluate_step_name(grid: TranslationGrid, evaluation: Evaluation) -> str:
    """`evaluate` for the reported evaluation, `evaluate-<name>` for a compared one."""
    return "evaluate" if evaluation == grid.reported else f"evaluate-{evaluation.name}"


def grid_steps(grid: TranslationGrid) -> List[Step]:
    """Every preparation first (bad input stops the grid before any training), then each run's
    training and evaluation, seed by seed, so that a first seed of every system comes early."""
    scripts = scripts_dir()
    steps = [prepare_step(grid, mode, scripts) for mode in grid.modes]
    for seed in grid.seeds:
        for system in grid.systems:
            steps.append(train_step(grid, system, seed, scripts))
            steps += [evaluate_step(grid, system, seed, e) for e in grid.evaluations]
    return steps


def _label(system: System, seed: int) -> str:
    return f"{system.mode} + {system.arch}, seed {seed}"


def _threads(grid: TranslationGrid) -> Dict[str, str]:
    return {"OMP_NUM_THREADS": str(grid.threads)}
