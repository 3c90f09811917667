"""fairseq checkpoints load under torch's default `weights_only=True`, and code-running pickles
never do (design.md §1)."""

import io
import os
import pickle
import subprocess
import sys
import zipfile
from argparse import Namespace
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import REPO_ROOT, run_tool, venv_tool
from fairseq import checkpoint_utils
from fairseq.distributed.utils import _split_tensors_from_obj

from fairseq_struct.eval.generate_output import read_hypotheses
from fairseq_struct.fixes.checkpoint_safety import (
    FAIRSEQ_CHECKPOINT_GLOBALS,
    CheckpointSecurityError,
    load_checkpoint,
    register_safe_globals,
)

TEST_SENTENCES = 40  # size of the test split of tiny_translation_data


@pytest.fixture(scope="module")
def stock_checkpoints(tiny_translation_data, tmp_path_factory) -> Path:
    """checkpoint_last.pt and checkpoint_best.pt of a stock `transformer` written by stock
    fairseq-train, with what puts Python objects into a checkpoint: a legacy arch and adafactor
    (argparse.Namespace in cfg) and --eval-bleu as best-checkpoint metric (numpy arrays)."""
    save_dir = tmp_path_factory.mktemp("stock-checkpoints")
    tiny_transformer = (
        "--arch transformer --encoder-layers 1 --decoder-layers 1"
        " --encoder-embed-dim 16 --decoder-embed-dim 16"
        " --encoder-ffn-embed-dim 32 --decoder-ffn-embed-dim 32"
        " --encoder-attention-heads 2 --decoder-attention-heads 2"
    )
    adafactor = "--optimizer adafactor --lr 0.001 --lr-scheduler inverse_sqrt --warmup-updates 2"
    eval_bleu = (
        "--eval-bleu --eval-bleu-remove-bpe sentencepiece"
        " --best-checkpoint-metric bleu --maximize-best-checkpoint-metric"
    )
    run_tool(
        [venv_tool("fairseq-train"), tiny_translation_data, "--task", "translation"]
        + tiny_transformer.split()
        + adafactor.split()
        + eval_bleu.split()
        + ["--eval-bleu-args", '{"beam": 1, "max_len_b": 10}']
        + "--batch-size 16 --max-update 3 --no-epoch-checkpoints".split()
        + ["--save-dir", save_dir]
        + "--cpu --num-workers 0 --seed 1".split(),
        cwd=REPO_ROOT,
    )
    return save_dir


def code_running_checkpoint(path: Path, marker: Path, how: str) -> None:
    """A checkpoint-shaped file whose unpickling would create `marker`."""

    class Payload:
        def __reduce__(self):
            if how == "os.system":
                return (os.system, (f"touch {marker}",))
            return (open, (str(marker), "w"))

    torch.save({"model": {}, "cfg": None, "extra_state": Payload()}, path)


@pytest.mark.parametrize("name", ["checkpoint_last.pt", "checkpoint_best.pt"])
def test_fairseq_loader_reads_stock_checkpoints_with_weights_only(stock_checkpoints, name):
    state = checkpoint_utils.load_checkpoint_to_cpu(str(stock_checkpoints / name))

    assert torch.load is torch.serialization.load  # nothing replaced torch's loader
    assert isinstance(state["cfg"].model, Namespace)
    assert isinstance(state["cfg"].optimizer, Namespace)  # adafactor has no dataclass
    valid_meters = state["extra_state"]["metrics"]["valid"]
    assert any(isinstance(meter[3].get("sum"), np.ndarray) for meter in valid_meters)
    assert all(torch.is_tensor(weight) for weight in state["model"].values())


def test_stock_torch_refuses_the_checkpoint_without_the_plugin(stock_checkpoints):
    # Why the plugin is needed at all: torch's default weights_only load stops at the Namespace.
    script = f"import torch; torch.load({str(stock_checkpoints / 'checkpoint_last.pt')!r})"
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)

    assert result.returncode != 0
    assert "GLOBAL argparse.Namespace was not an allowed global" in result.stderr


