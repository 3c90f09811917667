"""fairseq's Adam through multi-tensor operations (fixes/multi_tensor_adam.py): the parameters
and state of fairseq's own per-tensor step, bit for bit, in a number of operations that does not
grow with the number of parameter tensors."""

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
from fairseq_struct.fixes.multi_tensor_adam import grouped_step, stock_step
from fairseq_struct.testing.operation_count import count_kernel_operations

OPTIONS = {
    "pretraining": dict(lr=5e-4, betas=(0.9, 0.98), eps=1e-6),
    "decay, amsgrad": dict(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01, amsgrad=True),
}


def _run(params, options, step_function, steps: int, skip_every: int = 0):
    return take_steps(Adam(params, **options), step_function, steps, skip_every)


def _assert_same(fast, stock):
    """Bit for bit: the same operations on the same values."""
    assert_same_parameters_and_state(fast, stock, rtol=0.0, atol=0.0)


@pytest.mark.parametrize("options", OPTIONS.values(), ids=OPTIONS.keys())
def test_grouped_steps_give_fairseqs_parameters_and_state(options):
    model = small_model()
    fast = _run(list(copy.deepcopy(model).parameters()), options, grouped_step, 12, skip_every=5)
    stock = _run(list(copy.deepcopy(model).parameters()), options, stock_step, 12, skip_every=5)
    counts = {fast.state[p]["step"] for p in fast.param_groups[0]["params"]}
    assert counts == {6, 12}  # tensors that skipped steps are grouped by their own count
    _assert_same(fast, stock)


def test_the_gradients_are_left_as_they_are():
    params = list(small_model().parameters())
    optimizer = Adam(params, **OPTIONS["decay, amsgrad"])
    give_gradients(params, 0)
    given = [p.grad.clone() for p in params]
    grouped_step(optimizer)
    assert all(torch.equal(p.grad, grad) for p, grad in zip(params, given))


def test_checkpoints_move_between_fairseqs_step_and_the_grouped_one():
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
        _assert_same(resumed, reference)


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


def test_the_operations_of_a_step_do_not_grow_with_the_parameter_tensors():
    """Layers add tensors: the grouped step dispatches as many kernel operations for 6 layers as
    for 1 (10 with AMSGrad and weight decay); fairseq's step about 11 per tensor."""
    tensors = {layers: len(list(small_model(layers).parameters())) for layers in (1, 6)}
    grouped = {layers: _operations_of_a_step(layers, grouped_step) for layers in (1, 6)}
    stock = {layers: _operations_of_a_step(layers, stock_step) for layers in (1, 6)}
    assert tensors[6] - tensors[1] > 100
    assert grouped[6] == grouped[1] <= 10, grouped
    assert stock[6] - stock[1] > 8 * (tensors[6] - tensors[1]), stock
