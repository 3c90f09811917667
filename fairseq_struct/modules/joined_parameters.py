"""Separate parameters laid out one after another in memory, read as one tensor without a copy.

An attention layer projects one input by several Linears (queries, roles, keys, values). One
matrix product of their concatenated weights launches fewer kernels than one per projection,
but `torch.cat` of the weights launches two more and keeps a copy of them alive until the
backward (6.75 MiB for a bert-base layer, more than the layer's activations at 512 tokens).
Here the weights stay separate parameters (checkpoints, optimizers and initialisation see
q_proj.weight, k_proj.weight, ... as before), but `pack_adjacent` puts their data in one
storage, row blocks in order, so that `joined` reads any run of them as a single view: no
kernel, no copy, and the backward hands each parameter its rows of the joined gradient.

Where the layout was lost (parameters replaced, or made by a deep copy before `pack_adjacent`
ran again), `joined` falls back to `torch.cat`: the same values, as before.
"""

from typing import Optional, Sequence

import torch
from torch import Tensor


def _adjacent_view(tensors: Sequence[Tensor]) -> Optional[Tensor]:
    """The tensors as one (Σ rows, ...) view of their common storage, or None when they are not
    contiguous row blocks that follow each other in it."""
    first = tensors[0]
    storage = first.untyped_storage().data_ptr()
    expected = first.data_ptr()
    for tensor in tensors:
        if (
            tensor.shape[1:] != first.shape[1:]
            or tensor.dtype != first.dtype
            or tensor.data_ptr() != expected
            or not tensor.is_contiguous()
            or tensor.untyped_storage().data_ptr() != storage
        ):
            return None
        expected += tensor.numel() * tensor.element_size()
    # The storage must hold them all: a tensor subclass (a wrapper whose storage is its own
    # size, as the suite's emulated device) may report adjacent addresses it does not have.
    if first.untyped_storage().nbytes() < expected - storage:
        return None
    rows = sum(tensor.size(0) for tensor in tensors)
    return first.detach().as_strided(
        (rows,) + tuple(first.shape[1:]), first.stride(), first.storage_offset()
    )


def is_packed(tensors: Sequence[Tensor]) -> bool:
    return _adjacent_view(tensors) is not None


def pack_adjacent(tensors: Sequence[Tensor]) -> None:
    """Move the tensors' data (parameters, same trailing shape, dtype and device) into one new
    storage, one after another; a no-op where they already lie so. Their values, identity and
    requires_grad stay; only `.data` changes, so call it between steps (after `.to()`, a load
    with assign, a copy), not while a graph holds them."""
    if len(tensors) < 2 or is_packed(tensors):
        return
    with torch.no_grad():
        joint = torch.cat([tensor.detach() for tensor in tensors])
    start = 0
    for tensor in tensors:
        tensor.data = joint[start : start + tensor.size(0)]
        start += tensor.size(0)


class _JoinedView(torch.autograd.Function):
    """The packed tensors as one; the gradient goes back to each as its row block (views)."""

    @staticmethod
    def forward(ctx, view: Tensor, *tensors: Tensor) -> Tensor:  # type: ignore[override]
        ctx.rows = [tensor.size(0) for tensor in tensors]
        return view

    @staticmethod
    def backward(ctx, grad: Tensor):  # type: ignore[override]
        return (None, *grad.split(ctx.rows))


def joined(tensors: Sequence[Tensor]) -> Tensor:
    """torch.cat(tensors) along dim 0, gradients included: a view of their storage when
    `pack_adjacent` laid them out (inside torch.compile, the plain concatenation)."""
    if len(tensors) == 1:
        return tensors[0]
    view = None if torch.compiler.is_compiling() else _adjacent_view(tensors)
    if view is None:
        return torch.cat(list(tensors))
    if torch.is_grad_enabled() and any(tensor.requires_grad for tensor in tensors):
        return _JoinedView.apply(view, *tensors)
    return view
