"""Shaw relative attention by query blocks: the written-out attention's outputs and gradients
without a stored T x T tensor, dropout replayed, and the path the layers take."""

from typing import List, Optional, Tuple

import pytest
import torch
from torch import Tensor

from fairseq_struct.modules.blockwise_relative_attention import (
    attention_bias,
    blockwise_relative_attention,
    query_block_rows,
    worth_blocking,
)
from fairseq_struct.modules.relative_position import RelativePositionEmbeddings
from fairseq_struct.modules.role_attention import (
    RoleAttentionOptions,
    RoleRelativeMultiheadAttention,
)

BATCH, HEADS, HEAD_DIM, MAX_REL = 2, 3, 8, 4
SCALING = HEAD_DIM**-0.5


def dense_attention(q, k, v, relative, bucket_index, biases, keep=None, p=0.0) -> Tensor:
    """softmax(s q (k + a^K)^T + bias) (v + a^V) with the (T_q, T_k, d) tables written out."""
    q = q * SCALING
    keys = relative.relative_keys[bucket_index]  # (T_q, T_k, d)
    values = relative.relative_values[bucket_index]
    logits = q @ k.transpose(-1, -2) + torch.einsum("bhqd,qkd->bhqk", q, keys)
    for bias in biases:
        if bias is not None:
            logits = logits.to(torch.promote_types(q.dtype, torch.float32)) + bias
    probs = torch.softmax(logits, -1, dtype=torch.promote_types(q.dtype, torch.float32))
    if keep is not None:
        probs = probs * keep / (1 - p)
    probs = probs.to(q.dtype)
    return probs @ v + torch.einsum("bhqk,qkd->bhqd", probs, values)


def inputs(query_len: int, key_len: int, dtype=torch.float32, seed: int = 0):
    generator = torch.Generator().manual_seed(seed)
    q, k, v = (
        torch.randn(BATCH, HEADS, n, HEAD_DIM, generator=generator, dtype=dtype)
        for n in (query_len, key_len, key_len)
    )
    relative = RelativePositionEmbeddings(MAX_REL, HEAD_DIM).to(dtype)
    bucket_index = relative.bucket_index(query_len, key_len, q.device)
    return q, k, v, relative, bucket_index


def masks(kind: str, query_len: int, key_len: int, dtype) -> Tuple[Optional[Tensor], ...]:
    padding = torch.zeros(BATCH, key_len, dtype=torch.bool)
    padding[1, -5:] = True
    if kind == "none":
        return None, None
    if kind == "padding":
        return attention_bias(padding, None, dtype)
    if kind == "causal":  # a decoder's future mask (the queries are the last positions)
        future = torch.ones(query_len, key_len, dtype=torch.bool).triu(key_len - query_len + 1)
        return attention_bias(padding, future, dtype)
    additive = torch.randn(query_len, key_len, generator=torch.Generator().manual_seed(5))
    return attention_bias(None, additive.to(dtype), dtype)


def outputs_and_gradients(attention, q, k, v, relative) -> List[Tensor]:
    leaves = [t.detach().clone().requires_grad_(True) for t in (q, k, v)]
    relative.zero_grad(set_to_none=True)
    out = attention(*leaves)
    upstream = torch.randn(out.shape, generator=torch.Generator().manual_seed(9), dtype=out.dtype)
    (out * upstream).sum().backward()
    tables = [relative.relative_keys.grad, relative.relative_values.grad]
    return [out.detach()] + [leaf.grad for leaf in leaves] + tables


NAMES = ["output", "dq", "dk", "dv", "da^K", "da^V"]


