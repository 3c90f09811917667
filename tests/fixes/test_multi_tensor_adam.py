"""fairseq's Adam through grouped operations (fixes/multi_tensor_adam.py): on a GPU (here: any
device, the fused kernel turned off) fairseq's own per-tensor step bit for bit through
`_foreach_*`; on a CPU torch's fused AdamW kernel, fairseq's step to float rounding. Either way
in a number of operations that does not grow with the number of parameter tensors."""

import copy

import pytest
import torch
from fairseq.optim.adam import Adam
from optimizer_steps import (
    assert_same_parameters_and_state,
    give_gradients,
    small_model,
    take_steps,
)

import fairseq_struct.plugin  # noqa: F401  (applies the repair)
from fairseq_struct.fixes import multi_tensor_adam
from fairseq_struct.fixes.multi_tensor_adam import grouped_step, stock_step
from fairseq_struct.testing.operation_count import count_kernel_operations

OPTIONS = {
    "pretraining": dict(lr=5e-4, betas=(0.9, 0.98), eps=1e-6),
    "decay, amsgrad": dict(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01, amsgrad=True),
}
PATHS = ("fused", "foreach")


@pytest.fixture(params=PATHS)
def path(request, monkeypatch):
    """The CPU's fused kernel, or the `_foreach_*` operations a GPU runs."""
    if request.param == "foreach":
        monkeypatch.setattr(multi_tensor_adam, "_fused_kernel_applies", lambda *args: False)
    return request.param


def _run(params, options, step_function, steps: int, skip_every: int = 0):
    return take_steps(Adam(params, **options), step_function, steps, skip_every)


def _assert_same(fast, stock, path: str = "foreach"):
    """foreach: bit for bit, the same operations on the same values; fused: to float rounding
    (the kernel's eps / sqrt(1 - beta2^step) and (1 - lr * decay) * p round apart from fairseq's
    eps and p - lr * decay * p)."""
    tolerance = dict(rtol=0.0, atol=0.0) if path == "foreach" else dict(rtol=2e-6, atol=1e-7)
    assert_same_parameters_and_state(fast, stock, **tolerance)


@pytest.mark.parametrize("options", OPTIONS.values(), ids=OPTIONS.keys())
def test_grouped_steps_give_fairseqs_parameters_and_state(options, path):
    model = small_model()
    fast = _run(list(copy.deepcopy(model).parameters()), options, grouped_step, 12, skip_every=5)
    stock = _run(list(copy.deepcopy(model).parameters()), options, stock_step, 12, skip_every=5)
    counts = {fast.state[p]["step"] for p in fast.param_groups[0]["params"]}
    assert counts == {6, 12}  # tensors that skipped steps are grouped by their own count
    moved = [
        (f - p).abs().max() for f, p in zip(fast.param_groups[0]["params"], model.parameters())
    ]
    assert min(moved) > 1e-4  # 12 steps moved every tensor: the comparison compares updates
    _assert_same(fast, stock, path)


def test_the_fused_kernel_is_not_given_a_transposed_weight():
    """torch's CPU kernel pairs a non-contiguous weight's elements with the wrong gradients: such
    a group takes the `_foreach_*` operations, bit for bit with fairseq's."""
    weight = torch.randn(6, 4).t()  # the transposed view: non-contiguous
    fast = _run([torch.nn.Parameter(weight.clone())], OPTIONS["pretraining"], grouped_step, 3)
    stock = _run([torch.nn.Parameter(weight.clone())], OPTIONS["pretraining"], stock_step, 3)
    assert not fast.param_groups[0]["params"][0].is_contiguous()
    _assert_same(fast, stock, "foreach")


def test_the_gradients_are_left_as_they_are(path):
    params = list(small_model().parameters())
    optimizer = Adam(params, **OPTIONS["decay, amsgrad"])
    give_gradients(params, 0)
    given = [p.grad.clone() for p in params]
    grouped_step(optimizer)
    assert all(torch.equal(p.grad, grad) for p, grad in zip(params, given))


def test_checkpoints_move_between_fairseqs_step_and_the_grouped_one(path):
    model, options = small_model(), OPTIONS["decay, amsgrad"]
    reference = _run(list(copy.deepcopy(model).parameters()), options, stock_step, steps=8)
    for first, then in ((stock_step, grouped_step), (grouped_step, stock_step)):
        half = _run(list(copy.deepcopy(model).parameters()), options, first, steps=4)
        params = [p.detach().clone() for p in half.param_groups[0]["params"]]
        resumed = Adam(params, **options)
        resumed.load_state_dict(copy.deepcopy(half.state_dict()))
        for step in range(4, 8):
            give_gradients(params, step)
            then(resumed)
        _assert_same(resumed, reference, path)


def test_half_precision_parameters_run_fairseqs_own_step():
    """--memory-efficient-bf16 hands the optimizer bf16 weights: fairseq's step (fp32 moments,
    each tensor converted) runs, bit for bit."""
    model = small_model().to(torch.bfloat16)
    options = OPTIONS["pretraining"]
    fast = _run(list(copy.deepcopy(model).parameters()), options, Adam.step, steps=3)
    stock = _run(list(copy.deepcopy(model).parameters()), options, stock_step, steps=3)
    _assert_same(fast, stock)
    assert fast.state[fast.param_groups[0]["params"][0]]["exp_avg"].dtype == torch.float32


def _operations_of_a_step(layers: int, step_function) -> int:
    params = list(small_model(layers).parameters())
    optimizer = Adam(params, **OPTIONS["decay, amsgrad"])
    give_gradients(params, 0)
    step_function(optimizer)  # the state is made at the first step
    give_gradients(params, 1)
    return count_kernel_operations(lambda: step_function(optimizer))


def test_the_operations_of_a_step_do_not_grow_with_the_parameter_tensors(path):
    """Layers add tensors: the grouped step dispatches as many kernel operations for 6 layers as
    for 1 (with AMSGrad and weight decay: 10 through `_foreach_*`, 2 with the fused kernel);
    fairseq's step about 11 per tensor."""
    tensors = {layers: len(list(small_model(layers).parameters())) for layers in (1, 6)}
    grouped = {layers: _operations_of_a_step(layers, grouped_step) for layers in (1, 6)}
    stock = {layers: _operations_of_a_step(layers, stock_step) for layers in (1, 6)}
    assert tensors[6] - tensors[1] > 100
    assert grouped[6] == grouped[1] <= {"foreach": 10, "fused": 2}[path], grouped
    assert stock[6] - stock[1] > 8 * (tensors[6] - tensors[1]), stock
