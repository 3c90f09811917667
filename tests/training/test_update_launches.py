"""Kernel launches of one fairseq training update, counted on the CPU, by
benchmarks/bench_update_launches.py at small widths (the counts do not depend on them):
`tp_transformer_base` and fairseq's `transformer` in --bf16, with Adam and with Adafactor.

With the project's multi-tensor update the optimizer step, gradient norm and master-weight copies
take at most 60 operations (Adam) and 200 (Adafactor) however many parameter tensors a model
has, and the TP-Transformer's whole update at most 1.25 times the stock Transformer's. With
fairseq's own per-tensor update (`--update stock`, what the repairs replace) the same counts grow
with the tensors and miss the targets: the check fails if a per-tensor loop comes back."""

import pytest
from conftest import run_benchmark

TARGETS = {"adam": 60, "adafactor": 200}
RATIO_TARGET = 1.25


def _counts(*args: str) -> dict:
    lines = run_benchmark("bench_update_launches.py", "--widths", "small", *args)
    return {line["optimizer"]: line for line in lines}


@pytest.fixture(scope="module")
def project_counts() -> dict:
    return _counts()


@pytest.mark.parametrize("optimizer", list(TARGETS))
def test_the_update_is_within_the_targets(project_counts, optimizer):
    line = project_counts[optimizer]
    a, b = line["a"], line["b"]
    assert (a["arch"], b["arch"], line["precision"], line["update_of"]) == (
        "tp_transformer_base", "transformer", "bf16", "project",
    )  # fmt: skip
    assert a["parameter_tensors"] > b["parameter_tensors"] > 250
    for side in (a, b):
        assert side["optimizer_norm_copies"] <= TARGETS[optimizer], side
        assert side["update"] == side["forward_backward"] + side["optimizer_norm_copies"]
    assert line["ratio"] == round(a["update"] / b["update"], 4)
    assert line["ratio"] <= RATIO_TARGET, line
    assert line["meets_target"] is True


def test_adams_operations_do_not_follow_the_parameter_tensors(project_counts):
    """60 more tensors in the TP-Transformer, not one more operation of the update's rest."""
    line = project_counts["adam"]
    assert line["a"]["optimizer_norm_copies"] == line["b"]["optimizer_norm_copies"]


def test_fairseqs_per_tensor_update_misses_the_targets(project_counts):
    """The same benchmark with fairseq's own update: thousands of operations, about 11 per
    tensor, so the check above fails the day a per-tensor loop is put back."""
    stock = _counts("--update", "stock", "--optimizers", "adam")["adam"]
    assert stock["update_of"] == "stock" and stock["meets_target"] is False
    for side in "ab":
        assert stock[side]["forward_backward"] == project_counts["adam"][side]["forward_backward"]
        assert stock[side]["optimizer_norm_copies"] > 10 * stock[side]["parameter_tensors"]
