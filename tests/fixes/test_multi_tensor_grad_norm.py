"""fairseq's gradient norm through `_foreach_norm` (fixes/multi_tensor_grad_norm.py): the total
and the clipped gradients of fairseq's per-tensor function, in a number of operations that does
not grow with the number of parameter tensors."""

import warnings

import pytest
import torch
from fairseq import utils

import fairseq_struct.plugin  # noqa: F401  (applies the repair)
from fairseq_struct.fixes.multi_tensor_grad_norm import clip_grad_norm_, stock_clip_grad_norm_
from fairseq_struct.testing.build_from_arch import build_model_from_arch, joined_dictionary
from fairseq_struct.testing.operation_count import count_kernel_operations


def _params(layers: int = 2, dtype: torch.dtype = torch.float32, expert_every: int = 0):
    overrides = dict(encoder_layers=layers, decoder_layers=layers)
    model = build_model_from_arch("tp_transformer_tiny", joined_dictionary(60), 0, **overrides)
    params = [p.detach().to(dtype).requires_grad_() for p in model.parameters()]
    generator = torch.Generator().manual_seed(1)
    for i, p in enumerate(params):
        p.grad = (torch.randn(p.shape, generator=generator) * (i % 7 + 1)).to(dtype)
        if expert_every and i % expert_every == 0:
            p.expert = True
    return params


def test_the_repair_is_what_fairseq_calls():
    assert utils.clip_grad_norm_ is clip_grad_norm_


@pytest.mark.parametrize("max_norm", [0.0, 5.0], ids=["norm only", "clipped"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_the_total_and_the_gradients_are_fairseqs(max_norm, dtype):
    fast, stock = _params(dtype=dtype, expert_every=9), _params(dtype=dtype, expert_every=9)
    halve = lambda total: total / 2  # noqa: E731  (an aggregate_norm_fn, as data parallel has)
    fast_total = clip_grad_norm_(fast, max_norm, halve)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # fairseq's "amp_C fused kernels unavailable"
        stock_total = stock_clip_grad_norm_(stock, max_norm, halve)
    assert fast_total.dtype == stock_total.dtype == torch.float32
    torch.testing.assert_close(fast_total, stock_total, rtol=1e-6, atol=0)
    for p_fast, p_stock in zip(fast, stock):
        torch.testing.assert_close(p_fast.grad, p_stock.grad, rtol=1e-6, atol=0)
    given = _params(dtype=dtype, expert_every=9)
    changed = [not torch.equal(p.grad, q.grad) for p, q in zip(fast, given)]
    # clipped: every gradient, the experts' too (by the norm of the others, which is > 5)
    assert changed == [bool(max_norm)] * len(fast)


def test_a_single_gradient_and_no_gradient_are_fairseqs():
    one = _params()[:1]
    assert clip_grad_norm_(one, 0.0) == torch.linalg.vector_norm(one[0].grad)
    assert clip_grad_norm_([torch.zeros(3, requires_grad=True)], 1.0) == 0


def _operations(layers: int, function) -> int:
    params = _params(layers)
    return count_kernel_operations(lambda: function(params, 1.0))


def test_the_operations_do_not_grow_with_the_parameter_tensors():
    tensors = {layers: len(_params(layers)) for layers in (1, 6)}
    fast = {layers: _operations(layers, clip_grad_norm_) for layers in (1, 6)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        stock = {layers: _operations(layers, stock_clip_grad_norm_) for layers in (1, 6)}
    assert tensors[6] - tensors[1] > 100
    assert fast[6] == fast[1] <= 8, fast
    assert stock[6] - stock[1] >= tensors[6] - tensors[1], stock
