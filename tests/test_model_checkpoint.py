"""Prediction and export read a checkpoint's model and options, never its optimizer state; the
model-only file (`fairseq-struct model-only`, what scripts/finetune.sh writes beside
checkpoint_best.pt) is the checkpoint less that state, read by fairseq like the checkpoint; and
training still resumes from the full checkpoint exactly as before."""

import os
import pickle
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from conftest import (
    REPO_ROOT,
    USER_DIR,
    assert_same_weights,
    cpu_train_args,
    run_tool,
    tiny_mlm_train_args,
    venv_tool,
)
from fairseq import checkpoint_utils

import fairseq_struct.plugin  # noqa: F401  (the safe globals and models a checkpoint names)
from fairseq_struct import model_checkpoint
from fairseq_struct.fixes.checkpoint_safety import CheckpointSecurityError
from fairseq_struct.model_checkpoint import (
    OPTIMIZER_STATE,
    load_model,
    load_model_state,
    model_only_path,
    read_state,
)

OPTIMIZER_PADDING_MB = 192  # the optimizer state added to a checkpoint, never to be read


@pytest.fixture(scope="module")
def fine_tuned(pieces_bpe, pretraining_text, tmp_path_factory) -> Path:
    """checkpoint_last.pt of three stock fairseq-train updates of a token-classification BERT2D
    on `downstream.prepare`'s NER data (a trainer's own checkpoint, Adam's state included)."""
    from fairseq_struct.downstream import prepare

    root = tmp_path_factory.mktemp("fine-tuned")
    blocks = []
    for line in (pretraining_text / "valid.txt").read_text("utf-8").splitlines()[:40]:
        words = line.replace(".", " .").replace("?", " ?").split()
        tags = ["B-PER"] + ["O"] * (len(words) - 1)
        blocks.append("\n".join(f"{word}\t{tag}" for word, tag in zip(words, tags)))
    conll = root / "test.conll"
    conll.write_text("\n\n".join(blocks) + "\n", encoding="utf-8")
    data = root / "data"
    arguments = ["ner", "--pretraining-data", str(pieces_bpe), "--train", str(conll)]
    arguments += ["--valid", str(conll), "--max-positions", "48", "--out-dir", str(data)]
    assert prepare.main(arguments) == 0
    run_tool(
        [
            venv_tool("fairseq-train"),
            str(data),
            "--user-dir",
            USER_DIR,
            "--task",
            "token_classification",
            "--criterion",
            "token_classification",
            "--arch",
            "bert2d_tiny",
            "--max-positions",
            "48",
            "--optimizer",
            "adam",
            "--lr",
            "0.001",
            "--batch-size",
            "8",
            "--max-update",
            "3",
            *cpu_train_args(root / "checkpoints"),
        ],
        cwd=root,
    )
    return root / "checkpoints" / "checkpoint_last.pt"