@pytest.mark.parametrize("mask", ["none", "padding", "causal", "additive"])
@pytest.mark.parametrize("rows", [1, 3, 16, 40], ids=lambda r: f"rows{r}")
@pytest.mark.parametrize("query_len", [37, 20], ids=lambda n: f"tq{n}")
def test_outputs_and_gradients_are_the_written_out_attentions(mask, rows, query_len):
    """fp32 within 1e-5 of the dense computation, whatever the block size (dividing T_q or
    not, one block), the masks and T_q < T_k (the queries are the last positions)."""
    key_len = 37
    q, k, v, relative, bucket_index = inputs(query_len, key_len)
    biases = masks(mask, query_len, key_len, torch.float32)
    blockwise = outputs_and_gradients(
        lambda q, k, v: blockwise_relative_attention(
            q, k, v, relative.relative_keys, relative.relative_values, bucket_index, *biases,
            SCALING, block_rows=rows,
        ),
        q, k, v, relative,
    )  # fmt: skip
    dense = outputs_and_gradients(
        lambda q, k, v: dense_attention(q, k, v, relative, bucket_index, biases), q, k, v, relative
    )
    for name, got, expected in zip(NAMES, blockwise, dense):
        # da^V sums every query's probabilities into each bucket: fp32 sums of values up to ~20
        # in another order differ by up to 2e-5 (seen on a CI-like machine), so the absolute
        # bound follows the tensor's scale; a wrong term would be off by order 1.
        scale = max(1.0, float(expected.abs().max()))
        torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5 * scale, msg=name)


def test_bf16_is_as_close_to_float64_as_the_written_out_attention():
    q, k, v, relative, bucket_index = inputs(48, 48)
    biases = masks("padding", 48, 48, torch.float32)
    exact = outputs_and_gradients(
        lambda q, k, v: dense_attention(q, k, v, relative, bucket_index, biases),
        q.double(), k.double(), v.double(), relative.double(),
    )  # fmt: skip
    relative.bfloat16()
    half = [t.bfloat16() for t in (q, k, v)]
    biases = masks("padding", 48, 48, torch.bfloat16)
    blockwise = outputs_and_gradients(
        lambda q, k, v: blockwise_relative_attention(
            q, k, v, relative.relative_keys, relative.relative_values, bucket_index, *biases,
            SCALING, block_rows=5,
        ),
        *half, relative,
    )  # fmt: skip
    dense = outputs_and_gradients(
        lambda q, k, v: dense_attention(q, k, v, relative, bucket_index, biases), *half, relative
    )
    for name, got, reference, truth in zip(NAMES, blockwise, dense, exact):
        assert got.dtype == torch.bfloat16
        error = (got.double() - truth).abs().max().item()
        reference_error = (reference.double() - truth).abs().max().item()
        scale = truth.abs().max().item()
        assert error <= 1.5 * reference_error + 1e-3 * scale, (name, error, reference_error)


def test_dropout_masks_are_drawn_from_torchs_generator_and_replayed_in_the_backward():
    """With dropout, the outputs and gradients of the dense attention with the same keep-masks:
    torch's generator draws one (B, H, rows, T_k) mask per block, in order."""
    p, rows, length = 0.3, 4, 21
    q, k, v, relative, bucket_index = inputs(length, length)
    biases = masks("padding", length, length, torch.float32)
    torch.manual_seed(123)
    blockwise = outputs_and_gradients(
        lambda q, k, v: blockwise_relative_attention(
            q, k, v, relative.relative_keys, relative.relative_values, bucket_index, *biases,
            SCALING, dropout_p=p, block_rows=rows,
        ),
        q, k, v, relative,
    )  # fmt: skip
    torch.manual_seed(123)
    keep = torch.cat(
        [
            torch.rand(BATCH, HEADS, min(rows, length - start), length) >= p
            for start in range(0, length, rows)
        ],
        dim=2,
    )
    assert 0.2 < 1 - keep.float().mean().item() < 0.4
    dense = outputs_and_gradients(
        lambda q, k, v: dense_attention(q, k, v, relative, bucket_index, biases, keep, p),
        q, k, v, relative,
    )  # fmt: skip
    for name, got, expected in zip(NAMES, blockwise, dense):
        torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5, msg=name)


