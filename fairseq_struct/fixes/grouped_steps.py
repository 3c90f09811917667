"""What the grouped optimizer steps (multi_tensor_adam, multi_tensor_adafactor) share: when
they apply at all."""

import torch
from torch.optim import Optimizer


def has_fp32_dense_gradients(optimizer: Optimizer) -> bool:
    """Every parameter with a gradient is fp32 with a dense fp32 gradient (the master weights of
    `--fp16`/`--bf16` are; the half-precision weights of `--memory-efficient-*` are not, and
    fairseq's own step converts those tensor by tensor)."""
    return all(
        p.dtype == torch.float32 and p.grad.dtype == torch.float32 and not p.grad.is_sparse
        for group in optimizer.param_groups
        for p in group["params"]
        if p.grad is not None
    )
