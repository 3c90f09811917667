"""The emulated accelerator of `fairseq_struct.testing.other_device`: it refuses what CUDA
refuses (a CPU tensor beside a device tensor), allows what CUDA allows, and computes the CPU's
values."""

import pytest
import torch
from torch import nn

from fairseq_struct.testing.other_device import (
    OTHER_DEVICE,
    DevicePlacementError,
    OnOtherDevice,
    OtherDevice,
    module_to_other_device,
)


class PositionsMadeOnTheCpu(nn.Module):
    """The bug the emulator is for: a bare `torch.arange` beside the module's inputs."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + torch.arange(x.size(-1))


class PositionsMadeOnTheInputsDevice(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + torch.arange(x.size(-1), device=x.device)


def test_a_tensor_made_on_the_cpu_is_refused_naming_the_operation():
    with OtherDevice():
        x = torch.zeros(2, 3).to(OTHER_DEVICE)
        with pytest.raises(DevicePlacementError, match=r"aten\.add\.Tensor: .* CPU tensor of"):
            PositionsMadeOnTheCpu()(x)
        assert PositionsMadeOnTheInputsDevice()(x).device == OTHER_DEVICE


def test_what_cuda_allows_is_allowed_and_values_are_the_cpus():
    values = torch.randn(4, 3)
    with OtherDevice():
        x = values.to(OTHER_DEVICE)
        scaled = x * torch.tensor(2.0)  # a 0-dimensional CPU tensor is a scalar
        picked = x[torch.tensor([3, 0])]  # CPU index tensors index a device tensor
        back = scaled.cpu()
        assert isinstance(scaled, OnOtherDevice) and scaled.device == OTHER_DEVICE
        assert picked.device == OTHER_DEVICE
        assert type(back) is torch.Tensor and back.device.type == "cpu"
        assert bool((x > 0).any()) == bool((values > 0).any())  # values can be read back
        assert x.sum().item() == pytest.approx(values.sum().item())
        assert picked.tolist() == values[[3, 0]].tolist()
        with pytest.raises(TypeError, match="Use Tensor.cpu"):
            x.numpy()
    torch.testing.assert_close(back, values * 2)


def test_a_module_moves_with_its_tied_weights_and_trains():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Embedding(5, 4), nn.Linear(4, 5, bias=False))
    model[1].weight = model[0].weight
    tokens = torch.tensor([[1, 2, 3]])
    expected = torch.autograd.grad(model(tokens).sum(), model[0].weight)[0]
    with OtherDevice():
        module_to_other_device(model)
        assert model[1].weight is model[0].weight
        assert isinstance(model[0].weight, nn.Parameter)
        assert model[0].weight.device == OTHER_DEVICE
        model(tokens.to(OTHER_DEVICE)).sum().backward()
        grad = model[0].weight.grad
        assert grad.device == OTHER_DEVICE
        grad = grad.cpu()
    torch.testing.assert_close(grad, expected)