def saved_shapes(run) -> List[torch.Size]:
    shapes = []

    def pack(tensor):
        shapes.append(tensor.shape)
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        run()
    return shapes


def layer(max_relative_positions: int = MAX_REL) -> RoleRelativeMultiheadAttention:
    torch.manual_seed(0)
    options = RoleAttentionOptions(head_dim=HEAD_DIM, max_relative_positions=max_relative_positions)
    return RoleRelativeMultiheadAttention(HEADS * HEAD_DIM, HEADS, options, self_attention=True)


def layer_outputs_and_gradients(attention, x, padding, future, need_weights):
    attention.zero_grad(set_to_none=True)
    leaf = x.detach().clone().requires_grad_(True)
    out, _ = attention(
        leaf, leaf, leaf, key_padding_mask=padding, attn_mask=future, need_weights=need_weights
    )
    (out * torch.randn(out.shape, generator=torch.Generator().manual_seed(3))).sum().backward()
    return [out.detach(), leaf.grad] + [p.grad for p in attention.parameters()]


@pytest.mark.parametrize("decoder", [False, True], ids=["encoder", "decoder"])
def test_a_long_input_takes_the_blockwise_path_with_the_same_outputs_and_gradients(decoder):
    """T above twice the head size: the layer's attention (need_weights=False, as fairseq's
    layers call it) runs by blocks, nothing T x T saved for the backward, and agrees with the
    written-out path (need_weights=True) in outputs and every gradient."""
    length = 3 * HEAD_DIM + 5
    attention = layer()
    x = torch.randn(length, BATCH, HEADS * HEAD_DIM)
    padding = torch.zeros(BATCH, length, dtype=torch.bool)
    padding[0, -4:] = True
    future = torch.ones(length, length, dtype=torch.bool).triu(1) if decoder else None
    assert worth_blocking(HEAD_DIM, length, length, x.device)

    shapes = saved_shapes(
        lambda: layer_outputs_and_gradients(attention, x, padding, future, need_weights=False)
    )
    # The (T, T) bucket index and future mask are shared by the batch (and the layers); nothing
    # per sentence, let alone per head, is T x T.
    per_sentence = [
        shape for shape in shapes if list(shape).count(length) >= 2 and shape[0] == BATCH
    ]
    assert not per_sentence, shapes
    written_out = saved_shapes(
        lambda: layer_outputs_and_gradients(attention, x, padding, future, need_weights=True)
    )
    assert (BATCH, HEADS, length, length) in written_out  # what the blocks avoid

    blockwise = layer_outputs_and_gradients(attention, x, padding, future, need_weights=False)
    dense = layer_outputs_and_gradients(attention, x, padding, future, need_weights=True)
    for index, (got, expected) in enumerate(zip(blockwise, dense)):
        torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5, msg=str(index))


def test_short_inputs_and_decoding_steps_keep_the_written_out_attention():
    """At most twice the head size, or one query, the T x T tensors are no larger than the
    layer's activations: the written-out path, with its fewer kernels."""
    cpu = torch.device("cpu")
    assert not worth_blocking(HEAD_DIM, 2 * HEAD_DIM, 2 * HEAD_DIM, cpu)
    assert worth_blocking(HEAD_DIM, 2 * HEAD_DIM + 1, 2 * HEAD_DIM + 1, cpu)
    assert not worth_blocking(HEAD_DIM, 1, 500, cpu)
    # Blocks of T_q·d/2 logits a head on a CPU: half the queries' own size.
    assert query_block_rows(64, 512, 512, cpu) == 32
    assert query_block_rows(64, 2048, 2048, cpu) == 32
    assert query_block_rows(64, 100, 4000, cpu) == 1
    attention = layer()
    short = torch.randn(2 * HEAD_DIM, BATCH, HEADS * HEAD_DIM, requires_grad=True)
    shapes = saved_shapes(lambda: attention(short, short, short, need_weights=False))
    assert (BATCH, HEADS, 2 * HEAD_DIM, 2 * HEAD_DIM) in shapes
