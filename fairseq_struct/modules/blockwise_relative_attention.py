"""Attention with Shaw relative positions by query blocks, without a stored T_q x T_k tensor.

    out_i = Σ_j p_ij (v_j + a^V_ij),   p_i = softmax_j(q_i · k_j + q_i · a^K_ij + bias_ij)

(q scaled by 1/sqrt(d); a^K_ij, a^V_ij the rows of the relative tables for bucket b_ij.) As in
fused attention, the forward keeps only q, k, v, the tables and the output; the probabilities of
a block of queries are recomputed in the backward, where

    D_i = Σ_d dO_id O_id,   dP_ij = dO_i · (v_j + a^V_ij),   dS_ij = p_ij (dP_ij - D_i)
    dq_i = Σ_j dS_ij (k_j + a^K_ij),  dk_j = Σ_i dS_ij q_i,  dv_j = Σ_i p_ij dO_i,
    da^K_b = Σ_{b_ij = b} dS_ij q_i,  da^V_b = Σ_{b_ij = b} p_ij dO_i.

Attention dropout is replayed, not stored. Short inputs are better served by the written-out
attention (`worth_blocking`).
"""

from typing import List, Optional, Tuple

import torch
from torch import Tensor, nn

from fairseq_struct.modules.attention_masks import additive_mask, key_padding_bias

# A block's logits (B·H·rows·T_k) are at most this many times the queries' (B·H·T_q·d), so its
# temporaries grow as fused attention's do; a GPU pays a launch per kernel: fewer, larger blocks.
CPU_BLOCK_FACTOR = 0.5
CUDA_BLOCK_FACTOR = 4.0


