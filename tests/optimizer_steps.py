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