@pytest.mark.parametrize("how, refused", [("os.system", "posix.system"), ("open", "io.open")])
def test_checkpoint_whose_pickle_runs_code_is_refused_and_the_code_never_runs(
    tmp_path, how, refused
):
    path, marker = tmp_path / "evil.pt", tmp_path / "pwned"
    code_running_checkpoint(path, marker, how)

    with pytest.raises(CheckpointSecurityError) as refusal:
        load_checkpoint(str(path))
    with pytest.raises(pickle.UnpicklingError):
        checkpoint_utils.load_checkpoint_to_cpu(str(path))
    with pytest.raises(pickle.UnpicklingError):
        torch.load(path)  # the default is still weights_only=True

    assert refusal.value.path == str(path)
    assert refusal.value.refused_global == refused
    assert str(path) in str(refusal.value) and refused in str(refusal.value)
    assert not marker.exists()


def test_the_refused_payload_does_run_when_weights_only_is_off(tmp_path):
    # Guards the test above: its payload is real, so "marker absent" means "refused".
    path, marker = tmp_path / "evil.pt", tmp_path / "pwned"
    code_running_checkpoint(path, marker, "open")

    torch.load(path, weights_only=False)

    assert marker.exists()


def test_fairseq_generate_runs_on_the_checkpoint_with_the_plugin(
    stock_checkpoints, tiny_translation_data, tmp_path
):
    result = run_tool(
        [venv_tool("fairseq-generate"), tiny_translation_data]
        + ["--path", stock_checkpoints / "checkpoint_best.pt"]
        + "--user-dir fairseq_struct --task translation --gen-subset test".split()
        + "--beam 2 --batch-size 16 --cpu".split()
        # fairseq-fixed's batch_by_size drops a partial last batch under the default multiple 8.
        + ["--required-batch-size-multiple", "1"],
        cwd=REPO_ROOT,
    )
    log = tmp_path / "generate.log"
    log.write_text(result.stdout, encoding="utf-8")

    assert len(read_hypotheses(str(log), TEST_SENTENCES)) == TEST_SENTENCES


def test_state_broadcast_on_multi_process_resume_survives_weights_only(stock_checkpoints):
    # What fairseq's broadcast_object sends from rank 0 to the other ranks when a multi-process
    # run resumes, unpickled as _broadcast_object_slow does on the receiving ranks.
    state = load_checkpoint(str(stock_checkpoints / "checkpoint_last.pt"))
    tensors = []
    sent = _split_tensors_from_obj(state, tensors)
    buffer = io.BytesIO()
    torch.save(sent, buffer)
    buffer.seek(0)

    received = torch.load(buffer, map_location="cpu")

    assert received["cfg"] == state["cfg"]
    assert received["optimizer_history"] == state["optimizer_history"]


def test_float64_metric_arrays_of_fast_stat_sync_load(tmp_path):
    # Multi-process --fast-stat-sync sums the --eval-bleu counts as double tensors.
    path = tmp_path / "float_counts.pt"
    meter = (0, "_bleu_counts", "SumMeter", {"sum": np.array([3.0, 1.0]), "round": None})
    torch.save({"extra_state": {"metrics": {"valid": [meter]}}}, path)

    loaded = torch.load(path)

    assert loaded["extra_state"]["metrics"]["valid"][0][3]["sum"].tolist() == [3.0, 1.0]


def test_checkpoint_written_under_numpy_1_loads(stock_checkpoints, tmp_path):
    # numpy < 2 pickled arrays through numpy.core.multiarray, numpy 2 through numpy._core.
    numpy_1 = tmp_path / "numpy1.pt"
    with zipfile.ZipFile(stock_checkpoints / "checkpoint_best.pt") as original:
        with zipfile.ZipFile(numpy_1, "w", zipfile.ZIP_STORED) as rewritten:
            for item in original.infolist():
                data = original.read(item.filename)
                if item.filename.endswith("/data.pkl"):
                    assert b"numpy._core.multiarray" in data
                    data = data.replace(b"numpy._core.multiarray", b"numpy.core.multiarray")
                rewritten.writestr(item, data)

    state = load_checkpoint(str(numpy_1))

    assert any(
        isinstance(meter[3].get("sum"), np.ndarray)
        for meter in state["extra_state"]["metrics"]["valid"]
    )


def test_registering_again_changes_nothing():
    before = set(torch.serialization.get_safe_globals())
    register_safe_globals()
    register_safe_globals()

    assert set(torch.serialization.get_safe_globals()) == before
    assert set(FAIRSEQ_CHECKPOINT_GLOBALS) <= before
