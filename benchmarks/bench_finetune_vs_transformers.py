"""POS fine-tuning and prediction: the plugin against transformers' BertForTokenClassification.

`.venv/bin/python benchmarks/bench_finetune_vs_transformers.py` (`--tiny`: a smoke run) prints one
JSON line: for the plugin (`scripts/finetune.sh`, then `fairseq-struct predict`) and for
transformers (benchmarks/hf_token_classification.py) the seconds from launch to the first
update, the training process's CPU seconds per real token over a window of updates, the peak RSS
of training and of prediction, and each ratio plugin / transformers against its goal. Both start
from the same random BERT (a WordPiece vocabulary trained on the training text), train on the
same UD Turkish IMST batches with the same recipe, in turns. `--accuracy` instead fine-tunes
both fully over seeds and prints their test word accuracy (mean ± std). What is measured and
how: benchmarks/README.md#bench_finetune_vs_transformerspy.
"""

import argparse
import contextlib
import json
import logging
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

import psutil
from child_peak_rss import peak_kib, wrapped

logger = logging.getLogger("bench_finetune_vs_transformers")

REPO_ROOT = Path(__file__).resolve().parent.parent
HF_SIDE = Path(__file__).resolve().parent / "hf_token_classification.py"
IMST = REPO_ROOT.parent / "shared" / "data" / "ud-tr-imst"
DEFAULT_TRAIN = IMST / "tr_imst-ud-train.conllu"
DEFAULT_TEST = IMST / "tr_imst-ud-test.conllu"
SIDES = ("plugin", "transformers")
# ratio = plugin / transformers; a goal is met when the ratio is at most its value.
GOALS = {"startup": 1.5, "cpu_per_token": 1.0, "predict_peak_rss": 1.1, "train_peak_rss": 1.0}
TINY = {"layers": 2, "hidden": 128, "vocab_size": 2000, "train": 91, "test": 32, "valid": 32}
# fairseq-train options of the plugin's token head (--plugin-head).
PLUGIN_HEADS = {
    "bert": ["--head-layers", "1", "--pooler-dropout", "0.1"],
    "linear": ["--pooler-activation-fn", "linear"],
    "tanh": ["--pooler-activation-fn", "tanh"],
}
# What the two sides do differently, by construction (the JSON line carries it).
DIFFERENCES = [
    "head: BertForTokenClassification's on both sides by default (--plugin-head bert: "
    "--head-layers 1 --pooler-dropout 0.1, dropout then one Linear, initialised alike); "
    "--plugin-head linear or tanh: the plugin's two-layer head, dense(d, d), that activation, "
    "out_proj, head dropout 0.0",
    "the plugin's model keeps the imported MLM head (dense, LayerNorm, bias; unused in "
    "fine-tuning, so never updated); transformers' from_pretrained drops it",
    "optimizer: fairseq's Adam as the plugin runs it (on a CPU torch's fused AdamW kernel, "
    "given fairseq's eps, which fairseq adds before the bias correction) and the gradient norm "
    "fairseq computes each update for its log (--clip-norm 0); torch.optim.AdamW as "
    "--transformers-optimizer says (default: fused, as transformers' Trainer runs it), no "
    "gradient norm",
    "tokenization: prepare-downstream cuts the words before the plugin's launch; the "
    "transformers process tokenizes the training file inside its start-up",
    "checkpoint: fairseq writes checkpoint_best.pt with the optimizer state (3x the weights); "
    "save_pretrained writes the weights",
]


# ----------------------------------------------------------------------------- files


def conllu_blocks(path: Path) -> List[str]:
    """The sentences of a CoNLL-U file, each its block of lines (comments included)."""
    text = path.read_text(encoding="utf-8").replace("\r\n", "\n")
    return [block for block in text.strip().split("\n\n") if block.strip()]


def write_blocks(blocks: Sequence[str], path: Path) -> Path:
    path.write_text("\n\n".join(blocks) + "\n\n", encoding="utf-8")
    return path


def default_valid(train: Path) -> Optional[Path]:
    """UD's naming (xx-ud-dev.conllu beside xx-ud-train.conllu), or `datasets fetch`'s
    (valid.conllu beside train.conllu)."""
    for old, new in (("-train.", "-dev."), ("train.", "valid.")):
        if old in train.name:
            candidate = train.with_name(train.name.replace(old, new))
            if candidate.exists():
                return candidate
    return None


