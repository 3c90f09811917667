"""fairseq's Adafactor, grouped (fixes/multi_tensor_adafactor.py): the same parameters and
state as fairseq's own per-tensor step, in a number of operations that does not grow with the
number of parameter tensors."""

import copy

import pytest
from fairseq.optim.adafactor import Adafactor
from optimizer_steps import (
    assert_same_parameters_and_state,
    give_gradients,
    small_model,
    take_steps,
)
from torch.utils._python_dispatch import TorchDispatchMode

import fairseq_struct.plugin  # noqa: F401  (applies the repair)
from fairseq_struct.fixes.multi_tensor_adafactor import grouped_step, stock_step

OPTIONS = {
    "paper": dict(lr=0.003, scale_parameter=False, relative_step=False),
    "beta1, decay, clip": dict(
        lr=0.01, beta1=0.9, weight_decay=0.01, clip_threshold=0.5,
        scale_parameter=False, relative_step=False,
    ),
}  # fmt: skip


def _run(model, options, step_function, steps: int, skip_every: int = 0):
    return take_steps(
        Adafactor(list(model.parameters()), **options), step_function, steps, skip_every
    )


def _assert_same(fast, stock, rtol=1e-6, atol=1e-7):
    assert_same_parameters_and_state(fast, stock, rtol, atol)


@pytest.mark.parametrize("options", OPTIONS.values(), ids=OPTIONS.keys())
def test_grouped_steps_give_fairseqs_parameters_and_state(options):
    model = small_model()
    fast = _run(copy.deepcopy(model), options, grouped_step, steps=12, skip_every=5)
    stock = _run(copy.deepcopy(model), options, stock_step, steps=12, skip_every=5)
    counts = {fast.state[p]["step"] for p in fast.param_groups[0]["params"]}
    assert counts == {6, 12}  # tensors that skipped steps are grouped by their own count
    _assert_same(fast, stock)


def test_checkpoints_move_between_fairseqs_step_and_the_grouped_one():
    model, options = small_model(), OPTIONS["beta1, decay, clip"]
    reference = _run(copy.deepcopy(model), options, stock_step, steps=8)
    for first, then in ((stock_step, grouped_step), (grouped_step, stock_step)):
        half = _run(copy.deepcopy(model), options, first, steps=4)
        params = [p.detach().clone() for p in half.param_groups[0]["params"]]
        resumed = Adafactor(params, **options)
        resumed.load_state_dict(copy.deepcopy(half.state_dict()))
        for step in range(4, 8):
            give_gradients(params, step)
            then(resumed)
        _assert_same(resumed, reference)


def test_a_learning_rate_scaled_by_the_parameter_runs_fairseqs_own_step():
    options = dict(lr=None, scale_parameter=True, relative_step=True, warmup_init=True)
    fast = _run(small_model(), options, Adafactor.step, steps=3)
    stock = _run(small_model(), options, stock_step, steps=3)
    _assert_same(fast, stock, rtol=0, atol=0)
    assert fast.param_groups[0]["lr"] == stock.param_groups[0]["lr"]


class _CountOperations(TorchDispatchMode):
    """Every dispatched operation, views included (the count the bounds below were set on)."""

    def __init__(self):
        super().__init__()
        self.count = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.count += 1
        return func(*args, **(kwargs or {}))


def _operations_of_a_step(layers: int, step_function) -> int:
    model = small_model(layers)
    params = list(model.parameters())
    optimizer = Adafactor(params, **OPTIONS["paper"])
    give_gradients(params, 0)
    step_function(optimizer)  # the state is made at the first step
    give_gradients(params, 1)
    with _CountOperations() as counter:
        step_function(optimizer)
    return counter.count


def test_the_operations_of_a_step_do_not_grow_with_the_parameter_tensors():
    """Layers add tensors of shapes the model has already: the grouped step dispatches as many
    operations for 6 layers as for 1; fairseq's step about 25 more per tensor."""
    tensors = {layers: len(list(small_model(layers).parameters())) for layers in (1, 6)}
    grouped = {layers: _operations_of_a_step(layers, grouped_step) for layers in (1, 6)}
    stock = {layers: _operations_of_a_step(layers, stock_step) for layers in (1, 6)}
    assert tensors[6] - tensors[1] > 100
    assert grouped[6] == grouped[1] < 400, grouped
    assert stock[6] - stock[1] > 20 * (tensors[6] - tensors[1]), stock
