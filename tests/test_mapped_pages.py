"""A model loaded from a mapped checkpoint gives the file's pages back module by module
(fairseq_struct/mapped_pages.py): the weights are not held twice while it loads, the model gets
exactly the file's weights (a tied weight too), and memory that is not the file's is left as it
is."""

import sys

import pytest
import torch
from torch import nn

from fairseq_struct.mapped_pages import pages_given_back_as_loaded
from fairseq_struct.model_checkpoint import read_state

pytestmark = pytest.mark.skipif(
    sys.platform != "linux", reason="pages are given back on Linux only (madvise, /proc/self/smaps)"
)

LAYERS, WIDTH = 8, 512  # 1 MiB a weight, 8 MiB in all


def resident_bytes_of(path) -> int:
    """The bytes of `path`'s mappings resident in this process (Rss in /proc/self/smaps)."""
    resident, inside = 0, False
    with open("/proc/self/smaps", encoding="utf-8") as smaps:
        for line in smaps:
            fields = line.split()
            if fields and "-" in fields[0] and ":" not in fields[0]:  # a mapping's first line
                inside = len(fields) >= 6 and fields[5] == str(path)
            elif inside and fields[0] == "Rss:":
                resident += int(fields[1]) * 1024
    return resident


class TiedStack(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(WIDTH, WIDTH) for _ in range(LAYERS))
        self.output = nn.Linear(WIDTH, WIDTH, bias=False)
        self.output.weight = self.layers[0].weight  # tied, as an MLM head to its embeddings


@pytest.fixture
def saved(tmp_path):
    torch.manual_seed(0)
    path = tmp_path / "model.pt"
    torch.save({"model": TiedStack().state_dict()}, path)
    return path


def load_mapped(path, give_back: bool):
    """A fresh model loaded from the mapped file, and the bytes of the file resident right
    after the load, while its state dict still maps it."""
    weights = read_state(str(path))["model"]
    model = TiedStack()
    if give_back:
        with pages_given_back_as_loaded(model, weights):
            model.load_state_dict(weights)
    else:
        model.load_state_dict(weights)
    return model, resident_bytes_of(path)


def test_the_file_is_not_held_beside_the_model(saved):
    _, kept = load_mapped(saved, give_back=False)
    _, given_back = load_mapped(saved, give_back=True)

    weights_bytes = LAYERS * WIDTH * WIDTH * 4
    assert kept > 0.9 * weights_bytes  # copying read every page, and the pages stay
    assert given_back < 0.05 * weights_bytes, (kept, given_back)


def test_the_model_has_the_files_weights_tied_ones_too(saved):
    expected = torch.load(saved)["model"]
    model, _ = load_mapped(saved, give_back=True)

    for name, tensor in model.state_dict().items():
        assert torch.equal(tensor, expected[name]), name
    assert model.output.weight is model.layers[0].weight


def test_tensors_that_are_not_the_files_are_left_alone(saved):
    """A tensor an upgrade made anew lives in memory of its own, whose pages madvise would
    zero: it is not given back."""
    weights = read_state(str(saved))["model"]
    made_anew = torch.randn(WIDTH, WIDTH) + 1.0
    weights = {**weights, "layers.3.weight": made_anew}
    expected = made_anew.clone()
    model = TiedStack()
    with pages_given_back_as_loaded(model, read_state(str(saved))["model"]):
        model.load_state_dict(weights)

    assert torch.equal(made_anew, expected)
    assert torch.equal(model.layers[3].weight, expected)
