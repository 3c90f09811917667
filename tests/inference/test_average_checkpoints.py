"""fairseq-struct average-checkpoints on the demo model's checkpoints (conftest's
`demo_translation_run`): the weights are the exact mean, the result loads with the project's
safe loader and translates, mismatched checkpoints are refused naming the file, and the last or
best checkpoints of a save directory are the ones chosen."""

import copy
import subprocess
from pathlib import Path
from typing import List

import pytest
import torch
from conftest import python_stand_in, run_tool
from fairseq import checkpoint_utils

from fairseq_struct.inference.checkpoint_selection import (
    SelectionError,
    best_checkpoints,
    last_checkpoints,
)

AVERAGE = ["-m", "fairseq_struct.inference.average_checkpoints"]


@pytest.fixture(scope="module")
def states(demo_translation_run) -> dict:
    checkpoints = demo_translation_run / "work" / "checkpoints-morph"
    (interval,) = checkpoints.glob("checkpoint_*_*.pt")
    return {
        "data": demo_translation_run / "data-bin",
        "last": checkpoints / "checkpoint_last.pt",
        "interval": interval,
        "state": checkpoint_utils.load_checkpoint_to_cpu(str(checkpoints / "checkpoint_last.pt")),
    }


def average(args: List[str], cwd: Path) -> subprocess.CompletedProcess:
    python, env = python_stand_in()
    return subprocess.run(
        [python, *AVERAGE, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )


def saved_variant(state: dict, path: Path, num_updates: int, bleu: float, shift: float = 0.0):
    """The demo checkpoint's state as another checkpoint: its weights shifted by `shift`, saved
    at `num_updates` with validation BLEU `bleu`."""
    variant = copy.deepcopy(state)
    variant["model"] = {name: tensor + shift for name, tensor in state["model"].items()}
    variant["optimizer_history"][-1]["num_updates"] = num_updates
    variant["extra_state"]["val_loss"] = bleu
    torch.save(variant, path)
    return path


def test_averaged_weights_are_the_exact_mean_and_the_result_translates(states, tmp_path):
    third = saved_variant(states["state"], tmp_path / "third.pt", 700, 1.0, shift=0.25)
    inputs = [states["last"], states["interval"], third]
    out = tmp_path / "averaged.pt"
    result = average(["--inputs", *map(str, inputs), "--output", str(out)], tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]

    averaged = checkpoint_utils.load_checkpoint_to_cpu(str(out))  # the safe loader
    loaded = [checkpoint_utils.load_checkpoint_to_cpu(str(path))["model"] for path in inputs]
    assert set(averaged["model"]) == set(loaded[0])
    for name, tensor in averaged["model"].items():
        expected = (sum(model[name].double() for model in loaded) / 3).to(loaded[0][name].dtype)
        assert tensor.dtype == loaded[0][name].dtype
        assert torch.equal(tensor, expected), name
    assert "last_optimizer_state" not in averaged
    assert averaged["extra_state"]["averaged_from"] == [str(path) for path in inputs]
    assert "val_loss" not in averaged["extra_state"]

    python, env = python_stand_in()
    translated = subprocess.run(
        [python, "-m", "fairseq_struct.inference.translate", "--path", str(out), "--data",
         str(states["data"]), "--cpu"],
        input="I could not see them.\nThe driver came back.\n", cwd=tmp_path, env=env,
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert translated.returncode == 0, translated.stderr[-3000:]
    assert len(translated.stdout.splitlines()) == 2 and all(translated.stdout.splitlines())


def test_a_checkpoint_of_other_shapes_is_refused_by_name(states, tmp_path):
    other = copy.deepcopy(states["state"])
    name = "encoder.layers.0.fc1.weight"
    other["model"][name] = torch.zeros(3, 3)
    torch.save(other, tmp_path / "other.pt")
    result = average(
        ["--inputs", str(states["last"]), str(tmp_path / "other.pt"), "--output", "out.pt"],
        tmp_path,
    )
    assert result.returncode == 1
    assert f"{tmp_path / 'other.pt'}: parameter {name} has shape (3, 3), but" in result.stderr
    assert not (tmp_path / "out.pt").exists()


def test_a_checkpoint_of_another_architecture_is_refused_by_name(states, tmp_path):
    other = copy.deepcopy(states["state"])
    other["cfg"]["model"].arch = "transformer_relpos_tiny"
    torch.save(other, tmp_path / "relpos.pt")
    result = average(
        ["--inputs", str(states["last"]), str(tmp_path / "relpos.pt"), "--output", "out.pt"],
        tmp_path,
    )
    assert result.returncode == 1
    assert f"{tmp_path / 'relpos.pt'}: architecture transformer_relpos_tiny, but" in result.stderr


def test_the_last_and_the_best_checkpoints_of_a_save_directory_are_chosen(states, tmp_path):
    state = states["state"]
    bleu = {100: 20.0, 200: 35.0, 300: 31.0, 400: 28.0}
    for updates, value in bleu.items():
        saved_variant(state, tmp_path / f"checkpoint_{updates // 100}_{updates}.pt", updates, value)
    # fairseq's copies of two of them, which must not count twice:
    saved_variant(state, tmp_path / "checkpoint_best.pt", 200, 35.0)
    saved_variant(state, tmp_path / "checkpoint_last.pt", 400, 28.0)
    saved_variant(state, tmp_path / "checkpoint1.pt", 150, 25.0)  # an epoch's end

    assert [p.name for p in last_checkpoints(tmp_path, 2, by="update")] == [
        "checkpoint_4_400.pt",
        "checkpoint_3_300.pt",
    ]
    assert [p.name for p in last_checkpoints(tmp_path, 1, by="epoch")] == ["checkpoint1.pt"]
    best = best_checkpoints(tmp_path, 3)
    assert [(c.path.name, c.value) for c in best] == [
        ("checkpoint_2_200.pt", 35.0),
        ("checkpoint_3_300.pt", 31.0),
        ("checkpoint_4_400.pt", 28.0),
    ]
    assert best[0].metric == "bleu" and best[0].maximize
    with pytest.raises(SelectionError, match="5 checkpoint.* fewer than the 6 asked for"):
        best_checkpoints(tmp_path, 6)
    with pytest.raises(SelectionError, match="4 checkpoint_<epoch>_<updates>.pt file"):
        last_checkpoints(tmp_path, 5, by="update")

    result = run_tool(
        [python_stand_in()[0], *AVERAGE, "--dir", str(tmp_path), "--num-best-checkpoints", "2",
         "--output", str(tmp_path / "best2.pt")],
        tmp_path,
    )  # fmt: skip
    averaged = torch.load(tmp_path / "best2.pt", weights_only=False)
    assert averaged["extra_state"]["averaged_from"] == [
        str(tmp_path / "checkpoint_2_200.pt"),
        str(tmp_path / "checkpoint_3_300.pt"),
    ]
    assert "bleu 35" in result.stderr