def with_large_optimizer_state(checkpoint: Path, out: Path) -> Path:
    """The checkpoint with OPTIMIZER_PADDING_MB more of Adam's state (as a model that many times
    larger would have)."""
    state = torch.load(checkpoint)
    padding = state[OPTIMIZER_STATE]["state"]
    for index in range(OPTIMIZER_PADDING_MB // 16):
        values = torch.full((4 * 2**20,), float(index))  # 16 MB each
        padding[10_000 + index] = {"step": torch.tensor(3.0), "exp_avg": values}
    torch.save(state, out)
    return out


# `python -c PEAK_RSS CHECKPOINT`: load the checkpoint as `fairseq-struct predict` does, then as
# `fairseq-struct export-hf` does; print the process's peak RSS in MB. (VmHWM, not getrusage's
# ru_maxrss, which keeps across exec the peak of the forking process: this one, at its size.)
PEAK_RSS = """
import sys
from pathlib import Path
from fairseq_struct.downstream.prediction import load
from fairseq_struct.export.hf_checkpoint import load_checkpoint
model, task, report = load(Path(sys.argv[1]), None)
assert report["task"] == "ner"
exported = load_checkpoint(Path(sys.argv[1]))
with open("/proc/self/status") as status:
    print(next(int(line.split()[1]) for line in status if line.startswith("VmHWM:")) // 1024)
"""


def loading_peak_rss_mb(checkpoint: Path) -> int:
    """The peak RSS of a new process that loads `checkpoint` for prediction and for export."""
    result = subprocess.run(
        [sys.executable, "-c", PEAK_RSS, str(checkpoint)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "OMP_NUM_THREADS": "1", "PYTHONWARNINGS": "ignore"},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return int(result.stdout.split()[-1])


def test_prediction_and_export_never_read_the_optimizer_state(fine_tuned, tmp_path):
    large = with_large_optimizer_state(fine_tuned, tmp_path / "large_optimizer_state.pt")
    assert large.stat().st_size > OPTIMIZER_PADDING_MB * 1e6

    # The same process, the same model: only the optimizer state differs, which a loader that
    # read it would hold in memory at once (as fairseq's load_checkpoint_to_cpu does).
    peak = loading_peak_rss_mb(fine_tuned)
    peak_with_large_state = loading_peak_rss_mb(large)

    assert peak_with_large_state - peak < OPTIMIZER_PADDING_MB / 3, (peak, peak_with_large_state)


def test_the_state_is_fairseqs_own_less_the_optimizer_state(fine_tuned):
    overrides = {"data": str(fine_tuned.parents[1] / "moved-data")}  # as --data DIR
    stock = checkpoint_utils.load_checkpoint_to_cpu(str(fine_tuned), overrides)
    state = load_model_state(str(fine_tuned), overrides)

    assert OPTIMIZER_STATE in stock and len(stock[OPTIMIZER_STATE]["state"]) > 0
    assert sorted(state) == sorted(set(stock) - {OPTIMIZER_STATE})
    assert state["cfg"] == stock["cfg"] and state["cfg"].task.data == overrides["data"]
    assert state["optimizer_history"] == stock["optimizer_history"]
    assert state["extra_state"]["train_iterator"] == stock["extra_state"]["train_iterator"]
    assert_same_weights(state["model"], stock["model"])


def test_the_model_only_file_is_the_checkpoint_without_its_optimizer_state(fine_tuned, tmp_path):
    checkpoint = tmp_path / "checkpoint_best.pt"
    checkpoint.write_bytes(fine_tuned.read_bytes())
    assert model_checkpoint.main([str(checkpoint)]) == 0
    model_only = tmp_path / "model_best.pt"

    full, written = torch.load(checkpoint), torch.load(model_only)
    assert sorted(written) == sorted(set(full) - {OPTIMIZER_STATE})
    assert written["cfg"] == full["cfg"] and written["extra_state"] == full["extra_state"]
    assert_same_weights(written["model"], full["model"])
    assert model_only.stat().st_size < checkpoint.stat().st_size / 2  # Adam: 2 more per weight
    assert model_only.stat().st_mode == checkpoint.stat().st_mode

    # fairseq's own loader reads it as it reads the checkpoint: the same model, the same outputs.
    tokens = torch.tensor([[0, 5, 6, 7, 8, 2]])
    outputs = []
    for path in (checkpoint, model_only):
        models, _, task = checkpoint_utils.load_model_ensemble_and_task([str(path)])
        with torch.no_grad():
            features, _ = models[0].eval()(
                tokens, features_only=True, classification_head_name="token_classification_head"
            )
        outputs.append(features)
    assert torch.equal(outputs[0], outputs[1])
    model, _, _ = load_model(str(model_only))  # and the plugin's
    assert_same_weights(model.state_dict(), models[0].state_dict())


def test_default_names_of_the_model_only_file():
    assert model_only_path(Path("run/checkpoint_best.pt")) == Path("run/model_best.pt")
    assert model_only_path(Path("run/checkpoint12.pt")) == Path("run/model12.pt")
    assert model_only_path(Path("run/averaged.pt")) == Path("run/averaged.model.pt")


def test_a_checkpoint_in_the_old_format_is_read_whole(fine_tuned, tmp_path):
    state = torch.load(fine_tuned)
    old = tmp_path / "old_format.pt"
    torch.save(state, old, _use_new_zipfile_serialization=False)

    assert_same_weights(read_state(str(old))["model"], state["model"])


def test_a_code_running_checkpoint_is_refused(tmp_path):
    marker = tmp_path / "ran"

    class Payload:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    path = tmp_path / "evil.pt"
    torch.save({"model": {}, "cfg": None, "extra_state": Payload()}, path)

    with pytest.raises(CheckpointSecurityError, match="io.open"):
        read_state(str(path))
    assert not marker.exists()
    assert issubclass(CheckpointSecurityError, pickle.UnpicklingError)


def _loaded(log: str) -> list:
    return re.findall(r"Loaded checkpoint (\S+) \((epoch \d+ @ \d+ updates)\)", log)


def test_training_resumes_from_the_full_checkpoint_as_before(tiny_mlm_data, tmp_path):
    """Four updates, the model-only file written, two more updates resumed from
    checkpoint_last.pt: the weights of six uninterrupted updates, Adam's state restored; from
    the model-only file training starts again (--reset-optimizer), as documented."""
    data, arch = tiny_mlm_data["pieces"], ["--arch", "bert2d_tiny"]
    train = venv_tool("fairseq-train")
    straight, resumed = tmp_path / "straight", tmp_path / "resumed"
    run_tool([train, *tiny_mlm_train_args(data, straight, 6, *arch)], cwd=REPO_ROOT)
    run_tool([train, *tiny_mlm_train_args(data, resumed, 4, *arch)], cwd=REPO_ROOT)
    assert model_checkpoint.main([str(resumed / "checkpoint_last.pt")]) == 0
    assert OPTIMIZER_STATE not in torch.load(resumed / "model_last.pt")

    result = run_tool([train, *tiny_mlm_train_args(data, resumed, 6, *arch)], cwd=REPO_ROOT)

    log = result.stdout + result.stderr
    assert _loaded(log) == [(str(resumed / "checkpoint_last.pt"), "epoch 1 @ 4 updates")]
    final = torch.load(resumed / "checkpoint_last.pt")
    assert final["optimizer_history"][-1]["num_updates"] == 6
    assert_same_weights(final["model"], torch.load(straight / "checkpoint_last.pt")["model"])

    restart = tmp_path / "restart"
    options = ["--restore-file", str(resumed / "model_last.pt"), "--reset-optimizer"]
    options += ["--reset-dataloader", "--reset-meters"]
    result = run_tool(
        [train, *tiny_mlm_train_args(data, restart, 2, *arch, *options)], cwd=REPO_ROOT
    )
    assert _loaded(result.stdout + result.stderr) == [
        (str(resumed / "model_last.pt"), "epoch 1 @ 0 updates")
    ]
