"""fairseq's fp32 master weights (`--fp16`, `--bf16`) copied in a number of operations that does
not grow with the parameters.

fairseq's FP16Optimizer copies the gradients in, zeroes them and copies the weights back one
tensor at a time; here each of the three is one `_foreach_*` operation per device, with
fairseq's semantics.
"""

from collections import defaultdict
from typing import Dict, List, Tuple

import torch
from fairseq.optim.fp16_optimizer import _FP16OptimizerMixin
from torch import Tensor

stock_methods = {
    name: getattr(_FP16OptimizerMixin, name)
    for name in ("_sync_fp16_grads_to_fp32", "_sync_fp32_params_to_fp16", "zero_grad")
}


def _copy_by_device(pairs: List[Tuple[Tensor, Tensor]]) -> None:
    """destination.copy_(source) for every pair, one operation per device."""
    by_device: Dict[torch.device, Tuple[List[Tensor], List[Tensor]]] = defaultdict(lambda: ([], []))
    for destination, source in pairs:
        destinations, sources = by_device[destination.device]
        destinations.append(destination)
        sources.append(source)
    for destinations, sources in by_device.values():
        torch._foreach_copy_(destinations, sources)


def _flat_slices(self: _FP16OptimizerMixin, of_grads: bool) -> List[Tuple[Tensor, Tensor]]:
    """(slice of the flat fp32 buffer, fp16 parameter) pairs in fairseq's layout: per device,
    the parameters in order (those that need a gradient, for the gradients' buffer)."""
    per_device = defaultdict(list)
    for p in self.fp16_params:
        if p.requires_grad or not of_grads:
            per_device[p.device.index].append(p)
    pairs = []
    for device, flat in self.fp32_params.items():
        buffer = flat.grad.data if of_grads else flat.data
        offset = 0
        for p in per_device[device]:
            numel = p.data.numel()
            pairs.append((buffer[offset : offset + numel].view_as(p.data), p))
            offset += numel
    return pairs


def sync_fp16_grads_to_fp32(self: _FP16OptimizerMixin) -> None:
    if not self._needs_sync:
        return
    if self.has_flat_params:
        pairs = [
            (piece, p.grad.data if p.grad is not None else torch.zeros_like(p.data))
            for piece, p in _flat_slices(self, of_grads=True)
        ]
    else:
        pairs = []
        for p, p32 in zip(self.fp16_params, self.fp32_params):
            if not p.requires_grad:
                continue
            if p.grad is None:
                p32.grad = torch.zeros_like(p.data, dtype=torch.float)
            elif p32.grad is None:
                p32.grad = p.grad.data.float()
            else:
                pairs.append((p32.grad.data, p.grad.data))
    _copy_by_device(pairs)
    self._needs_sync = False


def sync_fp32_params_to_fp16(self: _FP16OptimizerMixin) -> None:
    if self.has_flat_params:
        pairs = [(p.data, piece) for piece, p in _flat_slices(self, of_grads=False)]
    else:
        pairs = [
            (p.data, p32.data)
            for p, p32 in zip(self.fp16_params, self.fp32_params)
            if p.requires_grad
        ]
    _copy_by_device(pairs)


def zero_grad(self: _FP16OptimizerMixin) -> None:
    for p in self.fp16_params:
        p.grad = None
    if self.has_flat_params:  # one flat tensor, or one per device
        flats = (
            self.fp32_params.values() if isinstance(self.fp32_params, dict) else [self.fp32_params]
        )
        for flat in flats:
            flat.grad.zero_()
    else:
        grads_by_device = defaultdict(list)
        for p32 in self.fp32_params:
            if p32.grad is not None:
                grads_by_device[p32.grad.device].append(p32.grad)
        for grads in grads_by_device.values():
            torch._foreach_zero_(grads)
    self._needs_sync = False
    if self.scaler is not None:
        self._multiply_factor = 1.0 / float(self.scaler.loss_scale)


_FP16OptimizerMixin._sync_fp16_grads_to_fp32 = sync_fp16_grads_to_fp32
_FP16OptimizerMixin._sync_fp32_params_to_fp16 = sync_fp32_params_to_fp16
_FP16OptimizerMixin.zero_grad = zero_grad
