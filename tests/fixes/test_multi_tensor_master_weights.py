"""fairseq's FP16Optimizer with its master-weight copies as `_foreach_*` operations
(fixes/multi_tensor_master_weights.py): the same weights, gradients and state as fairseq's
per-tensor copies, under `--bf16` (a copy per tensor) and `--fp16` (one flat copy), in a number
of operations that does not grow with the number of parameter tensors."""

import pytest
import torch
from fairseq.optim.fp16_optimizer import FP16Optimizer, _FP16OptimizerMixin

import fairseq_struct.plugin  # noqa: F401  (applies the repair)
from fairseq_struct.fixes.multi_tensor_master_weights import stock_methods
from fairseq_struct.testing.build_from_arch import build_model_from_arch, joined_dictionary
from fairseq_struct.testing.fairseq_optimizers import build_fairseq_optimizer
from fairseq_struct.testing.operation_count import count_kernel_operations

PRECISIONS = {
    "bf16": (torch.bfloat16, ["--bf16"]),
    "fp16 flat": (torch.float16, ["--fp16"]),
}
ADAM = ["--optimizer", "adam", "--lr", "0.001", "--weight-decay", "0.01"]


def _optimizer(precision, layers=2):
    dtype, flags = PRECISIONS[precision]
    overrides = dict(encoder_layers=layers, decoder_layers=layers)
    model = build_model_from_arch("tp_transformer_tiny", joined_dictionary(60), 0, **overrides)
    params = [p.detach().to(dtype).requires_grad_() for p in model.parameters()]
    # fairseq flattens on the current CUDA device; on a CPU, the CPU (device index None)
    current_device = torch.cuda.current_device
    torch.cuda.current_device = lambda: None
    try:
        optimizer = build_fairseq_optimizer(params, flags + ADAM)
    finally:
        torch.cuda.current_device = current_device
    assert isinstance(optimizer, FP16Optimizer)
    assert optimizer.has_flat_params == (precision == "fp16 flat")
    return optimizer, params


def _update(optimizer, params, step: int, missing_every: int = 0):
    generator = torch.Generator().manual_seed(step)
    for i, p in enumerate(params):
        grad = torch.randn(p.shape, generator=generator) * 1e-3
        # a missing gradient (a parameter the batch did not use) counts as zeros
        p.grad = None if (missing_every and i % missing_every == 0) else grad.to(p.dtype)
    optimizer.backward(torch.zeros((), requires_grad=True))  # marks the gradients for copying
    optimizer.clip_grad_norm(1.0)
    optimizer.step()
    optimizer.zero_grad()


@pytest.fixture
def stock_copies(monkeypatch):
    def use_stock():
        for name, method in stock_methods.items():
            monkeypatch.setattr(_FP16OptimizerMixin, name, method)

    return use_stock


@pytest.mark.parametrize("precision", PRECISIONS)
def test_weights_gradients_and_state_are_fairseqs(precision, stock_copies):
    fast, fast_params = _optimizer(precision)
    initial = [p.detach().clone() for p in fast_params]
    updates = [(step, 5 if step % 2 else 0) for step in range(6)]
    for step, missing_every in updates:
        _update(fast, fast_params, step, missing_every)
    stock_copies()
    stock, stock_params = _optimizer(precision)
    for step, missing_every in updates:
        _update(stock, stock_params, step, missing_every)
    for p_fast, p_stock, p_initial in zip(fast_params, stock_params, initial):
        assert torch.equal(p_fast, p_stock) and not torch.equal(p_fast, p_initial)
    fast_state, stock_state = fast.state_dict(), stock.state_dict()
    for key, state in stock_state["state"].items():
        for name, value in state.items():
            assert torch.equal(
                torch.as_tensor(fast_state["state"][key][name]), torch.as_tensor(value)
            )


def _operations_of_the_copies(precision: str, layers: int) -> int:
    optimizer, params = _optimizer(precision, layers)
    _update(optimizer, params, 0)
    for p in params:
        p.grad = torch.ones_like(p)
    optimizer._needs_sync = True

    def copies():
        optimizer._sync_fp16_grads_to_fp32()
        optimizer._sync_fp32_params_to_fp16()
        optimizer.zero_grad()

    return count_kernel_operations(copies)


@pytest.mark.parametrize("precision", PRECISIONS)
def test_the_copies_do_not_grow_with_the_parameter_tensors(precision, stock_copies):
    tensors = {layers: len(_optimizer(precision, layers)[1]) for layers in (1, 6)}
    fast = {layers: _operations_of_the_copies(precision, layers) for layers in (1, 6)}
    stock_copies()
    stock = {layers: _operations_of_the_copies(precision, layers) for layers in (1, 6)}
    assert tensors[6] - tensors[1] > 100
    assert fast[6] == fast[1] <= 3, fast
    assert stock[6] - stock[1] >= 2 * (tensors[6] - tensors[1]), stock
