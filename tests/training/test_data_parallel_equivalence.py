"""Data parallelism is gradient accumulation: two torchrun processes on the CPU (gloo) and one
process with `--update-freq 2` see the same batches in every update (rank r takes batches r, r + 2,
...; update-freq groups batches 2k and 2k + 1), so from the same seed they reach the same weights
and loss after 10 updates. Dropout is off: its masks follow each process's random stream, which
differs between the two set-ups by design.

The single process runs on the CPU here and, in the `cuda` variant, on one GPU (a "1-GPU run
with --update-freq 2").
"""

from pathlib import Path

import pytest
import torch
from conftest import (
    REPO_ROOT,
    assert_same_weights,
    requires_cuda,
    run_tool,
    tiny_train_args,
    torchrun_train,
    validation_loss,
    venv_tool,
)

import fairseq_struct.plugin  # noqa: F401  (allow-lists the classes fairseq checkpoints hold)

UPDATES = 10


def _args(data: Path, save_dir: Path) -> list:
    args = tiny_train_args(data, save_dir, max_update=UPDATES)
    args[args.index("adafactor")] = "adam"
    # Deterministic updates: no dropout, and no validation in between.
    return args + ["--dropout", "0", "--disable-validation", "--distributed-backend", "gloo"]


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=requires_cuda)])
def test_two_processes_equal_one_process_with_update_freq_2(
    device, tiny_translation_data, tmp_path
):
    two = tmp_path / "two-processes"
    _, (rank0, rank1) = torchrun_train(_args(tiny_translation_data, two), tmp_path / "ranks")
    assert_same_weights(rank0, rank1)
    one = tmp_path / "one-process"
    single = _args(tiny_translation_data, one) + ["--update-freq", "2"]
    if device == "cuda":
        single.remove("--cpu")
    run_tool([venv_tool("fairseq-train"), *single], cwd=REPO_ROOT)

    states = [torch.load(path / "checkpoint_last.pt") for path in (two, one)]
    assert [s["optimizer_history"][-1]["num_updates"] for s in states] == [UPDATES, UPDATES]
    weights = [s["model"] for s in states]
    assert weights[0].keys() == weights[1].keys()
    largest = max((weights[0][k].float() - weights[1][k].float()).abs().max() for k in weights[0])
    assert largest < 1e-4, largest
    losses = [validation_loss(path / "checkpoint_last.pt") for path in (two, one)]
    assert abs(losses[0] - losses[1]) < 1e-4, losses
