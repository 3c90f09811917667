"""fairseq's Adafactor with a number of operations that does not grow with the parameters.

The step of fairseq's `Adafactor.step` (about 25 operations per tensor) on groups: matrices
stacked by shape, the rest through `_foreach_*`. Arithmetic and optimizer state are fairseq's, so
checkpoints move both ways; parameter-dependent learning rates (`--scale-parameter`,
`--relative-step`, `--warmup-init`) and half-precision parameters run fairseq's own step.
"""

import math
from collections import defaultdict
from typing import Any, Callable, Dict, List, Optional, Tuple

import torch
from fairseq.optim.adafactor import Adafactor
from torch import Tensor

from fairseq_struct.fixes.grouped_steps import has_fp32_dense_gradients

stock_step = Adafactor.step


def runs_grouped(optimizer: Adafactor) -> bool:
    """The grouped step applies: an external learning rate and fp32 dense gradients."""
    external_lr = not any(
        group["scale_parameter"] or group["relative_step"] or group["warmup_init"]
        for group in optimizer.param_groups
    )
    return external_lr and has_fp32_dense_gradients(optimizer)


def _initial_state(p: Tensor, factored: bool, use_first_moment: bool) -> Dict[str, Any]:
    """fairseq's state of a parameter before its first step."""
    state: Dict[str, Any] = {"step": 0}
    if use_first_moment:
        state["exp_avg"] = torch.zeros_like(p)
    if factored:
        state["exp_avg_sq_row"] = p.new_zeros(p.shape[:-1])
        state["exp_avg_sq_col"] = p.new_zeros(p.shape[:-2] + p.shape[-1:])
    else:
        state["exp_avg_sq"] = torch.zeros_like(p)
    state["RMS"] = 0
    return state


def _rms(tensors: List[Tensor]) -> List[Tensor]:
    """fairseq's `norm(2) / numel ** 0.5` of each tensor (the divisors passed as numbers: a
    tensor of them made here would be a host-to-device copy on a GPU)."""
    norms = torch._foreach_norm(tensors)
    torch._foreach_div_(norms, [t.numel() ** 0.5 for t in tensors])
    return list(norms)


def _clip_and_scale(updates: List[Tensor], group: Dict[str, Any]) -> None:
    """update /= max(1, rms(update) / clip_threshold); update *= lr (in place)."""
    divisors = torch._foreach_div(_rms(updates), group["clip_threshold"])
    torch._foreach_clamp_min_(divisors, 1.0)
    torch._foreach_div_(updates, divisors)
    torch._foreach_mul_(updates, group["lr"])


def _factored_updates(
    grads: List[Tensor], states: List[Dict[str, Any]], beta2t: float, eps: float
) -> List[Tensor]:
    """Adafactor's factored second-moment update of same-shape matrices, stacked."""
    grad = torch.stack(grads)
    squared = grad.square().add_(eps)
    rows = torch.stack([s["exp_avg_sq_row"] for s in states])
    cols = torch.stack([s["exp_avg_sq_col"] for s in states])
    rows.mul_(beta2t).add_(squared.mean(dim=-1), alpha=1.0 - beta2t)
    cols.mul_(beta2t).add_(squared.mean(dim=-2), alpha=1.0 - beta2t)
    torch._foreach_copy_([s["exp_avg_sq_row"] for s in states], list(rows.unbind(0)))
    torch._foreach_copy_([s["exp_avg_sq_col"] for s in states], list(cols.unbind(0)))
    row_factor = (rows / rows.mean(dim=-1, keepdim=True)).rsqrt_().unsqueeze(-1)
    update = torch.mul(row_factor, cols.unsqueeze(-2).rsqrt()).mul_(grad)
    return list(update.unbind(0))


def _unfactored_updates(
    grads: List[Tensor], states: List[Dict[str, Any]], beta2t: float, eps: float
) -> List[Tensor]:
    """Adafactor's full second-moment update (vectors), multi-tensor."""
    squared = torch._foreach_mul(grads, grads)
    torch._foreach_add_(squared, eps)
    exp_avg_sq = [s["exp_avg_sq"] for s in states]
    torch._foreach_mul_(exp_avg_sq, beta2t)
    torch._foreach_add_(exp_avg_sq, squared, alpha=1.0 - beta2t)
    updates = torch._foreach_rsqrt(exp_avg_sq)
    torch._foreach_mul_(updates, grads)
    return updates


def _step_together(
    params: List[Tensor], states: List[Dict[str, Any]], group: Dict[str, Any], factored: bool
) -> None:
    """One step of parameters that share a step count (and, when factored, a shape)."""
    grads = [p.grad for p in params]
    for state in states:
        state["step"] += 1
    for state, value in zip(states, _rms(params)):
        state["RMS"] = value
    beta2t = 1.0 - math.pow(states[0]["step"], group["decay_rate"])
    make_updates = _factored_updates if factored else _unfactored_updates
    updates = make_updates(grads, states, beta2t, group["eps"][0])
    _clip_and_scale(updates, group)
    if group["beta1"] is not None:
        exp_avg = [s["exp_avg"] for s in states]
        torch._foreach_mul_(exp_avg, group["beta1"])
        torch._foreach_add_(exp_avg, updates, alpha=1 - group["beta1"])
        updates = exp_avg
    if group["weight_decay"] != 0:
        torch._foreach_add_(params, params, alpha=-group["weight_decay"] * group["lr"])
    torch._foreach_sub_(params, updates)


def grouped_step(self: Adafactor, closure: Optional[Callable[[], Any]] = None) -> Any:
    if not runs_grouped(self):
        return stock_step(self, closure)
    loss = closure() if closure is not None else None
    with torch.no_grad():
        for group in self.param_groups:
            together: Dict[Tuple[Any, ...], List[Tensor]] = defaultdict(list)
            for p in group["params"]:
                if p.grad is None:
                    continue
                factored, use_first_moment = self._get_options(group, p.shape)
                if len(self.state[p]) == 0:
                    self.state[p].update(_initial_state(p, factored, use_first_moment))
                shape = tuple(p.shape) if factored else None
                together[(factored, shape, self.state[p]["step"], p.device)].append(p)
            for (factored, *_), params in together.items():
                _step_together(params, [self.state[p] for p in params], group, factored)
    return loss


Adafactor.step = grouped_step
