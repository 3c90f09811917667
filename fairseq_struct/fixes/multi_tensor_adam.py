"""fairseq's Adam (`--optimizer adam`) in a number of operations that does not grow with the
parameters.

Without apex, fairseq's `Adam.step` runs about 11 operations per tensor. Here the tensors that
share a device and a step count step together, with fairseq's state layout:
- on a GPU, fairseq's operations in its order through `_foreach_*` (bit for bit with fairseq's
  step on the same device): a few launches instead of thousands;
- on a CPU, where `_foreach_*` is a loop over the tensors that also holds a temporary as large
  as all the weights (`sqrt` of the second moments), torch's fused AdamW kernel: one pass over
  each tensor, no temporary. It is fairseq's update to float rounding: fairseq adds `eps` to
  sqrt(v) before the bias correction, the kernel after it, so the kernel is given
  eps / sqrt(1 - beta2^step); fairseq's decoupled weight decay is AdamW's (what it saves:
  benchmarks/README.md#bench_finetune_vs_transformerspy).
Half-precision parameters (`--memory-efficient-fp16/bf16`) keep fairseq's step.
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


def _moment_keys(amsgrad: bool) -> Tuple[str, ...]:
    """The moments fairseq's state holds for a parameter: AMSGrad's maximum only with it."""
    return _MOMENTS if amsgrad else _MOMENTS[:2]


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
    for key in _moment_keys(amsgrad):
        moment = state[key]
        if moment.dtype != p.dtype or moment.device != p.device:
            state[key] = moment.to(p)
    return state


def _step_together(
    params: List[Tensor], states: List[Dict[str, Any]], group: Dict[str, Any], amsgrad: bool
) -> None:
    """One step of parameters on one device that share a step count."""
    for state in states:
        state["step"] += 1
    if _fused_kernel_applies(params, states, amsgrad):
        _fused_step(params, states, group, amsgrad)
    else:
        _foreach_step(params, states, group, amsgrad)


def _fused_kernel_applies(
    params: List[Tensor], states: List[Dict[str, Any]], amsgrad: bool
) -> bool:
    """On a CPU, with every tensor contiguous: torch's CPU kernel walks a tensor's storage in
    order, so it would pair the wrong elements of a transposed weight and its gradient."""
    if params[0].device.type != "cpu":
        return False
    tensors = list(params) + [p.grad for p in params]
    tensors += [state[key] for state in states for key in _moment_keys(amsgrad)]
    return all(tensor.is_contiguous() for tensor in tensors)


def _fused_step(
    params: List[Tensor], states: List[Dict[str, Any]], group: Dict[str, Any], amsgrad: bool
) -> None:
    """fairseq's update through torch's fused AdamW kernel (see the module's docstring)."""
    step = states[0]["step"]
    beta1, beta2 = group["betas"]
    step_count = torch.tensor(float(step))  # the kernel reads each tensor's count, never writes
    torch._fused_adamw_(
        params,
        [p.grad for p in params],
        [s["exp_avg"] for s in states],
        [s["exp_avg_sq"] for s in states],
        [s["max_exp_avg_sq"] for s in states] if amsgrad else [],
        [step_count] * len(params),
        lr=group["lr"],
        beta1=beta1,
        beta2=beta2,
        weight_decay=group["weight_decay"],
        eps=group["eps"] / math.sqrt(1 - beta2**step),
        amsgrad=amsgrad,
        maximize=False,
    )


def _foreach_step(
    params: List[Tensor], states: List[Dict[str, Any]], group: Dict[str, Any], amsgrad: bool
) -> None:
    """fairseq's operations, in its order, each over the whole group (its step counted)."""
    grads = [p.grad for p in params]
    exp_avgs = [s["exp_avg"] for s in states]
    exp_avg_sqs = [s["exp_avg_sq"] for s in states]
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
