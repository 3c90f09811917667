"""fairseq-train's results do not change with the project's multi-tensor update (the grouped
Adam and Adafactor, `_foreach_norm` and the `_foreach_copy_` master weights of
fairseq_struct/fixes): 100 updates of tp_transformer_tiny on the demo data give, update by
update, the loss and gradient norm of fairseq's own per-tensor update
(fairseq_struct.fixes.stock_update) within 1e-5 relative (on a CPU they are equal), with
--update-freq 2, --clip-norm and weight decay, on two ranks (gloo), and from a checkpoint
written by one update and resumed by the other. Batches of 64 tokens keep the 100 updates cheap.
Half precision: 30 updates of --fp16 with Adam whose loss scale starts high enough to overflow
(skipped updates, the scale halved), and 30 of --bf16 with Adafactor (tests/fixes checks the
master-weight copies bit for bit in both).

Adam's groups step here through the `_foreach_*` operations a GPU runs, fairseq's own in its
order: what these runs check is the grouping around them (step counts, --update-freq, clipping,
ranks, overflows, resuming), exactly. On a CPU the plugin steps through torch's fused kernel
instead, which is fairseq's step to float rounding (tests/fixes/test_multi_tensor_adam.py bounds
it step by step); along 100 updates of this small model that rounding grows to a few 1e-3 of
the gradient norm, as any two orderings of the same sums would.

The values are exact, not the log's rounded ones: a wrapper of fairseq-train records, at every
update, the summed loss over the sample size and the gradient norm that fairseq's Trainer
reduces (None for an update skipped on an overflow)."""

import json
import shutil
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import pytest
from conftest import REPO_ROOT, USER_DIR, built_once, python_stand_in, run_tool, torchrun_script

UPDATES = 100

# fairseq-train with the update of `stock` or `project` (argv[1]), recording to argv[2].
_RECORDING_TRAIN = """
import json
import os
import sys

from fairseq.trainer import Trainer
from fairseq_cli.train import cli_main

from fairseq_struct.fixes.stock_update import restore_stock_updates

update, records_path = sys.argv[1:3]
del sys.argv[1:3]
if update == "stock":
    restore_stock_updates()
else:  # Adam through `_foreach_*`, as on a GPU (the module's docstring says why)
    from fairseq_struct.fixes import multi_tensor_adam

    multi_tensor_adam._fused_kernel_applies = lambda *args: False
records = []
stock_reduce, stock_train_step = Trainer._reduce_and_log_stats, Trainer.train_step


def reduce_and_record(self, logging_outputs, sample_size, grad_norm=None):
    loss = sum(float(output.get("loss", 0)) for output in logging_outputs) / float(sample_size)
    gnorm = None if grad_norm is None else float(grad_norm)
    scaler = getattr(self.optimizer, "scaler", None)  # --fp16's loss scaler
    loss_scale = None if scaler is None else scaler.loss_scale
    records.append(
        {"update": self.get_num_updates(), "loss": loss, "gnorm": gnorm, "loss_scale": loss_scale}
    )
    return stock_reduce(self, logging_outputs, sample_size, grad_norm)


def train_step_and_record(self, samples, raise_oom=False):
    before = len(records)
    output = stock_train_step(self, samples, raise_oom)
    if len(records) == before:
        records.append(None)  # skipped (a gradient overflow)
    return output


Trainer._reduce_and_log_stats = reduce_and_record
Trainer.train_step = train_step_and_record
try:
    cli_main()
finally:
    if os.environ.get("RANK", "0") == "0":  # under torchrun, rank 0 has every rank's figures
        with open(records_path, "w", encoding="utf-8") as out:
            json.dump(records, out)
"""

OPTIMIZERS = {
    "adam": ["--optimizer", "adam", "--adam-betas", "(0.9, 0.98)", "--lr", "0.001"],
    "adafactor": ["--optimizer", "adafactor", "--lr", "0.003"],  # the paper's, as train-en-tr.sh
}


def _train_args(data: Path, save_dir: Path, optimizer: str, extra: List[str]) -> list:
    return [
        str(data), "--user-dir", USER_DIR, "--task", "translation_morph",
        "--arch", "tp_transformer_tiny", "--share-all-embeddings",
        "--criterion", "label_smoothed_cross_entropy", "--label-smoothing", "0.1",
        *OPTIMIZERS[optimizer], "--lr-scheduler", "inverse_sqrt", "--warmup-updates", "20",
        "--max-tokens", "64", "--max-update", str(UPDATES), "--disable-validation",
        "--save-dir", str(save_dir), "--no-epoch-checkpoints", "--save-interval-updates", "0",
        "--cpu", "--num-workers", "0", "--seed", "1", "--log-format", "simple",
        "--log-interval", "10", *extra,
    ]  # fmt: skip


def _recorded(update: str, args: list, work: Path, ranks: int = 1) -> List[Optional[Dict]]:
    work.mkdir(parents=True, exist_ok=True)
    script = work / "recording_train.py"
    script.write_text(_RECORDING_TRAIN, encoding="utf-8")
    records = work / f"records-{update}.json"
    if ranks == 1:
        python, _ = python_stand_in()
        run_tool([python, str(script), update, str(records), *args], cwd=REPO_ROOT)
    else:
        torchrun_script(script, [update, str(records), *args], ranks)
    return json.loads(records.read_text(encoding="utf-8"))


# The bound for fp32 (1e-5 relative); on a CPU the two are equal.
RTOL = 1e-5


