"""RoleRelativeMultiheadAttention's fused path (scaled_dot_product_attention) against its
explicit path, which also returns the weights: the same outputs wherever both apply."""

import pytest
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils._python_dispatch import TorchDispatchMode

from fairseq_struct.modules.role_attention import (
    RoleAttentionOptions,
    RoleRelativeMultiheadAttention,
)

EMBED, HEADS, HEAD_DIM = 16, 4, 6


class OperationRecorder(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.operations = set()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.operations.add(str(func.overloadpacket))
        return func(*args, **(kwargs or {}))


def _attention(cross: bool, relative: int = 0, roles: bool = True):
    torch.manual_seed(0)
    options = RoleAttentionOptions(
        head_dim=HEAD_DIM, use_roles=roles, max_relative_positions=relative
    )
    attention = RoleRelativeMultiheadAttention(
        EMBED, HEADS, options, self_attention=not cross, encoder_decoder_attention=cross
    )
    with torch.no_grad():  # non-zero biases, so that both paths see where they enter
        for name, param in attention.named_parameters():
            if name.endswith("bias"):
                param.normal_()
    return attention.eval()


def _fused_and_explicit(attention, **inputs):
    with OperationRecorder() as recorder:
        fused, no_weights = attention(**inputs, need_weights=False)
    explicit, weights = attention(**inputs, need_weights=True)
    assert no_weights is None and weights is not None
    return fused, explicit, recorder.operations


def _uses_sdpa(operations) -> bool:
    return any("scaled_dot_product" in operation for operation in operations)


@pytest.mark.parametrize("roles", [True, False])
def test_cross_attention_runs_fused_and_equals_the_explicit_path(roles):
    attention = _attention(cross=True, roles=roles)
    query, memory = torch.randn(5, 3, EMBED), torch.randn(7, 3, EMBED)
    padding = torch.zeros(3, 7, dtype=torch.bool)
    padding[1, 4:] = True
    padding[2, 6:] = True
    fused, explicit, operations = _fused_and_explicit(
        attention, query=query, key=memory, value=memory, key_padding_mask=padding
    )
    assert _uses_sdpa(operations)
    torch.testing.assert_close(fused, explicit, rtol=0, atol=1e-5)


@pytest.mark.parametrize("mask_dtype", [torch.bool, torch.float32])
def test_self_attention_without_relative_positions_takes_masks_like_fairseq(mask_dtype):
    """Decoder self-attention: a future mask (float -inf or bool True above the diagonal) and
    key padding, as fairseq's layers pass them."""
    attention = _attention(cross=False, relative=0)
    x = torch.randn(6, 2, EMBED)
    future = torch.triu(torch.ones(6, 6, dtype=torch.bool), diagonal=1)
    attn_mask = (
        future if mask_dtype == torch.bool else torch.zeros(6, 6).masked_fill(future, float("-inf"))
    )
    padding = torch.zeros(2, 6, dtype=torch.bool)
    padding[0, 5:] = True
    fused, explicit, operations = _fused_and_explicit(
        attention, query=x, key=x, value=x, key_padding_mask=padding, attn_mask=attn_mask
    )
    assert _uses_sdpa(operations)
    torch.testing.assert_close(fused, explicit, rtol=0, atol=1e-5)


def test_relative_positions_keep_the_explicit_path():
    attention = _attention(cross=False, relative=3)
    x = torch.randn(6, 2, EMBED)
    with OperationRecorder() as recorder:
        attention(query=x, key=x, value=x, need_weights=False)
    assert not _uses_sdpa(recorder.operations)


def test_beam_cached_cross_attention_fused_equals_explicit():
    """Incremental decoding with beam 3: keys cached once per sentence, the beams' queries fold
    into the query axis on both paths."""
    beams, sentences = 3, 2
    attention = _attention(cross=True)
    attention.set_beam_size(beams)
    memory = torch.randn(7, sentences, EMBED).repeat_interleave(beams, dim=1)
    padding = torch.zeros(sentences, 7, dtype=torch.bool)
    padding[1, 5:] = True
    padding = padding.repeat_interleave(beams, dim=0)
    query = torch.randn(1, sentences * beams, EMBED)
    results = []
    for need_weights in (False, True):
        state = {}
        out, _ = attention(
            query,
            memory,
            memory,
            key_padding_mask=padding,
            incremental_state=state,
            static_kv=True,
            need_weights=need_weights,
        )
        results.append(out)
    full = _attention(cross=True)  # no beam caching: every row its own keys
    expected, _ = full(query, memory, memory, key_padding_mask=padding, need_weights=True)
    torch.testing.assert_close(results[0], results[1], rtol=0, atol=1e-5)
    torch.testing.assert_close(results[0], expected, rtol=0, atol=1e-5)


def test_fused_path_gradients_equal_the_explicit_path():
    """In float64 on SDPA's math kernel, where nothing can hide a difference in the math (the
    CPU's fused kernel uses a fast approximate exp, about 1e-7 off even in float64)."""
    attention = _attention(cross=True).double()
    query = torch.randn(4, 2, EMBED, dtype=torch.float64)
    memory = torch.randn(5, 2, EMBED, dtype=torch.float64)
    grads = []
    for need_weights in (False, True):
        attention.zero_grad()
        with sdpa_kernel(SDPBackend.MATH):
            out, _ = attention(query, memory, memory, need_weights=need_weights)
        out.pow(2).sum().backward()
        grads.append({n: p.grad.clone() for n, p in attention.named_parameters()})
    for name in grads[0]:
        torch.testing.assert_close(grads[0][name], grads[1][name], rtol=0, atol=1e-10)


class MatrixProductCounter(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.products = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.products += str(func.overloadpacket) in ("aten.addmm", "aten.mm")
        return func(*args, **(kwargs or {}))


@pytest.mark.parametrize("roles", [True, False])
def test_the_projections_of_one_input_are_one_matrix_product_of_each_linears_weights(
    roles, monkeypatch
):
    """Self-attention projects queries, keys, values and roles of its input in one product (and
    cross-attention its queries and roles, the encoder's keys and values in another), with
    W_q, W_k, W_v, W_r kept as the separate Linears of checkpoints: each block of the product is
    what its own Linear gives (float64: the same sums in another blocking agree to rounding)."""
    for cross in (False, True):
        attention = _attention(cross=cross, roles=roles).double()
        query = torch.randn(5, 2, EMBED, dtype=torch.float64)
        memory = torch.randn(7, 2, EMBED, dtype=torch.float64) if cross else query
        with MatrixProductCounter() as counter:
            out, _ = attention(query, memory, memory, need_weights=False)
        # The projections and the output projection (the attention's own products are bmm).
        assert counter.products == (3 if cross else 2), (cross, counter.products)
        with monkeypatch.context() as patch:  # the reference: each projection by its Linear
            patch.setattr(
                RoleRelativeMultiheadAttention, "_project",
                staticmethod(lambda x, *linears: [f(x) if f else None for f in linears]),
            )  # fmt: skip
            expected, _ = attention(query, memory, memory, need_weights=False)
        torch.testing.assert_close(out, expected, rtol=0, atol=1e-12)


def test_cross_attention_projects_keys_and_values_of_different_tensors_each_by_its_own():
    attention = _attention(cross=True)
    query, memory = torch.randn(5, 3, EMBED), torch.randn(7, 3, EMBED)
    same, _ = attention(query, memory, memory, need_weights=False)
    other_values = torch.randn(7, 3, EMBED)
    mixed, _ = attention(query, memory, other_values, need_weights=False)
    expected, _ = attention(query, memory.clone(), other_values, need_weights=False)
    torch.testing.assert_close(mixed, expected, rtol=0, atol=0)
    assert not torch.allclose(mixed, same)


def test_decoding_concatenates_the_weights_once_and_follows_their_changes():
    """Without autograd the concatenated projection weights are kept (a beam search's steps
    launch no concatenation), and any change of a weight (an optimizer step in place, a
    state dict loaded, a new dtype) is seen at the next call, as a fresh module would see it."""
    attention = _attention(cross=False, relative=3)
    x = torch.randn(4, 2, EMBED)
    with torch.no_grad():
        attention(x, x, x, need_weights=False)
        with OperationRecorder() as recorder:
            before, _ = attention(x, x, x, need_weights=False)
        assert "aten.cat" not in recorder.operations
        attention.k_proj.weight.add_(0.5)  # in place, as an optimizer step
        attention.role_proj.bias.mul_(2.0)
        changed, _ = attention(x, x, x, need_weights=False)
        fresh = _attention(cross=False, relative=3)
        fresh.load_state_dict(attention.state_dict())
        expected, _ = fresh(x, x, x, need_weights=False)
        torch.testing.assert_close(changed, expected, rtol=0, atol=0)
        assert not torch.allclose(changed, before)
        attention.load_state_dict(_attention(cross=False, relative=3).state_dict())
        torch.testing.assert_close(attention(x, x, x, need_weights=False)[0], before)
        in_double, _ = attention.double()(x.double(), x.double(), x.double(), need_weights=False)
        torch.testing.assert_close(in_double.float(), before, rtol=0, atol=1e-5)


def test_decoding_steps_reuse_the_encoder_padding_as_an_additive_mask():
    """Cross-attention keeps, with the encoder's keys and values, its padding as 0 / -inf from
    the first step: the next steps build no mask, and attend as the explicit path does."""
    beams, sentences = 2, 2
    attention = _attention(cross=True)
    attention.set_beam_size(beams)
    memory = torch.randn(6, sentences, EMBED).repeat_interleave(beams, dim=1)
    padding = torch.tensor([[False] * 6, [False] * 4 + [True] * 2]).repeat_interleave(beams, 0)
    state: dict = {}
    for step in range(2):
        query = torch.randn(1, sentences * beams, EMBED)
        with OperationRecorder() as recorder:
            out, _ = attention(
                query, memory, memory, key_padding_mask=padding, incremental_state=state,
                static_kv=True, need_weights=False,
            )  # fmt: skip
        expected, _ = _attention(cross=True)(
            query, memory, memory, key_padding_mask=padding, need_weights=True
        )
        torch.testing.assert_close(out, expected, rtol=0, atol=1e-5)
    assert not {"aten.masked_fill", "aten.new_zeros", "aten.zeros"} & recorder.operations
