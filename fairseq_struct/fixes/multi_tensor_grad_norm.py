"""fairseq's gradient norm (`clip_grad_norm_`, every update: logged as gnorm, and `--clip-norm`)
in a number of operations that does not grow with the parameters.

Without apex, fairseq 0.12 takes the norm tensor by tensor (and warns "amp_C fused kernels
unavailable" each time); here one `_foreach_norm`, with fairseq's total and clipping. With apex,
or gradients spread over devices or sparse, fairseq's own function runs.
"""

from typing import Callable, Iterable, Optional, Union

import torch
from fairseq import utils
from torch import Tensor

stock_clip_grad_norm_ = utils.clip_grad_norm_


def _has_grad(p: Optional[Tensor]) -> bool:
    return p is not None and getattr(p, "grad", None) is not None


def clip_grad_norm_(
    params: Union[Tensor, Iterable[Tensor]],
    max_norm: float,
    aggregate_norm_fn: Optional[Callable[[Tensor], Tensor]] = None,
) -> Tensor:
    params = [params] if isinstance(params, Tensor) else list(params)
    grads = [p.grad.detach() for p in params if _has_grad(p) and not hasattr(p, "expert")]
    expert_grads = [p.grad.detach() for p in params if _has_grad(p) and hasattr(p, "expert")]
    if (
        utils.multi_tensor_l2norm_available
        or len(grads) < 2
        or len({g.device for g in grads + expert_grads}) > 1
        or any(g.is_sparse for g in grads + expert_grads)
    ):
        return stock_clip_grad_norm_(params, max_norm, aggregate_norm_fn)
    norms = torch._foreach_norm(grads, 2, dtype=torch.float32)
    total_norm = torch.linalg.vector_norm(torch.stack(norms))
    if aggregate_norm_fn is not None:
        total_norm = aggregate_norm_fn(total_norm)
    if max_norm > 0:
        clip_coef = (float(max_norm) / (total_norm + 1e-6)).clamp_(max=1)
        torch._foreach_mul_(grads + expert_grads, clip_coef)
    return total_norm


utils.clip_grad_norm_ = clip_grad_norm_
