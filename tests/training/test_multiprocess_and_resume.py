"""Training with the stock fairseq-train: two processes under torchrun, and resuming a run that
was killed (design.md §1)."""

import os
import re
import signal
import socket
import subprocess

import torch
from conftest import (
    REPO_ROOT,
    assert_same_weights,
    run_tool,
    tiny_train_args,
    torchrun_train,
    validation_loss,
    venv_tool,
)

import fairseq_struct.plugin  # noqa: F401  (allow-lists the classes fairseq checkpoints hold)


def test_torchrun_two_processes_train_and_write_a_checkpoint(tiny_translation_data, tmp_path):
    save_dir = tmp_path / "checkpoints"
    result, (rank0, rank1) = torchrun_train(
        tiny_train_args(tiny_translation_data, save_dir, max_update=4), tmp_path / "weights"
    )
    log = result.stdout + result.stderr
    for rank in (0, 1):
        assert f"initialized host {socket.gethostname()} as rank {rank}" in log, log[-3000:]
    # --batch-size 16 per worker: every update averaged the gradients of 32 sentences.
    assert re.search(r"num_updates=4\b", log) and "bsz=32" in log, log[-3000:]
    state = torch.load(save_dir / "checkpoint_last.pt")  # weights_only: the plugin allow-lists
    assert state["cfg"]["distributed_training"]["distributed_world_size"] == 2
    assert state["optimizer_history"][-1]["num_updates"] == 4
    # Each rank trained on its own batches; the all-reduced gradients keep them identical, and
    # the checkpoint (written by rank 0) holds those weights.
    assert_same_weights(rank0, rank1)
    assert_same_weights(state["model"], rank0)


RESUME_UPDATES = 10
KILL_AFTER_CHECKPOINT = 6  # of the checkpoints every 3 updates: mid-epoch (25 updates an epoch)


def _train_command(data, save_dir, max_update: int) -> list:
    return [
        venv_tool("fairseq-train"),
        *tiny_train_args(data, save_dir, max_update=max_update),
        "--save-interval-updates",
        "3",
    ]


def _update_losses(log: str) -> dict:
    """The training loss fairseq logs at each update (--log-interval 1)."""
    return {int(n): loss for loss, n in re.findall(r" loss=([\d.]+),.*num_updates=(\d+)", log)}


def test_killed_run_resumes_to_the_loss_of_an_uninterrupted_run(tiny_translation_data, tmp_path):
    """A run killed with SIGKILL (like a preempted job: no clean shutdown) mid-epoch and started
    again from checkpoint_last.pt ends where an uninterrupted run of as many updates ends: the
    same data order, optimizer and learning-rate state and dropout masks give the same weights
    and the same validation loss (within 1e-6 on the CPU), not just the same update count."""
    uninterrupted = tmp_path / "uninterrupted"
    result = run_tool(
        _train_command(tiny_translation_data, uninterrupted, RESUME_UPDATES), cwd=REPO_ROOT
    )
    uninterrupted_losses = _update_losses(result.stdout + result.stderr)

    save_dir = tmp_path / "killed"
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore")
    process = subprocess.Popen(
        _train_command(tiny_translation_data, save_dir, max_update=400),
        cwd=REPO_ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    saved = f"Saved checkpoint {save_dir}/checkpoint_1_{KILL_AFTER_CHECKPOINT}.pt"
    try:
        # Killed as soon as that checkpoint (and its copy checkpoint_last.pt) is written, while
        # the run goes on towards 400 updates.
        lines = []
        for line in process.stdout:
            lines.append(line)
            if saved in line:
                break
        else:
            raise AssertionError("the run ended before its checkpoint:\n" + "".join(lines[-30:]))
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.stdout.close()
        process.wait()
    last = save_dir / "checkpoint_last.pt"
    assert torch.load(last)["optimizer_history"][-1]["num_updates"] == KILL_AFTER_CHECKPOINT

    result = run_tool(
        _train_command(tiny_translation_data, save_dir, RESUME_UPDATES), cwd=REPO_ROOT
    )
    log = result.stdout + result.stderr
    loaded = (
        rf"Loaded checkpoint \S*checkpoint_last\.pt \(epoch 1 @ {KILL_AFTER_CHECKPOINT} updates\)"
    )
    assert re.search(loaded, log), log[-3000:]
    resumed_losses = _update_losses(log)
    assert sorted(resumed_losses) == list(range(KILL_AFTER_CHECKPOINT + 1, RESUME_UPDATES + 1))
    assert resumed_losses == {n: uninterrupted_losses[n] for n in resumed_losses}

    states = [torch.load(path / "checkpoint_last.pt") for path in (uninterrupted, save_dir)]
    assert [s["optimizer_history"][-1]["num_updates"] for s in states] == [RESUME_UPDATES] * 2
    weights = [state["model"] for state in states]
    assert weights[0].keys() == weights[1].keys()
    largest = max(float((weights[0][k] - weights[1][k]).abs().max()) for k in weights[0])
    assert largest <= 1e-6, largest
    losses = [validation_loss(path / "checkpoint_last.pt") for path in (uninterrupted, save_dir)]
    assert abs(losses[0] - losses[1]) <= 1e-6, losses
