"""Separate parameters laid out one after another in memory, read as one tensor without a copy.

`pack_adjacent` puts the data of, e.g., an attention layer's q/k/v projection weights in one
storage and `joined` reads them as a single view, so their one matrix product needs no
`torch.cat` (more launches, and a copy kept for the backward); checkpoints, optimizers and
initialisation still see the separate parameters. Where the layout was lost, `joined` concatenates.
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