def _assert_same(project: list, stock: list) -> None:
    assert len(project) == len(stock)
    for mine, theirs in zip(project, stock):
        assert (mine is None) == (theirs is None), (mine, theirs)
        if mine is not None:
            assert mine["update"] == theirs["update"]
            assert mine["loss"] == pytest.approx(theirs["loss"], rel=RTOL), (mine, theirs)
            assert mine["gnorm"] == pytest.approx(theirs["gnorm"], rel=RTOL), (mine, theirs)
            assert mine["loss_scale"] == theirs["loss_scale"], (mine, theirs)


CASES = {
    "adam, update-freq 2, clip-norm, weight decay": (
        "adam",
        ["--update-freq", "2", "--clip-norm", "0.5", "--weight-decay", "0.01"],
    ),
    "adafactor, clip-norm": ("adafactor", ["--clip-norm", "0.5"]),
}


HALFWAY = UPDATES // 2


@pytest.fixture(scope="session")
def whole_runs(demo_translation_run, tmp_path_factory):
    """A case's uninterrupted run with one update, made once per session: its records, and its
    directory, where it also saved its checkpoint halfway (checkpoint_1_50.pt) for the resuming
    test."""

    def run(case: str, update: str) -> Tuple[List[Optional[Dict]], Path]:
        optimizer, extra = CASES[case]
        name = f"update-parity-{optimizer}-{update}"

        def train(work: Path) -> None:
            args = _train_args(demo_translation_run / "data-bin", work, optimizer, extra)
            args[args.index("--save-interval-updates") + 1] = str(HALFWAY)
            _recorded(update, args, work)

        work = built_once(tmp_path_factory, name, train)
        records = json.loads((work / f"records-{update}.json").read_text(encoding="utf-8"))
        return records, work

    return run


@pytest.mark.parametrize("case", CASES)
def test_the_update_gives_fairseqs_losses_and_norms(case, whole_runs):
    stock, _ = whole_runs(case, "stock")
    assert len(stock) == UPDATES and None not in stock
    _assert_same(whole_runs(case, "project")[0], stock)


@pytest.mark.parametrize("case", CASES)
def test_a_checkpoint_of_either_update_resumes_in_the_other(
    case, whole_runs, demo_translation_run, tmp_path
):
    """The halfway checkpoint of an uninterrupted run with one update, resumed with the other
    for the second half: the losses of an uninterrupted run of fairseq's own update."""
    optimizer, extra = CASES[case]
    stock, _ = whole_runs(case, "stock")
    for first, then in (("stock", "project"), ("project", "stock")):
        first_records, first_dir = whole_runs(case, first)
        save_dir = tmp_path / f"{first}-then-{then}"
        save_dir.mkdir()
        shutil.copy(first_dir / f"checkpoint_1_{HALFWAY}.pt", save_dir / "checkpoint_last.pt")
        args = _train_args(demo_translation_run / "data-bin", save_dir, optimizer, extra)
        second_half = _recorded(then, args, save_dir)
        assert len(second_half) == UPDATES - HALFWAY
        _assert_same(first_records[:HALFWAY] + second_half, stock)


def test_two_ranks_give_fairseqs_losses_and_norms(demo_translation_run, tmp_path):
    data = demo_translation_run / "data-bin"
    runs = {
        update: _recorded(
            update, _train_args(data, tmp_path / update, "adam", ["--clip-norm", "0.5"]),
            tmp_path / update, ranks=2,
        )
        for update in ("project", "stock")
    }  # fmt: skip
    assert len(runs["stock"]) == UPDATES
    _assert_same(runs["project"], runs["stock"])


HALF_PRECISION_UPDATES = 30
FP16_INIT_SCALE = 2**14  # high enough for the tiny model's gradients to overflow


def _half_precision_runs(optimizer: str, flags: List[str], data: Path, work: Path) -> dict:
    runs = {}
    for update in ("project", "stock"):
        args = _train_args(data, work / update, optimizer, ["--clip-norm", "0.5", *flags])
        args[args.index("--max-update") + 1] = str(HALF_PRECISION_UPDATES)
        runs[update] = _recorded(update, args, work / update)
    return runs


def test_fp16_overflows_skip_the_updates_and_lower_the_scale_as_fairseqs_update(
    demo_translation_run, tmp_path
):
    """--fp16 with Adam (fairseq's FP16Optimizer with dynamic loss scaling; fairseq flattens the
    master copy on CUDA only): the overflowing first steps skip their update and halve the
    scale, then every loss, norm and scale is fairseq's own update's. On a CPU, fairseq's
    trainer needs the overflow_without_cuda repair to skip an update at all."""
    fp16 = ["--fp16", "--fp16-no-flatten-grads", "--fp16-init-scale", str(FP16_INIT_SCALE)]
    runs = _half_precision_runs("adam", fp16, demo_translation_run / "data-bin", tmp_path)
    stock = runs["stock"]
    skipped = [record is None for record in stock]
    assert skipped[0] and not skipped[-1] and sum(skipped) < 10, skipped
    assert len(stock) - sum(skipped) == HALF_PRECISION_UPDATES
    for step, record in enumerate(stock):  # each overflow halves the scale (no growth in 30)
        if record is not None:
            assert record["loss_scale"] == FP16_INIT_SCALE / 2 ** sum(skipped[:step]), step
    _assert_same(runs["project"], stock)


def test_bf16_with_adafactor_gives_fairseqs_losses_and_norms(demo_translation_run, tmp_path):
    """--bf16 (bf16 weights, fp32 master copies, no loss scaling) with the paper's Adafactor,
    as scripts/train-en-tr.sh trains on a GPU."""
    runs = _half_precision_runs(
        "adafactor", ["--bf16"], demo_translation_run / "data-bin", tmp_path
    )
    assert len(runs["stock"]) == HALF_PRECISION_UPDATES and None not in runs["stock"]
    _assert_same(runs["project"], runs["stock"])
