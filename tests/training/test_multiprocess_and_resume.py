"""Training with the stock fairseq-train: two processes under torchrun, and resuming a run that
was killed (SPEC 1; issue items 8 and 9)."""

import os
import re
import signal
import socket
import subprocess
import time

import torch
from conftest import REPO_ROOT, run_tool, tiny_train_args, venv_tool

import fairseq_struct  # noqa: F401  (allow-lists the classes fairseq checkpoints hold)


def test_torchrun_two_processes_train_and_write_a_checkpoint(tiny_translation_data, tmp_path):
    save_dir = tmp_path / "checkpoints"
    result = run_tool(
        [
            venv_tool("torchrun"),
            "--nproc_per_node",
            "2",
            "--master_port",
            "29531",
            venv_tool("fairseq-train"),
            *tiny_train_args(tiny_translation_data, save_dir, max_update=4),
            "--distributed-backend",
            "gloo",
        ],
        cwd=REPO_ROOT,
    )
    log = result.stdout + result.stderr
    for rank in (0, 1):
        assert f"initialized host {socket.gethostname()} as rank {rank}" in log, log[-3000:]
    # --batch-size 16 per worker: every update averaged the gradients of 32 sentences.
    assert re.search(r"num_updates=4\b", log) and "bsz=32" in log, log[-3000:]
    state = torch.load(save_dir / "checkpoint_last.pt")  # weights_only: the plugin allow-lists
    assert state["cfg"]["distributed_training"]["distributed_world_size"] == 2
    assert state["optimizer_history"][-1]["num_updates"] == 4


def test_killed_run_resumes_from_checkpoint_last(tiny_translation_data, tmp_path):
    save_dir = tmp_path / "checkpoints"

    def train_command(max_update: int) -> list:
        return [
            venv_tool("fairseq-train"),
            *tiny_train_args(tiny_translation_data, save_dir, max_update=max_update),
            "--save-interval-updates",
            "3",
        ]

    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore")
    process = subprocess.Popen(
        train_command(max_update=400),
        cwd=REPO_ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    last = save_dir / "checkpoint_last.pt"
    deadline = time.time() + 300
    try:
        while not last.exists() and time.time() < deadline and process.poll() is None:
            time.sleep(0.5)
        assert last.exists(), "no checkpoint_last.pt within 5 minutes"
        time.sleep(1.0)
    finally:
        os.killpg(process.pid, signal.SIGKILL)  # like a preempted job: no clean shutdown
        process.wait()
    updates_at_kill = torch.load(last)["optimizer_history"][-1]["num_updates"]
    assert 0 < updates_at_kill < 400

    resumed_to = updates_at_kill + 2
    result = run_tool(train_command(max_update=resumed_to), cwd=REPO_ROOT)
    log = result.stdout + result.stderr
    loaded = rf"Loaded checkpoint \S*checkpoint_last\.pt \(epoch \d+ @ {updates_at_kill} updates\)"
    assert re.search(loaded, log), log[-3000:]
    assert torch.load(last)["optimizer_history"][-1]["num_updates"] == resumed_to
