"""fairseq's Adam (`--optimizer adam`) in a number of operations that does not grow with the
parameters.

Without apex, fairseq's `Adam.step` runs about 11 operations per tensor; here the same ones, in
its order, run through `_foreach_*` per group of tensors sharing a device and step count: bit for
bit on a CPU (torch's fused Adam orders `eps` and weight decay differently), with fairseq's state
layout. Half-precision parameters (`--memory-efficient-fp16/bf16`) keep fairseq's step.
"""

import math
from collections import defaultdict
from typing import Any, Callable, Dict, List, Optional, Tuple

import torch
from fairseq.optim.adam import Adam
from torch import Tensor

from fairseq_struct.fixes.grouped_steps import has_fp32_dense_gradients

stock_step = Adam.step

_MOMENTS = ("exp_avg", "exp_avg_sq", "max_exp_avg_sq")


def _prepared_state(optimizer: Adam, p: Tensor, amsgrad: bool) -> Dict[str, Any]:
    """fairseq's state of `p`: made at its first step, else its moments on p's dtype and device
    (fairseq moves them at every step; loading a checkpoint usually has already)."""
    state = optimizer.state[p]
    if len(state) == 0:
        state["step"] = 0
        state["exp_avg"] = torch.zeros_like(p)
        state["exp_avg_sq"] = torch.zeros_like(p)
        if amsgrad:
            state["max_exp_avg_sq"] = torch.zeros_like(p)
        return state
    for key in _MOMENTS if amsgrad else _MOMENTS[:2]:
        moment = state[key]
        if moment.dtype != p.dtype or moment.device != p.device:
            state[key] = moment.to(p)
    return state


def _step_together(
    params: List[Tensor], states: List[Dict[str, Any]], group: Dict[str, Any], amsgrad: bool
) -> None:
    """One step of parameters on one device that share a step count: fairseq's operations, in
    its order, each over the whole group."""
    grads = [p.grad for p in params]
    exp_avgs = [s["exp_avg"] for s in states]
    exp_avg_sqs = [s["exp_avg_sq"] for s in states]
    for state in states:
        state["step"] += 1
    step = states[0]["step"]
    beta1, beta2 = group["betas"]
    torch._foreach_mul_(exp_avgs, beta1)
    torch._foreach_add_(exp_avgs, grads, alpha=1 - beta1)
    torch._foreach_mul_(exp_avg_sqs, beta2)
    torch._foreach_addcmul_(exp_avg_sqs, grads, grads, value=1 - beta2)
    if amsgrad:
        max_exp_avg_sqs = [s["max_exp_avg_sq"] for s in states]
        torch._foreach_maximum_(max_exp_avg_sqs, exp_avg_sqs)
        denominators = torch._foreach_sqrt(max_exp_avg_sqs)
    else:
        denominators = torch._foreach_sqrt(exp_avg_sqs)
    torch._foreach_add_(denominators, group["eps"])
    bias_correction1 = 1 - beta1**step
    bias_correction2 = 1 - beta2**step
    step_size = group["lr"] * math.sqrt(bias_correction2) / bias_correction1
    if group["weight_decay"] != 0:
        torch._foreach_add_(params, params, alpha=-group["weight_decay"] * group["lr"])
    torch._foreach_addcdiv_(params, exp_avgs, denominators, value=-step_size)


def grouped_step(self: Adam, closure: Optional[Callable[[], Any]] = None) -> Any:
    if not has_fp32_dense_gradients(self):
        return stock_step(self, closure)
    loss = closure() if closure is not None else None
    with torch.no_grad():
        for group in self.param_groups:
            amsgrad = group.get("amsgrad", False)
            together: Dict[Tuple[Any, ...], List[Tensor]] = defaultdict(list)
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = _prepared_state(self, p, amsgrad)
                together[(p.device, state["step"])].append(p)
            for params in together.values():
                _step_together(params, [self.state[p] for p in params], group, amsgrad)
    return loss


Adam.step = grouped_step
