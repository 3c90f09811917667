"""Masked-LM pretraining with the stock fairseq-train: every encoder with MLM only, MLM+NSP and
MLM+SOP, and two processes under torchrun."""

import re
import socket

import pytest
import torch
from conftest import (
    REPO_ROOT,
    SMALL_CHARACTER_CNN,
    assert_same_weights,
    run_tool,
    tiny_mlm_train_args,
    torchrun_train,
    venv_tool,
)

import fairseq_struct.plugin  # noqa: F401  (allow-lists the classes fairseq checkpoints hold)

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
        [
            "--arch",
            "bert_elmo_tiny",
            "--tokens-are-words",
            "--sentence-objective",
            "sop",
            *SMALL_CHARACTER_CNN,
        ],
    ),
}


UPDATES = 12


@pytest.mark.parametrize("case", sorted(CASES))
def test_pretraining_runs_and_logs_its_objectives(case, tiny_mlm_data, tmp_path):
    """12 updates at lr 0.003, validated after each: the masked-token loss on the (same, same
    masked) validation set falls by at least 0.1 bit from the first update to the last (it falls
    by 0.2 to 1.0 bit here, depending on the model)."""
    units, extra = CASES[case]
    result = run_tool(
        [
            venv_tool("fairseq-train"),
            *tiny_mlm_train_args(tiny_mlm_data[units], tmp_path / "checkpoints", UPDATES, *extra),
            "--lr",
            "0.003",
            "--validate-interval-updates",
            "1",
        ],
        cwd=REPO_ROOT,
    )
    log = result.stdout + result.stderr
    valid = re.findall(r"\| valid on 'valid' subset \|(.*)", log)
    assert valid, log[-3000:]
    figures = [dict(re.findall(r"(\w+) ([\d.]+)", line)) for line in valid]
    by_update = {int(f["num_updates"]): f for f in figures}
    assert sorted(by_update) == list(range(1, UPDATES + 1)), valid
    first, last = by_update[1], by_update[UPDATES]
    assert float(last["mlm_loss"]) <= float(first["mlm_loss"]) - 0.1, (first, last)
    for accuracy in ("mlm_accuracy", "unigram_accuracy"):
        assert 0.0 <= float(last[accuracy]) <= 100.0, last
    # The baseline is a property of the data: the same at every validation.
    assert {f["unigram_accuracy"] for f in figures} == {first["unigram_accuracy"]}
    has_pairs = "--sentence-objective" in extra
    assert ("sentence_accuracy" in last) == has_pairs, last
    state = torch.load(tmp_path / "checkpoints" / "checkpoint_last.pt")
    assert state["optimizer_history"][-1]["num_updates"] == UPDATES
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
    "units, arch",
    [("pieces", ["--arch", "bert2d_tiny", "--sentence-objective", "sop"]),
     ("words", ["--arch", "bert_elmo_tiny", "--tokens-are-words", *SMALL_CHARACTER_CNN])],
)  # fmt: skip
def test_torchrun_two_processes(units, arch, tiny_mlm_data, tmp_path):
    save_dir = tmp_path / "checkpoints"
    result, (rank0, rank1) = torchrun_train(
        [
            *tiny_mlm_train_args(tiny_mlm_data[units], save_dir, 3, *arch),
            "--sample-break-mode",
            "eos",  # one sentence a sample: every update has its 2 x 16 sentences
        ],
        tmp_path / "weights",
    )
    log = result.stdout + result.stderr
    for rank in (0, 1):
        assert f"initialized host {socket.gethostname()} as rank {rank}" in log, log[-3000:]
    assert "bsz=32" in log, log[-3000:]  # --batch-size 16 in each of the two processes
    state = torch.load(save_dir / "checkpoint_last.pt")
    assert state["cfg"]["distributed_training"]["distributed_world_size"] == 2
    assert state["optimizer_history"][-1]["num_updates"] == 3
    # Different batches on each rank, the same all-reduced gradients: the same weights, which
    # rank 0 wrote into the checkpoint.
    assert_same_weights(rank0, rank1)
    assert_same_weights(state["model"], rank0)
