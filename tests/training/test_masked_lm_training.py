"""Masked-LM pretraining with the stock fairseq-train (issue 4 items 1, 5, 6): every encoder
with MLM only, MLM+NSP and MLM+SOP, and two processes under torchrun."""

import re
import socket

import pytest
import torch
from conftest import REPO_ROOT, run_tool, tiny_mlm_train_args, venv_tool

import fairseq_struct  # noqa: F401  (allow-lists the classes fairseq checkpoints hold)

TINY_ROBERTA = [
    "--arch", "roberta", "--encoder-layers", "1", "--encoder-embed-dim", "64",
    "--encoder-ffn-embed-dim", "128", "--encoder-attention-heads", "2",
]  # fmt: skip

CASES = {
    "roberta-mlm": ("pieces", [*TINY_ROBERTA, "--mask-strategy", "random"]),
    "bert2d-mlm": ("pieces", ["--arch", "bert2d_tiny"]),
    "bert2d-nsp": ("pieces", ["--arch", "bert2d_tiny", "--sentence-objective", "nsp"]),
    "bert2d-sop-relative": (
        "pieces",
        ["--arch", "bert2d_tiny", "--sentence-objective", "sop", "--relative-positions", "16"],
    ),
    "bert2d-wwa": (
        "pieces",
        ["--arch", "bert2d_tiny", "--whole-word-attention", "--position-embedding", "none"],
    ),
    "bert_elmo-sop": (
        "words",
        ["--arch", "bert_elmo_tiny", "--tokens-are-words", "--sentence-objective", "sop"],
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_pretraining_runs_and_logs_its_objectives(case, tiny_mlm_data, tmp_path):
    units, extra = CASES[case]
    result = run_tool(
        [
            venv_tool("fairseq-train"),
            *tiny_mlm_train_args(tiny_mlm_data[units], tmp_path / "checkpoints", 3, *extra),
        ],
        cwd=REPO_ROOT,
    )
    log = result.stdout + result.stderr
    valid = re.search(r"\| valid on 'valid' subset \|(.*)", log)
    assert valid, log[-3000:]
    figures = dict(re.findall(r"(\w+) ([\d.]+)", valid.group(1)))
    for accuracy in ("mlm_accuracy", "unigram_accuracy"):
        assert 0.0 <= float(figures[accuracy]) <= 100.0, valid.group(1)
    has_pairs = "--sentence-objective" in extra
    assert ("sentence_accuracy" in figures) == has_pairs, valid.group(1)
    state = torch.load(tmp_path / "checkpoints" / "checkpoint_last.pt")
    assert state["optimizer_history"][-1]["num_updates"] == 3
    heads = [key for key in state["model"] if key.startswith("classification_heads.")]
    assert bool(heads) == has_pairs


def test_word_level_data_without_tokens_are_words_is_refused(tiny_mlm_data, tmp_path):
    with pytest.raises(AssertionError, match="--tokens-are-words"):
        run_tool(
            [
                venv_tool("fairseq-train"),
                *tiny_mlm_train_args(
                    tiny_mlm_data["words"], tmp_path / "c", 1, "--arch", "bert_elmo_tiny"
                ),
            ],
            cwd=REPO_ROOT,
        )


@pytest.mark.parametrize(
    "units, arch, port",
    [("pieces", ["--arch", "bert2d_tiny", "--sentence-objective", "sop"], 29541),
     ("words", ["--arch", "bert_elmo_tiny", "--tokens-are-words"], 29542)],
)  # fmt: skip
def test_torchrun_two_processes(units, arch, port, tiny_mlm_data, tmp_path):
    save_dir = tmp_path / "checkpoints"
    result = run_tool(
        [
            venv_tool("torchrun"),
            "--nproc_per_node",
            "2",
            "--master_port",
            str(port),
            venv_tool("fairseq-train"),
            *tiny_mlm_train_args(tiny_mlm_data[units], save_dir, 3, *arch),
            "--sample-break-mode",
            "eos",  # one sentence a sample: every update has its 2 x 16 sentences
            "--distributed-backend",
            "gloo",
        ],
        cwd=REPO_ROOT,
    )
    log = result.stdout + result.stderr
    for rank in (0, 1):
        assert f"initialized host {socket.gethostname()} as rank {rank}" in log, log[-3000:]
    assert "bsz=32" in log, log[-3000:]  # --batch-size 16 in each of the two processes
    state = torch.load(save_dir / "checkpoint_last.pt")
    assert state["cfg"]["distributed_training"]["distributed_world_size"] == 2
    assert state["optimizer_history"][-1]["num_updates"] == 3
