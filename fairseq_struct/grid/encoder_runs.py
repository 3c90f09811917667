"""What the encoder grid runs (`fairseq-struct grid-encoders`): the named encoders,
the grid's settings and its steps, shared by the command and its report (`grid.encoder_report`).
Imported models are fine-tuned in their own units from their own weights, without pretraining.

A task is a kind (ner, pos, sentiment, qa: files of the user's in --tasks-dir/KIND/) or a data
set of the catalogue (`fairseq-struct datasets`), which a first step fetches into
--datasets-dir/NAME/ unless it is there.
"""

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from fairseq_struct.commands import environment_tool
from fairseq_struct.downstream_sets.catalog import COLLECTIONS, DATASETS
from fairseq_struct.grid.steps import GridError, Step, python_command, scripts_dir
from fairseq_struct.hf_import.directory import REPORT_FILE, imported_checkpoint
from fairseq_struct.morph.segmenters import SEGMENTED_LANGUAGES

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
    "bert2d": Encoder(
        "pieces", _BERT2D, about="BERT2D: word + subword 2D positions (Kaya & Tantuğ)"
    ),
    "bert_elmo": Encoder(
        "words",
        {
            "cpu": ("--arch", "bert_elmo_tiny", "--tokens-are-words"),
            "paper": ("--arch", "bert_elmo_base", "--tokens-are-words"),
        },
        about="BERT-ELMo: character-CNN word embeddings (Polatbilek)",
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

# Pretraining settings of each profile; cpu is the masked-LM demo's with 128-token samples, as a
# sample is one sentence (`--sample-break-mode eos`) and real sentences exceed 64 pieces. Longer
# ones are skipped with a warning, in validation too (`--skip-invalid-size-inputs-valid-test`).
PRETRAINING = {
    "cpu": dict(tokens_per_sample=128, batch_size=32, lr="0.002", warmup=50, max_update=800),
    "paper": dict(
        tokens_per_sample=512, batch_size=256, lr="1e-4", warmup=10000, max_update=1000000
    ),
}
# Fine-tuning options of each task: the cpu profile's are the fine-tuning demo's; the paper
# profile takes finetune.sh's defaults (the BERT2D paper's Table 2).
FINETUNING = {
    "cpu": {
        "ner": ("--epochs", "15", "--lr", "1e-3"),
        "pos": ("--epochs", "8", "--lr", "1e-3"),
        "sentiment": ("--epochs", "8", "--batch-size", "16", "--lr", "5e-4"),
        "qa": ("--epochs", "8", "--batch-size", "16", "--lr", "1e-3"),
    },
    "paper": {task: () for task in TASKS},
}
NER_HEAD = ("--head", "lcrf_ner", "--entity-fix")  # Zöllner et al.'s best head, Entity-Fix


IMPORTED_UNITS = "imported-"  # the units of an imported system: its own tokenizer


@dataclass(frozen=True)
class EncoderGrid:
    pretrain_train: Optional[str]
    pretrain_valid: Optional[str]
    tasks_dir: Optional[Path]
    out: Path
    encoders: Tuple[str, ...] = DEFAULT_ENCODERS
    imported: Tuple[Tuple[str, str], ...] = ()  # (system name, imported model directory)
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
    datasets_dir: Optional[Path] = None  # where catalogue tasks are fetched (default OUT/datasets)

    @property
    def units(self) -> List[str]:
        """The units the grid's own pretrainings need prepared."""
        return sorted({ENCODERS[name].units for name in self.encoders})

    @property
    def systems(self) -> Tuple[str, ...]:
        """The encoders, then the imported models: the first is the report's baseline."""
        return self.encoders + tuple(name for name, _ in self.imported)

    def system_units(self, name: str) -> str:
        return ENCODERS[name].units if name in ENCODERS else IMPORTED_UNITS + name

    @property
    def task_units(self) -> List[str]:
        """Every units the tasks are prepared in: the pretrainings' and each imported model's."""
        return sorted({self.system_units(name) for name in self.systems})

    @property
    def inits(self) -> Tuple[str, ...]:
        return INITS if self.scratch else INITS[:1]

    @property
    def pretraining_updates(self) -> int:
        return self.max_update or PRETRAINING[self.profile]["max_update"]

    def task_kind(self, task: str) -> str:
        """ner, pos, sentiment or qa: what downstream.prepare and the report take `task` as."""
        return task if task in TASKS else DATASETS[task].task

    @property
    def catalogue_tasks(self) -> Tuple[str, ...]:
        return tuple(task for task in self.tasks if task not in TASKS)

    @property
    def catalogue_dir(self) -> Path:
        return self.datasets_dir or self.out / "datasets"

    def task_directory(self, task: str) -> Path:
        if task in TASKS:
            if self.tasks_dir is None:
                raise GridError(f"task {task}: give --tasks-dir with its {task}/ folder")
            return self.tasks_dir / task
        return self.catalogue_dir / task

    def finetuning_options(self, task: str) -> List[str]:
        """finetune.sh's options for `task`: the profile's for its kind, with --epochs
        overridden where --finetune-epochs names the task or its kind."""
        options = list(FINETUNING[self.profile][self.task_kind(task)])
        overrides = dict(self.finetune_epochs)
        epochs = overrides.get(task, overrides.get(self.task_kind(task)))
        if epochs is None:
            return options
        if "--epochs" in options:
            options[options.index("--epochs") + 1] = str(epochs)
            return options
        return options + ["--epochs", str(epochs)]

    def pretraining_data(self, units: str) -> Path:
        if units.startswith(IMPORTED_UNITS):
            return Path(dict(self.imported)[units[len(IMPORTED_UNITS) :]])
        return self.out / "data" / f"pretrain-{units}"

    def task_data(self, units: str, task: str) -> Path:
        return self.out / "data" / f"{units}-{task}"

    def pretraining_dir(self, encoder: str) -> Path:
        return self.out / "pretrain" / encoder

    def checkpoint(self, encoder: str) -> Path:
        if encoder not in ENCODERS:
            return imported_checkpoint(dict(self.imported)[encoder])
        return self.pretraining_dir(encoder) / "checkpoints" / "checkpoint_best.pt"

    def run_dir(self, encoder: str, task: str, init: str, seed: int) -> Path:
        return self.out / "runs" / f"{encoder}-{task}-{init}-seed{seed}"

    def task_files(self, task: str, split: str) -> List[str]:
        """The raw files of a split: found in --tasks-dir, or named by the catalogue (they may
        not be fetched yet)."""
        directory = self.task_directory(task)
        if task in TASKS:
            pattern = TASK_FILES[task].format(split=split)
            return sorted(str(path) for path in directory.glob(pattern))
        return [str(directory / name) for name in DATASETS[task].converted_files(split)]

    def to_json(self) -> Dict[str, object]:
        record = asdict(self)
        record.update(
            out=str(self.out),
            tasks_dir=None if self.tasks_dir is None else str(self.tasks_dir),
            datasets_dir=str(self.catalogue_dir),
        )
        return record


def expand_tasks(names: List[str]) -> Tuple[str, ...]:
    """Task kinds and catalogue names, with each collection replaced by its data sets; each
    once, in order."""
    expanded: Dict[str, None] = {}
    for name in names:
        for task in COLLECTIONS.get(name, (name,)):
            expanded.setdefault(task)
    return tuple(expanded)


def _threads(grid: EncoderGrid) -> Dict[str, str]:
    return {"OMP_NUM_THREADS": str(grid.threads)}


def pretraining_data_step(grid: EncoderGrid, units: str, scripts: Path) -> Step:
    command = [
        "bash", str(scripts / "prepare-mlm.sh"), "--train", grid.pretrain_train,
        "--valid", grid.pretrain_valid, "--units", units, "--out", str(grid.pretraining_data(units)),
        "--workers", str(grid.workers),
    ]  # fmt: skip
    command += ["--lang", grid.lang]
    if units == "pieces":
        # Morphological segmentation where the language has a segmenter (German has none).
        mode = "morph" if grid.lang in SEGMENTED_LANGUAGES else "bpe"
        command += ["--mode", mode, "--vocab-size", str(grid.vocab_size)]
    return Step(f"data pretraining {units}", "prepare", command, grid.pretraining_data(units))


def fetch_step(grid: EncoderGrid, task: str) -> Step:
    command = [
        python_command(), "-m", "fairseq_struct.downstream_sets.cli", "fetch", task,
        "--out", str(grid.catalogue_dir),
    ]  # fmt: skip
    return Step(f"data set {task}", "fetch", command, grid.task_directory(task))


def task_data_step(grid: EncoderGrid, units: str, task: str) -> Step:
    train, valid = grid.task_files(task, "train"), grid.task_files(task, "valid")
    settings = PRETRAINING[grid.profile]
    command = [
        python_command(), "-m", "fairseq_struct.downstream.prepare", grid.task_kind(task),
        "--pretraining-data", str(grid.pretraining_data(units)), "--train", *train,
        "--out-dir", str(grid.task_data(units, task)), "--workers", str(grid.workers),
    ]  # fmt: skip
    if not units.startswith(IMPORTED_UNITS):  # an imported model takes its own length
        command += ["--max-positions", str(settings["tokens_per_sample"])]
    command += ["--valid", *valid] if valid else ["--valid-fraction", "0.1"]
    if grid.task_kind(task) == "qa" and grid.profile == "cpu":
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
    run = grid.run_dir(name, task, init, seed)
    command = [
        "bash", str(scripts / "finetune.sh"),
        "--data", str(grid.task_data(grid.system_units(name), task)),
        "--pretrained", str(grid.checkpoint(name)), "--save-dir", str(run / "checkpoints"),
        "--seed", str(seed), *grid.finetuning_options(task),
    ]  # fmt: skip
    if grid.task_kind(task) == "ner":
        command += NER_HEAD
    if init == "scratch":
        command.append("--scratch")
    if grid.cpu:
        command.append("--cpu")
    command += ["--", "--log-format", "simple", "--log-interval", "50"]
    predict = [
        python_command(), "-m", "fairseq_struct.downstream.predict",
        str(run / "checkpoints" / "checkpoint_best.pt"),
        "--input", *grid.task_files(task, "test"), "--out-dir", str(run),
    ]  # fmt: skip
    label = f"{name} {task} {init}, seed {seed}"
    return [
        Step(label, "train", command, run, _threads(grid)),
        Step(label, "predict", predict, run, _threads(grid)),
    ]


def grid_steps(grid: EncoderGrid) -> List[Step]:
    """The catalogue's data sets fetched and every preparation first (bad input stops the grid
    before any training), then the pretrainings, then the fine-tunings seed by seed."""
    scripts = scripts_dir()
    steps = [fetch_step(grid, task) for task in grid.catalogue_tasks]
    steps += [pretraining_data_step(grid, units, scripts) for units in grid.units]
    steps += [task_data_step(grid, units, task) for units in grid.task_units for task in grid.tasks]
    steps += [pretraining_step(grid, name) for name in grid.encoders]
    for seed in grid.seeds:
        for task in grid.tasks:
            for name in grid.systems:
                for init in grid.inits:
                    steps += finetuning_steps(grid, name, task, init, seed, scripts)
    return steps


def check_task_files(grid: EncoderGrid) -> None:
    """Every task of --tasks-dir has training and test files there (the catalogue's are
    fetched by the grid).

    Raises:
        GridError: naming the task directory and the files it lacks.
    """
    for task in grid.tasks:
        if task not in TASKS:
            continue
        for split in ("train", "test"):
            if not grid.task_files(task, split):
                pattern = TASK_FILES[task].format(split=split)
                raise GridError(f"{grid.task_directory(task)}: no {split} file ({pattern})")


def check_systems(grid: EncoderGrid) -> None:
    """Pretraining text for the grid's own encoders; an import in every imported directory.

    Raises:
        GridError: naming what is missing.
    """
    if not grid.systems:
        raise GridError("no system: name --encoders, --imported or both")
    if grid.encoders and not (grid.pretrain_train and grid.pretrain_valid):
        raise GridError(
            f"the encoders {', '.join(grid.encoders)} are pretrained by the grid: give "
            "--pretrain-train and --pretrain-valid (or only --imported systems)"
        )
    for name, directory in grid.imported:
        if name in ENCODERS:
            raise GridError(f"--imported {name}: the name of a named encoder; choose another")
        if not (Path(directory) / REPORT_FILE).is_file():
            raise GridError(
                f"--imported {name}={directory}: no {REPORT_FILE} there (make it with "
                "fairseq-struct import-hf SOURCE DIR)"
            )


def runnable_steps(grid: EncoderGrid) -> List[Step]:
    """`grid_steps`, once every task's files and every system are there."""
    check_systems(grid)
    check_task_files(grid)
    return grid_steps(grid)