def query_block_rows(head_dim: int, query_len: int, key_len: int, device: torch.device) -> int:
    factor = CUDA_BLOCK_FACTOR if device.type == "cuda" else CPU_BLOCK_FACTOR
    return max(1, int(factor * query_len * head_dim) // key_len)


def worth_blocking(head_dim: int, query_len: int, key_len: int, device: torch.device) -> bool:
    """Whether an attention of query_len x key_len runs by blocks: when the probabilities the
    written-out attention keeps (about 4 copies of B·H·T_q·T_k) outweigh the layer's other
    activations (about 8·B·H·T_q·d), i.e. T_k > 2d, and the queries make more than one block.
    Below that (translation batches, decoding steps) the written-out attention is as small and
    launches fewer kernels."""
    return key_len > 2 * head_dim and query_len > query_block_rows(
        head_dim, query_len, key_len, device
    )


def active_dropout(dropout: nn.Module) -> float:
    """The probability a FairseqDropout drops with now (0 in evaluation, unless it is kept for
    inference): for kernels that take the dropout as an argument."""
    return dropout.p if dropout.training or dropout.apply_during_inference else 0.0


def _accumulation_dtype(dtype: torch.dtype) -> torch.dtype:
    return torch.promote_types(dtype, torch.float32)


def _bucket_sums(weights: Tensor, index: Tensor, num_buckets: int) -> Tensor:
    """Σ_j weights_ij per bucket of j, in fp32 at least: (..., rows, T_k) -> (..., rows, 2k+1)."""
    sums = weights.new_zeros(
        weights.shape[:-1] + (num_buckets,), dtype=_accumulation_dtype(weights.dtype)
    )
    return sums.scatter_add_(-1, index, weights.to(sums.dtype))


Biases = List[Tensor]


class _Block:
    """The rows start:end of the queries, with their slices of everything shared."""

    def __init__(self, start: int, end: int, bucket_index: Tensor, biases: Biases, shape):
        self.start, self.end = start, end
        batch, heads, _, key_len = shape
        self.index = bucket_index[start:end].expand(batch, heads, end - start, key_len)
        self.biases = [bias if bias.size(2) == 1 else bias[:, :, start:end] for bias in biases]

    def rows(self, x: Tensor) -> Tensor:
        return x[:, :, self.start : self.end]


def _generator_state(device: torch.device) -> Tensor:
    if device.type == "cuda":
        return torch.cuda.get_rng_state(device)
    return torch.get_rng_state()


def _replaying_generator(state: Tensor, device: torch.device) -> torch.Generator:
    """A generator at the state torch's own generator had when the forward drew its masks."""
    generator = torch.Generator(device=device)
    generator.set_state(state)
    return generator


def _keep_mask(
    shape: torch.Size, p: float, device: torch.device, generator: Optional[torch.Generator]
) -> Tensor:
    return torch.rand(shape, device=device, generator=generator) >= p


class _BlockwiseRelativeAttention(torch.autograd.Function):
    @staticmethod
    def _probabilities(
        q_rows: Tensor, keys_t: Tensor, relative_keys: Tensor, block: _Block, dtype: torch.dtype
    ) -> Tensor:
        """softmax of the block's logits, in fp32 at least: (B, H, rows, T_k). q_rows scaled."""
        # In place where it can: each (B, H, rows, T_k) temporary is what a block costs.
        logits = torch.matmul(q_rows, keys_t)
        # q_i · a^K_ij: a gather from the (rows, 2k+1) products with the table.
        query_keys = torch.matmul(q_rows, relative_keys.transpose(0, 1))
        logits += query_keys.gather(-1, block.index)
        if block.biases:
            logits = logits.to(_accumulation_dtype(dtype))
        for bias in block.biases:
            logits += bias
        return torch.softmax(logits, dim=-1, dtype=_accumulation_dtype(dtype))

    @staticmethod
    def forward(  # type: ignore[override]
        ctx,
        q: Tensor,
        k: Tensor,
        v: Tensor,
        relative_keys: Tensor,
        relative_values: Tensor,
        bucket_index: Tensor,
        key_bias: Optional[Tensor],
        bias: Optional[Tensor],
        scaling: float,
        dropout_p: float,
        block_rows: int,
    ) -> Tensor:
        shape = q.shape[:3] + (k.size(2),)
        num_buckets = relative_keys.size(0)
        # The masks come from torch's generator (fairseq's --seed decides them); its state now
        # lets the backward draw the same ones again.
        rng_state = _generator_state(q.device) if dropout_p > 0 else None
        keys_t = k.transpose(-1, -2)
        out = q.new_empty(q.shape)
        biases = [b for b in (key_bias, bias) if b is not None]
        for start in range(0, q.size(2), block_rows):
            block = _Block(start, min(start + block_rows, q.size(2)), bucket_index, biases, shape)
            probs = _BlockwiseRelativeAttention._probabilities(
                block.rows(q) * scaling, keys_t, relative_keys, block, q.dtype
            )
            if dropout_p > 0:
                keep = _keep_mask(probs.shape, dropout_p, q.device, None)
                probs = probs * keep / (1 - dropout_p)
            buckets = _bucket_sums(probs, block.index, num_buckets).to(q.dtype)
            rows_out = torch.matmul(probs.to(q.dtype), v) + torch.matmul(buckets, relative_values)
            block.rows(out).copy_(rows_out)
        ctx.save_for_backward(
            q, k, v, relative_keys, relative_values, bucket_index, key_bias, bias, out
        )
        ctx.scaling, ctx.dropout_p, ctx.block_rows = scaling, dropout_p, block_rows
        ctx.rng_state = rng_state
        return out

    @staticmethod
    def backward(ctx, grad_out: Tensor):  # type: ignore[override]
        q, k, v, relative_keys, relative_values, bucket_index, key_bias, bias, out = (
            ctx.saved_tensors
        )
        biases = [b for b in (key_bias, bias) if b is not None]
        scaling, dropout_p, block_rows = ctx.scaling, ctx.dropout_p, ctx.block_rows
        replay = _replaying_generator(ctx.rng_state, q.device) if dropout_p > 0 else None
        dtype, accumulate = q.dtype, _accumulation_dtype(q.dtype)
        shape = q.shape[:3] + (k.size(2),)
        num_buckets = relative_keys.size(0)

        keys_t, values_t = k.transpose(-1, -2), v.transpose(-1, -2)
        grad_q = q.new_empty(q.shape)
        grad_k = torch.zeros(k.shape, dtype=accumulate, device=k.device)
        grad_v = torch.zeros(v.shape, dtype=accumulate, device=v.device)
        grad_relative_keys = torch.zeros(relative_keys.shape, dtype=accumulate, device=q.device)
        grad_relative_values = torch.zeros_like(grad_relative_keys)
        for start in range(0, q.size(2), block_rows):
            block = _Block(start, min(start + block_rows, q.size(2)), bucket_index, biases, shape)
            q_rows, grad_rows = block.rows(q) * scaling, block.rows(grad_out)
            probs = _BlockwiseRelativeAttention._probabilities(
                q_rows, keys_t, relative_keys, block, dtype
            )
            dropped = probs
            if dropout_p > 0:
                keep = _keep_mask(probs.shape, dropout_p, q.device, replay)
                dropped = probs * keep / (1 - dropout_p)
            grad_v += torch.matmul(dropped.to(dtype).transpose(-1, -2), grad_rows)
            value_buckets = _bucket_sums(dropped, block.index, num_buckets).to(dtype)
            grad_relative_values += torch.einsum("bhrn,bhrd->nd", value_buckets, grad_rows)

            grad_probs = torch.matmul(grad_rows, values_t)
            grad_out_values = torch.matmul(grad_rows, relative_values.transpose(0, 1))
            grad_probs += grad_out_values.gather(-1, block.index)
            grad_probs = grad_probs.to(accumulate)
            if dropout_p > 0:
                grad_probs *= keep
                grad_probs /= 1 - dropout_p
            # D_i = dO_i · O_i = Σ_j p_ij dP_ij: the softmax's backward without the whole row.
            row_dots = torch.einsum(
                "bhrd,bhrd->bhr", grad_rows.to(accumulate), block.rows(out).to(accumulate)
            )
            grad_logits = grad_probs.sub_(row_dots.unsqueeze(-1)).mul_(probs)  # dS, in place
            del probs, dropped
            key_buckets = _bucket_sums(grad_logits, block.index, num_buckets).to(dtype)
            grad_logits = grad_logits.to(dtype)
            grad_rows_q = torch.matmul(grad_logits, k) + torch.matmul(key_buckets, relative_keys)
            block.rows(grad_q).copy_(grad_rows_q * scaling)
            grad_k += torch.matmul(grad_logits.transpose(-1, -2), q_rows)
            grad_relative_keys += torch.einsum("bhrn,bhrd->nd", key_buckets, q_rows)
        return (
            grad_q,
            grad_k.to(dtype),
            grad_v.to(dtype),
            grad_relative_keys.to(relative_keys.dtype),
            grad_relative_values.to(relative_values.dtype),
            None,
            None,
            None,
            None,
            None,
            None,
        )


def blockwise_relative_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    relative_keys: Tensor,
    relative_values: Tensor,
    bucket_index: Tensor,
    key_bias: Optional[Tensor] = None,
    bias: Optional[Tensor] = None,
    scaling: float = 1.0,
    dropout_p: float = 0.0,
    block_rows: Optional[int] = None,
) -> Tensor:
    """Σ_j p_ij (v_j + a^V_ij) with p = softmax(s q k^T + gather(s q (a^K)^T) + biases), s the
    scaling (applied to the queries of a block, as the written-out attention scales q).

    q (B, H, T_q, d); k, v (B, H, T_k, d); relative_keys/values (2k+1, d);
    bucket_index (T_q, T_k) long; key_bias (B or 1, 1, 1, T_k) and bias (B or 1, 1, T_q, T_k),
    additive (-inf or the dtype's lowest value at masked keys), or None: kept apart so that a
    batch's padding and a (T_q, T_k) mask shared by the batch never make a (B, T_q, T_k) one;
    dropout_p: attention dropout on the probabilities. Returns (B, H, T_q, d) in q's dtype.
    """
    if block_rows is None:
        block_rows = query_block_rows(q.size(3), q.size(2), k.size(2), q.device)
    return _BlockwiseRelativeAttention.apply(
        q,
        k,
        v,
        relative_keys,
        relative_values,
        bucket_index,
        key_bias,
        bias,
        scaling,
        dropout_p,
        block_rows,
    )


def attention_bias(
    key_padding_mask: Optional[Tensor], attn_mask: Optional[Tensor], dtype: torch.dtype
) -> Tuple[Optional[Tensor], Optional[Tensor]]:
    """fairseq's masks as the additive (key_bias, bias) of blockwise_relative_attention, in fp32
    at least: key_bias (B, 1, 1, T_k) -inf at padding keys (key_padding_mask (B, T_k), True or
    nonzero there); bias (1, 1, T_q, T_k) -inf where a bool attn_mask (T_q, T_k) is True, or a
    float attn_mask as it is."""
    accumulate = _accumulation_dtype(dtype)
    key_bias = None if key_padding_mask is None else key_padding_bias(key_padding_mask, accumulate)
    bias = None if attn_mask is None else additive_mask(attn_mask, accumulate)[None, None]
    return key_bias, bias
