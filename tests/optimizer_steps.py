"""What the optimizer repairs' tests (tests/fixes/test_multi_tensor_*.py) step: a small
TP-Transformer of a chosen depth, and the same seeded gradients for a stock and a repaired copy."""

import torch

from fairseq_struct.testing.build_from_arch import build_model_from_arch, joined_dictionary


def small_model(layers: int = 2) -> torch.nn.Module:
    """tp_transformer_tiny with `layers` encoder and decoder layers (more layers: more tensors of
    the shapes it has already)."""
    overrides = dict(encoder_layers=layers, decoder_layers=layers)
    return build_model_from_arch("tp_transformer_tiny", joined_dictionary(60), 0, **overrides)


def give_gradients(params, step: int, skip_every: int = 0) -> None:
    """The same gradients for both copies: seeded by the step; every `skip_every`-th tensor
    gets none at odd steps (its step count falls behind, as with unused parameters)."""
    generator = torch.Generator().manual_seed(step)
    for i, p in enumerate(params):
        p.grad = (torch.randn(p.shape, generator=generator) * 0.1).to(p.dtype)
        if skip_every and i % skip_every == 0 and step % 2:
            p.grad = None


def take_steps(optimizer, step_function, steps: int, skip_every: int = 0):
    """`steps` steps of `step_function` (a step method, fairseq's or a repair's) with
    `give_gradients`; returns the optimizer."""
    params = optimizer.param_groups[0]["params"]
    for step in range(steps):
        give_gradients(params, step, skip_every)
        step_function(optimizer)
    return optimizer


def assert_same_parameters_and_state(fast, stock, rtol: float, atol: float) -> None:
    """The parameters and the whole state of two optimizers: the same keys, the same int step
    counts, tensors equal within the tolerances."""
    for p_fast, p_stock in zip(fast.param_groups[0]["params"], stock.param_groups[0]["params"]):
        torch.testing.assert_close(p_fast, p_stock, rtol=rtol, atol=atol)
        s_fast, s_stock = fast.state[p_fast], stock.state[p_stock]
        assert s_fast.keys() == s_stock.keys()
        assert s_fast["step"] == s_stock["step"] and isinstance(s_fast["step"], int)
        for key in s_fast.keys() - {"step"}:
            torch.testing.assert_close(s_fast[key], s_stock[key], rtol=rtol, atol=atol)