def resolve_files(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    args.train = args.train or (DEFAULT_TRAIN if DEFAULT_TRAIN.exists() else None)
    args.test = args.test or (DEFAULT_TEST if DEFAULT_TEST.exists() else None)
    if args.train is None or args.test is None:
        parser.error(
            f"no UD Turkish IMST files: {DEFAULT_TRAIN} and {DEFAULT_TEST} are not there; give "
            "--train and --test (CoNLL-U), e.g. the files that `fairseq-struct datasets fetch "
            "ud-turkish-imst --out DIR` writes: DIR/ud-turkish-imst/train.conllu and test.conllu"
        )
    for path in (args.train, args.test, args.valid):
        if path is not None and not path.is_file():
            parser.error(f"{path}: no such file")
    if args.valid is None:
        args.valid = default_valid(args.train)
    if args.valid is None:
        if args.accuracy:
            parser.error(
                f"--accuracy picks each side's best epoch on a validation file: none beside "
                f"{args.train}, give --valid"
            )
        args.valid = args.test  # a speed run validates only for the work (fairseq-train does)


# ----------------------------------------------------------------------------- the model


def save_random_bert(directory: Path, sentences: List[List[str]], args: argparse.Namespace):
    """A random BertForMaskedLM (BertConfig's defaults unless --tiny) and a cased WordPiece
    vocabulary trained on the training words, padded with [unusedN] pieces to --vocab-size,
    saved with save_pretrained; returns a summary."""
    import torch
    from tokenizers import BertWordPieceTokenizer
    from transformers import BertConfig, BertForMaskedLM, BertTokenizerFast

    trainer = BertWordPieceTokenizer(
        clean_text=True, handle_chinese_chars=True, strip_accents=False, lowercase=False
    )
    trainer.train_from_iterator(
        (" ".join(words) for words in sentences),
        vocab_size=args.vocab_size,
        min_frequency=1,
        show_progress=False,  # its bar writes to this process's stdout, the JSON line's
    )
    vocabulary = sorted(trainer.get_vocab().items(), key=lambda item: item[1])
    pieces = [piece for piece, _ in vocabulary]
    learned = len(pieces)
    pieces += [f"[unused{i}]" for i in range(args.vocab_size - learned)]
    directory.mkdir(parents=True)
    vocab_file = directory / "vocab.txt"
    vocab_file.write_text("\n".join(pieces) + "\n", encoding="utf-8")
    sizes = {}
    if args.layers is not None:
        sizes["num_hidden_layers"] = args.layers
    if args.hidden_size is not None:  # BERT's shape: heads of 64, a feed-forward of 4x
        hidden = args.hidden_size
        sizes.update(
            hidden_size=hidden, num_attention_heads=hidden // 64, intermediate_size=4 * hidden
        )
    config = BertConfig(vocab_size=len(pieces), **sizes)
    tokenizer = BertTokenizerFast(
        str(vocab_file),
        do_lower_case=False,
        strip_accents=False,
        model_max_length=config.max_position_embeddings,
    )
    vocab_file.unlink()  # save_pretrained writes the tokenizer's own files
    torch.manual_seed(args.seed)
    model = BertForMaskedLM(config)
    model.save_pretrained(str(directory))
    tokenizer.save_pretrained(str(directory))
    return {
        "layers": config.num_hidden_layers,
        "hidden_size": config.hidden_size,
        "heads": config.num_attention_heads,
        "vocab_size": len(pieces),
        "learned_pieces": learned,
        "encoder_parameters": sum(p.numel() for p in model.bert.parameters()),
    }


def quietly(main, argv: List[str]) -> None:
    """A project command's `main` in this process, its printing sent to stderr."""
    with contextlib.redirect_stdout(sys.stderr):
        status = main(argv)
    if status:
        raise SystemExit(f"{' '.join(argv)}: exit status {status}")


def import_and_prepare(hf_dir: Path, work: Path, train: Path, valid: Path) -> Path:
    """`fairseq-struct import-hf` and `prepare-downstream pos` (not measured: run here)."""
    from fairseq_struct.downstream.prepare import main as prepare
    from fairseq_struct.hf_import import main as import_hf

    quietly(import_hf, [str(hf_dir), str(work / "imported")])
    data = work / "pos"
    quietly(
        prepare,
        ["pos", "--pretraining-data", str(work / "imported"), "--train", str(train),
         "--valid", str(valid), "--out-dir", str(data)],
    )  # fmt: skip
    return data


# ----------------------------------------------------------------------------- the batches


@dataclass
class Batch:
    ids: List[int]  # training examples (the file's sentences, in order)
    tokens: int  # real tokens ([CLS] and [SEP] included)
    padded_tokens: int  # sentences x the longest


def plugin_batches(
    data: Path, seed: int, batch_size: int, updates: int = 0, epochs: int = 0
) -> List[List[Batch]]:
    """The batches fairseq-train gives finetune.sh's run, epoch by epoch, for at least `updates`
    updates and `epochs` epochs: the task's dataset batched by fairseq's own iterator with
    fairseq-train's settings (sorted by length, ties in a seeded shuffled order, 16 sentences a
    batch, the batches shuffled anew each epoch with seed + epoch), collated by its collater."""
    import fairseq_struct

    fairseq_struct.register()
    from fairseq import utils

    from fairseq_struct.tasks.token_classification import (
        TokenClassificationConfig,
        TokenClassificationTask,
        read_finetune_report,
    )

    max_positions = read_finetune_report(str(data))["max_positions"]
    task = TokenClassificationTask.setup_task(
        TokenClassificationConfig(data=str(data), seed=seed, max_positions=max_positions)
    )
    task.load_dataset("train")
    epoch_itr = task.get_batch_iterator(
        dataset=task.dataset("train"),
        max_tokens=None,
        max_sentences=batch_size,
        # the task's and the model's (the encoder's --max-positions, the same number)
        max_positions=utils.resolve_max_positions(task.max_positions(), max_positions),
        ignore_invalid_inputs=True,
        required_batch_size_multiple=8,
        seed=seed,
        num_workers=0,
        epoch=1,
    )
    plan: List[List[Batch]] = []
    while sum(len(batches) for batches in plan) < updates or len(plan) < epochs:
        batches = []
        for sample in epoch_itr.next_epoch_itr(shuffle=True, fix_batches_to_gpus=False):
            tokens = sample["net_input"]["src_tokens"]
            batches.append(Batch(sample["id"].tolist(), int(sample["ntokens"]), tokens.numel()))
        plan.append(batches)
    return plan


def piece_lengths_differ(hf_dir: Path, sentences: List[List[str]], data: Path) -> int:
    """Training sentences whose [CLS] pieces [SEP] the transformers tokenizer makes of another
    length than the plugin's binarized example (0: the two sides' batches are the same)."""
    from fairseq.data import data_utils
    from transformers import BertTokenizerFast

    tokenizer = BertTokenizerFast.from_pretrained(str(hf_dir))
    plugin = data_utils.load_indexed_dataset(str(data / "input0" / "train"), None)
    if len(plugin) != len(sentences):
        return abs(len(plugin) - len(sentences)) + len(sentences)
    encoded = tokenizer(sentences, is_split_into_words=True)["input_ids"]
    return sum(len(ids) != size for ids, size in zip(encoded, plugin.sizes))


# ----------------------------------------------------------------------------- processes


def tree_cpu_seconds(pid: int) -> float:
    """User + system CPU of a process and its descendants: the living ones' own, and what each
    has reaped of the ones that ended."""
    try:
        root = psutil.Process(pid)
        processes = [root] + root.children(recursive=True)
    except psutil.Error:
        return math.nan
    total = 0.0
    for process in processes:
        with contextlib.suppress(psutil.Error):
            times = process.cpu_times()
            total += times.user + times.system + times.children_user + times.children_system
    return total


@dataclass
class Run:
    """One training or prediction process, watched line by line."""

    seconds: float = 0.0
    peak_rss_mib: float = 0.0
    first_update_s: float = math.nan
    updates: Dict[int, Dict[str, Any]] = field(default_factory=dict)
    cpu_at: Dict[int, float] = field(default_factory=dict)
    wall_at: Dict[int, float] = field(default_factory=dict)


def watch(setup: "Setup", command: List[str], log: Path, parse, marks: Sequence[int]) -> Run:
    """Starts `command` under the peak-RSS wrapper; `parse(line)` gives (update number, its
    figures) for a line of its output that reports an update, else None. Samples the process
    tree's CPU when updates `marks` are reported."""
    run = Run()
    peak_file = log.with_suffix(".peak_rss")
    command_in_wrapper = wrapped(command, peak_file, setup.python)  # its own peak RSS
    started = time.perf_counter()
    with open(log, "w", encoding="utf-8") as out, open(log.with_suffix(".err"), "w") as err:
        process = subprocess.Popen(
            command_in_wrapper, cwd=setup.work, env=setup.env, stdout=subprocess.PIPE, stderr=err,
            text=True, bufsize=1,
        )  # fmt: skip
        for line in process.stdout:
            seen = time.perf_counter()
            parsed = parse(line)
            if parsed is not None:
                update, figures = parsed
                if update in marks:
                    run.cpu_at[update] = tree_cpu_seconds(process.pid)
                    run.wall_at[update] = seen
                if update == 1:
                    run.first_update_s = seen - started
                run.updates[update] = figures
            out.write(line)
        process.stdout.close()
        process.wait()
    run.seconds = time.perf_counter() - started
    if process.returncode != 0:
        errors = log.with_suffix(".err").read_text(encoding="utf-8", errors="replace")
        raise SystemExit(f"{' '.join(command)} failed ({process.returncode}):\n{errors[-3000:]}")
    run.peak_rss_mib = peak_kib(peak_file) / 1024
    return run


def plugin_update(line: str):
    """fairseq-train's `--log-format json --log-interval 1` line of an update."""
    _, tag, stats = line.partition(" | train_inner | ")
    if not tag:
        return None
    stats = json.loads(stats)
    figures = {"tokens": int(float(stats["wpb"])), "sentences": int(float(stats["bsz"]))}
    figures["lr"] = float(stats["lr"])
    return int(stats["num_updates"]), figures


def transformers_update(line: str):
    if not line.startswith('{"update"'):
        return None
    record = json.loads(line)
    return record["update"], record


@dataclass
class Setup:
    args: argparse.Namespace
    work: Path
    hf_dir: Path
    imported: Path
    data: Path
    train: Path
    valid: Path
    test: Path
    env: Dict[str, str]
    python: str

    def fairseq_struct(self) -> List[str]:
        """The console script of --python's environment, else the package through --python."""
        script = Path(self.python).parent / "fairseq-struct"
        return [str(script)] if script.exists() else [self.python, "-m", "fairseq_struct"]


def child_environment(args: argparse.Namespace) -> Dict[str, str]:
    """The same threads for both sides; scripts/finetune.sh finds --python's fairseq-train
    (scripts/lib/tools.sh), the real programs whatever FAIRSEQ_STRUCT_TOOLS named."""
    env = dict(os.environ)
    threads = str(args.threads)
    env.update(OMP_NUM_THREADS=threads, MKL_NUM_THREADS=threads, PYTHONUNBUFFERED="1")
    bin_dir = Path(args.python).parent
    if (bin_dir / "fairseq-train").exists():
        env["FAIRSEQ_STRUCT_TOOLS"] = str(bin_dir)
    else:
        env.pop("FAIRSEQ_STRUCT_TOOLS", None)
    return env


def train_plugin(
    setup: Setup, name: str, seed: int, plan: List[List[Batch]], marks, updates: Optional[int]
) -> Run:
    """scripts/finetune.sh as a user runs it; `updates`: a run of that many updates with the
    recipe's schedule over them (fairseq options after `--`), None: finetune.sh's own run of
    len(plan) epochs."""
    args = setup.args
    epochs = len(plan) if updates is None else math.ceil(updates / len(plan[0]))
    command = [
        "bash", str(REPO_ROOT / "scripts" / "finetune.sh"), "--data", str(setup.data),
        "--pretrained", str(setup.imported), "--save-dir", str(setup.work / name),
        "--seed", str(seed), "--batch-size", str(args.batch_size), "--lr", str(args.lr),
        "--epochs", str(epochs),
    ]  # fmt: skip
    if args.device == "cpu":
        command.append("--cpu")
    command += ["--", "--log-format", "json", "--log-interval", "1"]
    command += PLUGIN_HEADS[args.plugin_head]
    if updates is not None:
        command += ["--max-update", str(updates), "--total-num-update", str(updates)]
        command += ["--warmup-updates", str(updates * 6 // 100)]  # finetune.sh's 6 %
    logger.info("%s: %s", name, " ".join(command))
    return watch(setup, command, setup.work / f"{name}.log", plugin_update, marks)


def train_transformers(
    setup: Setup, name: str, seed: int, plan: List[List[Batch]], marks, updates: int
) -> Run:
    """hf_token_classification.py train on the plan's batches, `updates` of them, with the
    schedule over them."""
    args = setup.args
    plan_file = setup.work / f"{name}.plan.json"
    plan_file.write_text(
        json.dumps(
            {
                "epochs": [[batch.ids for batch in batches] for batches in plan],
                "total_updates": updates,
                "warmup_updates": updates * 6 // 100,
            }
        ),
        encoding="utf-8",
    )
    command = [
        setup.python, str(HF_SIDE), "train", str(setup.hf_dir), "--train", str(setup.train),
        "--valid", str(setup.valid), "--plan", str(plan_file),
        "--out-dir", str(setup.work / name),
        "--lr", str(args.lr), "--seed", str(seed), "--batch-size", str(args.batch_size),
        "--device", args.device,
    ]  # fmt: skip
    if args.transformers_optimizer == "adamw-fused":
        command.append("--fused")
    logger.info("%s: %s", name, " ".join(command))
    return watch(setup, command, setup.work / f"{name}.log", transformers_update, marks)


def predict(setup: Setup, side: str, model: Path, name: str) -> Dict[str, float]:
    out = setup.work / f"{name}-predictions"
    if side == "plugin":  # fairseq-struct predict runs on the CPU, so does the other side
        command = [*setup.fairseq_struct(), "predict", str(model)]
    else:
        command = [setup.python, str(HF_SIDE), "predict", str(model), "--device", "cpu"]
    command += ["--input", str(setup.test), "--out-dir", str(out)]
    run = watch(setup, command, setup.work / f"{name}.log", lambda _: None, ())
    scores = json.loads((out / "scores.json").read_text(encoding="utf-8"))
    return {
        "seconds": run.seconds,
        "peak_rss_mib": run.peak_rss_mib,
        "test_accuracy": scores["accuracy"],
    }


# ----------------------------------------------------------------------------- figures


def window_figures(run: Run, first: int, last: int, plan_window: List[Batch]) -> Dict[str, Any]:
    """CPU seconds per real token over updates first+1..last, as the side itself counted them."""
    window = [run.updates[update] for update in range(first + 1, last + 1)]
    tokens = sum(update["tokens"] for update in window)
    cpu = run.cpu_at[last] - run.cpu_at[first]
    if "padded_tokens" in window[0]:  # transformers reports its padded batch sizes
        padded = sum(update["padded_tokens"] for update in window)
    else:  # the plugin's are its collater's (plugin_batches), checked by the tokens it logs
        padded = sum(batch.padded_tokens for batch in plan_window)
    return {
        "cpu_s": cpu,
        "tokens": tokens,
        "padding_share": 1 - tokens / padded,
        "cpu_s_per_token": cpu / tokens,
        "wall_s": run.wall_at[last] - run.wall_at[first],
    }


def batch_checks(runs: Dict[str, Run], planned: List[Batch], lr: float) -> Dict[str, bool]:
    """Each update of both runs against the plan: the plugin's logged tokens (fairseq's wpb)
    and sentences, the transformers side's tokens, sentences and padded size, and the learning
    rate each logs after the update (fairseq prints 6 digits)."""
    plugin, transformers = runs["plugin"].updates, runs["transformers"].updates
    every_update = set(range(1, len(planned) + 1))
    checks = {
        "plugin_batches_as_planned": set(plugin) == every_update,
        "transformers_batches_as_planned": set(transformers) == every_update,
    }
    if not all(checks.values()):  # a run stopped early or ran on
        return dict(checks, lr_schedules_match=False)
    lr_gap = 0.0
    for update, batch in enumerate(planned, start=1):
        expected = (batch.tokens, len(batch.ids))
        logged = plugin[update]
        if (logged["tokens"], logged["sentences"]) != expected:
            checks["plugin_batches_as_planned"] = False
        other = transformers[update]
        if (other["tokens"], other["sentences"], other["padded_tokens"]) != (
            *expected, batch.padded_tokens
        ):  # fmt: skip
            checks["transformers_batches_as_planned"] = False
        lr_gap = max(lr_gap, abs(logged["lr"] - other["lr"]) / lr)
    checks["lr_schedules_match"] = lr_gap < 1e-4
    return checks


def summary(repeats: List[Dict[str, float]]) -> Dict[str, Any]:
    """A side's medians over the repeats (the tokens and padding are the same in each)."""

    def middle(key: str, places: int) -> float:
        return round(statistics.median(r[key] for r in repeats), places)

    return {
        "startup_s": middle("startup_s", 3),
        "cpu_s_per_token": middle("cpu_s_per_token", 9),
        "train_peak_rss_mib": middle("train_peak_rss_mib", 1),
        "predict_peak_rss_mib": middle("predict_peak_rss_mib", 1),
        "window_tokens": repeats[0]["tokens"],
        "padding_share": round(repeats[0]["padding_share"], 4),
        "window_cpu_s": middle("cpu_s", 3),
        "window_wall_s": middle("wall_s", 3),
        "train_s": middle("train_s", 3),
        "predict_s": middle("predict_seconds", 3),
        "test_accuracy": [r["predict_test_accuracy"] for r in repeats],
        "repeats": [{key: round(value, 9) for key, value in r.items()} for r in repeats],
    }


def speed(setup: Setup) -> Dict[str, Any]:
    """--repeats rounds of: the plugin's training, the transformers side's on the same batches,
    then each side's prediction with the model it trained."""
    args = setup.args
    plan = plugin_batches(setup.data, args.seed, args.batch_size, updates=args.updates)
    planned = [batch for batches in plan for batch in batches][: args.updates]
    first, last = args.skip_updates, args.updates
    measured: Dict[str, List[Dict[str, Any]]] = {side: [] for side in SIDES}
    checks: Dict[str, bool] = {}
    for repeat in range(args.repeats):
        marks = (first, last)
        runs = {
            "plugin": train_plugin(setup, f"plugin-{repeat}", args.seed, plan, marks, last),
            "transformers": train_transformers(
                setup, f"transformers-{repeat}", args.seed, plan, marks, last
            ),
        }
        for name, passed in batch_checks(runs, planned, args.lr).items():
            checks[name] = checks.get(name, True) and passed
        models = {
            "plugin": setup.work / f"plugin-{repeat}" / "checkpoint_best.pt",
            "transformers": setup.work / f"transformers-{repeat}",
        }
        for side in SIDES:
            run = runs[side]
            figures = window_figures(run, first, last, planned[first:last])
            figures.update(
                startup_s=run.first_update_s,
                train_s=run.seconds,
                train_peak_rss_mib=run.peak_rss_mib,
            )
            prediction = predict(setup, side, models[side], f"{side}-{repeat}-predict")
            figures.update({f"predict_{key}": value for key, value in prediction.items()})
            measured[side].append(figures)
            logger.info("repeat %d %s: %s", repeat, side, json.dumps(figures))
        # BERT-base: 1.3 GB of checkpoint_best.pt (Adam's state in it) and 0.4 GB of weights
        shutil.rmtree(models["plugin"].parent)
        shutil.rmtree(models["transformers"])

    sides = {side: summary(measured[side]) for side in SIDES}
    keys = {
        "startup": "startup_s",
        "cpu_per_token": "cpu_s_per_token",
        "train_peak_rss": "train_peak_rss_mib",
        "predict_peak_rss": "predict_peak_rss_mib",
    }
    # from the figures as printed, so that each ratio is their quotient
    ratios = {
        name: round(sides["plugin"][key] / sides["transformers"][key], 4)
        for name, key in keys.items()
    }
    window = planned[first:last]
    return {
        "updates": args.updates,
        "warmup_updates": args.updates * 6 // 100,
        "window": {
            "from_update": first,
            "to_update": last,
            "updates": last - first,
            "real_tokens": sum(batch.tokens for batch in window),
            "padded_tokens": sum(batch.padded_tokens for batch in window),
        },
        "batches_per_epoch": len(plan[0]),
        "plugin": sides["plugin"],
        "transformers": sides["transformers"],
        "ratios": ratios,
        "ratio_is": "plugin / transformers",
        "goals": GOALS,
        "meets_goal": {name: ratios[name] <= goal for name, goal in GOALS.items()},
        "checks": checks,
    }


def best_valid_accuracy(log: Path) -> float:
    """The validation accuracy of the epoch whose model was kept, from a training run's log."""
    best = math.nan
    for line in log.read_text(encoding="utf-8").splitlines():
        _, tag, stats = line.partition(" | valid | ")
        if tag:  # fairseq-train's (the best so far, this one included; none at the first)
            stats = json.loads(stats)
            best = float(stats.get("valid_best_accuracy", stats["valid_accuracy"]))
        elif line.startswith('{"validation"'):  # hf_token_classification.py's
            record = json.loads(line)
            best = record["accuracy"] if record["saved"] else best
    return round(best, 2)


def accuracy(setup: Setup) -> Dict[str, Any]:
    """Full fine-tuning of both sides for each seed, best epoch on the validation file, test
    word accuracy."""
    args = setup.args
    results: Dict[str, List[Dict[str, float]]] = {side: [] for side in SIDES}
    checks: Dict[str, bool] = {}
    for seed in args.seeds:
        # finetune.sh runs every batch of fairseq's epochs; transformers gets the same ones.
        plan = plugin_batches(setup.data, seed, args.batch_size, epochs=args.epochs)
        planned = [batch for batches in plan for batch in batches]
        updates = len(planned)
        runs = {}
        for side in SIDES:
            name = f"{side}-seed{seed}"
            if side == "plugin":
                run = train_plugin(setup, name, seed, plan, (), None)
                model = setup.work / name / "checkpoint_best.pt"
            else:
                run = train_transformers(setup, name, seed, plan, (), updates)
                model = setup.work / name
            runs[side] = run
            prediction = predict(setup, side, model, f"{name}-predict")
            results[side].append(
                {
                    "seed": seed,
                    "train_s": round(run.seconds, 1),
                    "best_valid_accuracy": best_valid_accuracy(setup.work / f"{name}.log"),
                    **prediction,
                }
            )
            logger.info("%s: %s", name, json.dumps(results[side][-1]))
            shutil.rmtree(model if side == "transformers" else model.parent)
        for check, passed in batch_checks(runs, planned, args.lr).items():
            checks[check] = checks.get(check, True) and passed
    sides = {}
    for side in SIDES:
        scores = [result["test_accuracy"] for result in results[side]]
        sides[side] = {
            "test_accuracy": scores,
            "mean": round(statistics.mean(scores), 2),
            "std": round(statistics.stdev(scores), 2) if len(scores) > 1 else 0.0,
            "best_valid_accuracy": [result["best_valid_accuracy"] for result in results[side]],
            "train_s": [result["train_s"] for result in results[side]],
        }
    return {
        "seeds": args.seeds,
        "epochs": args.epochs,
        "batches_per_epoch": len(plan[0]),
        "updates": updates,
        "warmup_updates": updates * 6 // 100,
        "plugin": sides["plugin"],
        "transformers": sides["transformers"],
        "mean_difference": round(sides["plugin"]["mean"] - sides["transformers"]["mean"], 2),
        "difference_is": "plugin - transformers, test word accuracy (%), mean over seeds",
        "checks": checks,
    }


# ----------------------------------------------------------------------------- main


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--train", type=Path, help=f"CoNLL-U (default: {DEFAULT_TRAIN})")
    parser.add_argument("--test", type=Path, help=f"CoNLL-U (default: {DEFAULT_TEST})")
    parser.add_argument(
        "--valid", type=Path, help="CoNLL-U validation file (default: the dev/valid file beside "
        "--train; for a speed run without one, --test)",
    )  # fmt: skip
    parser.add_argument(
        "--updates", type=int, help="updates of each training run (default 30; --tiny: 5)"
    )
    parser.add_argument(
        "--skip-updates", type=int,
        help="updates before the CPU window starts (default 5; --tiny: 1)",
    )  # fmt: skip
    parser.add_argument(
        "--repeats", type=int, help="runs of each side, in turns (default 2; --tiny: 1)"
    )
    parser.add_argument(
        "--threads", type=int, default=1, help="OMP/MKL threads of every process (both sides)"
    )
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--seed", type=int, default=1, help="of the weights and the runs")
    parser.add_argument("--vocab-size", type=int, default=32000, help="WordPiece vocabulary")
    parser.add_argument("--batch-size", type=int, default=16, help="sentences per update")
    parser.add_argument("--lr", type=float, default=5e-5)
    parser.add_argument(
        "--valid-sentences", type=int, default=100,
        help="speed runs validate on the first N sentences of --valid (--accuracy: all)",
    )  # fmt: skip
    parser.add_argument(
        "--plugin-head", choices=sorted(PLUGIN_HEADS), default="bert",
        help="the plugin's token head: bert, BertForTokenClassification's (one layer after "
        "dropout 0.1); linear or tanh, the plugin's two layers with that activation between "
        "(tanh: the plugin's default head)",
    )  # fmt: skip
    parser.add_argument(
        "--transformers-optimizer", choices=["adamw-fused", "adamw"], default="adamw-fused",
        help="adamw-fused: torch.optim.AdamW(fused=True), transformers' Trainer default "
        "(adamw_torch_fused) and the kernel the plugin's Adam runs on a CPU; adamw: "
        "torch.optim.AdamW's own choice, as a plain PyTorch loop writes it",
    )  # fmt: skip
    parser.add_argument(
        "--layers", type=int, help="encoder layers (default: BERT-base's 12; --tiny: 2)"
    )
    parser.add_argument(
        "--hidden-size", type=int,
        help="a multiple of 64 (default: BERT-base's 768; --tiny: 128); heads of 64, a "
        "feed-forward of 4x",
    )  # fmt: skip
    parser.add_argument(
        "--tiny", action="store_true",
        help=f"a smoke run: {TINY['layers']} layers of {TINY['hidden']}, {TINY['train']} "
        "training sentences, 5 updates, 1 repeat",
    )  # fmt: skip
    parser.add_argument(
        "--accuracy", action="store_true",
        help="instead of speed: full fine-tuning of both over --seeds, test word accuracy",
    )  # fmt: skip
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3, 4, 5])
    parser.add_argument("--epochs", type=int, default=10, help="--accuracy: epochs (Table 2)")
    parser.add_argument(
        "--python", default=sys.executable, help="the environment both sides run in"
    )
    parser.add_argument("--keep", type=Path, help="work here and keep it (logs, data, models)")
    args = parser.parse_args(argv)
    defaults = (5, 1, 1) if args.tiny else (30, 5, 2)
    for name, default in zip(("updates", "skip_updates", "repeats"), defaults):
        if getattr(args, name) is None:
            setattr(args, name, default)
    if args.tiny:
        args.vocab_size = min(args.vocab_size, TINY["vocab_size"])
        args.layers = args.layers or TINY["layers"]
        args.hidden_size = args.hidden_size or TINY["hidden"]
    if args.hidden_size is not None and (args.hidden_size < 64 or args.hidden_size % 64):
        parser.error(f"--hidden-size: a multiple of 64, not {args.hidden_size}")
    if not args.accuracy and not 1 <= args.skip_updates < args.updates:
        parser.error("--skip-updates: from 1 to --updates - 1 (the first update is start-up)")
    resolve_files(args, parser)
    return args


def make_setup(args: argparse.Namespace, work: Path) -> Setup:
    train_blocks, test_blocks = conllu_blocks(args.train), conllu_blocks(args.test)
    valid_blocks = conllu_blocks(args.valid)
    if args.tiny:
        train_blocks, test_blocks = train_blocks[: TINY["train"]], test_blocks[: TINY["test"]]
        valid_blocks = valid_blocks[: TINY["valid"]]
    elif not args.accuracy:
        valid_blocks = valid_blocks[: args.valid_sentences]
    train = write_blocks(train_blocks, work / "train.conllu")
    valid = write_blocks(valid_blocks, work / "valid.conllu")
    test = write_blocks(test_blocks, work / "test.conllu")

    from hf_token_classification import read_conllu

    sentences = [words for words, _ in read_conllu(train)]
    hf_dir = work / "hf-bert"
    args.model = save_random_bert(hf_dir, sentences, args)
    data = import_and_prepare(hf_dir, work, train, valid)
    differ = piece_lengths_differ(hf_dir, sentences, data)
    if differ:
        raise SystemExit(
            f"{differ} training sentences have other piece counts in the plugin's data than "
            "transformers' tokenizer gives: the batches could not be the same"
        )
    args.data_summary = {
        "train": str(args.train),
        "test": str(args.test),
        "valid": str(args.valid),
        "train_sentences": len(sentences),
        "valid_sentences": len(valid_blocks),
        "test_sentences": len(test_blocks),
    }
    return Setup(
        args, work, hf_dir, work / "imported", data, train, valid, test,
        child_environment(args), args.python,
    )  # fmt: skip


def main(argv: Sequence[str]) -> int:
    args = parse_args(argv)
    logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(name)s: %(message)s")
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
        work = args.keep
    else:
        work = Path(tempfile.mkdtemp(prefix="bench-finetune-vs-transformers-"))
    try:
        setup = make_setup(args, work)
        figures = accuracy(setup) if args.accuracy else speed(setup)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    result = {
        "benchmark": "finetune_vs_transformers" + ("_accuracy" if args.accuracy else ""),
        "device": args.device,
        "threads": args.threads,
        "tiny": args.tiny,
        "model": args.model,
        "data": args.data_summary,
        "recipe": {
            "optimizer": "Adam betas (0.9, 0.98), eps 1e-6, decoupled weight decay 0.01",
            "lr": args.lr,
            "schedule": "linear warm-up over 6% of the updates, linear decay to 0",
            "batch_sentences": args.batch_size,
            "labels": "each word's UPOS on its first piece; loss = mean over words",
            "plugin_head": args.plugin_head,
            "transformers_optimizer": args.transformers_optimizer,
        },
        **figures,
        "differences": DIFFERENCES,
        "load_average": [round(value, 2) for value in os.getloadavg()],
    }
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
