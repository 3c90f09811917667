"""Multi-head attention with TP-Transformer roles and relative positions (design.md §2.1, §2.2).

For head h: Q, K, V as usual, and the role R = X W_r + b_r computed from the query stream.
A = softmax(Q K^T / sqrt(d_k) + relative terms), V̄ = A V (+ Σ α a^V), and the filler V̄ is
bound to its role by the Hadamard product: Z = V̄ ⊙ R + V̄ (Soulos et al.'s residual, default)
or Z = V̄ ⊙ R (Schlag et al.). With roles off this is the paper's relative-position baseline.

A complete forward with the call signature and incremental state of fairseq's
MultiheadAttention, whose fused fast path would skip roles and relative positions.
"""

import math
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

import torch
import torch.nn.functional as F
from fairseq.incremental_decoding_utils import FairseqIncrementalState, with_incremental_state
from fairseq.modules.fairseq_dropout import FairseqDropout
from torch import Tensor, nn

from fairseq_struct.modules.attention_masks import additive_mask, key_padding_bias
from fairseq_struct.modules.blockwise_relative_attention import (
    active_dropout,
    attention_bias,
    blockwise_relative_attention,
    worth_blocking,
)
from fairseq_struct.modules.joined_parameters import joined, pack_adjacent
from fairseq_struct.modules.relative_position import RelativePositionEmbeddings

IncrementalState = Dict[str, Dict[str, Optional[Tensor]]]


@dataclass(frozen=True)
class RoleAttentionOptions:
    """What distinguishes a TP-Transformer attention layer from a standard one."""

    head_dim: int
    use_roles: bool = True
    role_residual: bool = True
    max_relative_positions: int = 16
    role_init: str = "xavier"  # see ROLE_INITIALISATIONS


# How W_r starts: "xavier" as W_q, W_k and W_v; "normal" N(0, 1/d_r), written in Schlag et al.'s
# reference code but never applied there (compared in docs/results/en-tr-tp-analysis.md).
ROLE_INITIALISATIONS = ("xavier", "normal")


@with_incremental_state
class RoleRelativeMultiheadAttention(FairseqIncrementalState, nn.Module):
    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        options: RoleAttentionOptions,
        dropout: float = 0.0,
        self_attention: bool = False,
        encoder_decoder_attention: bool = False,
        kdim: Optional[int] = None,
        vdim: Optional[int] = None,
    ) -> None:
        super().__init__()
        if self_attention == encoder_decoder_attention:
            raise ValueError("exactly one of self_attention / encoder_decoder_attention is needed")
        self.embed_dim = embed_dim
        self.num_heads = num_heads
        self.head_dim = options.head_dim
        self.inner_dim = num_heads * options.head_dim
        self.self_attention = self_attention
        self.encoder_decoder_attention = encoder_decoder_attention
        self.use_roles = options.use_roles
        self.role_residual = options.role_residual
        if options.role_init not in ROLE_INITIALISATIONS:
            raise ValueError(
                f"role initialisation {options.role_init!r}: expected one of "
                f"{', '.join(ROLE_INITIALISATIONS)}"
            )
        self.role_init = options.role_init
        self.scaling = self.head_dim**-0.5
        # Set by fairseq's SequenceGenerator through the model (see set_beam_size).
        self.beam_size = 1
        self.dropout_module = FairseqDropout(dropout, module_name=self.__class__.__name__)

        self.q_proj = nn.Linear(embed_dim, self.inner_dim)
        self.k_proj = nn.Linear(kdim or embed_dim, self.inner_dim)
        self.v_proj = nn.Linear(vdim or embed_dim, self.inner_dim)
        # d_v == d_r, as the Hadamard binding requires.
        self.role_proj = nn.Linear(embed_dim, self.inner_dim) if self.use_roles else None
        self.out_proj = nn.Linear(self.inner_dim, embed_dim)
        # Relative positions only in self-attention: cross-attention positions are unrelated.
        self.relative_positions = (
            RelativePositionEmbeddings(options.max_relative_positions, self.head_dim)
            if self_attention and options.max_relative_positions > 0
            else None
        )
        self.reset_parameters()
        self._pack_projections()

    def reset_parameters(self) -> None:
        # fairseq's scaled initialisation for q/k/v (it converges better, see MultiheadAttention).
        for proj in (self.q_proj, self.k_proj, self.v_proj):
            nn.init.xavier_uniform_(proj.weight, gain=1 / math.sqrt(2))
            nn.init.constant_(proj.bias, 0.0)
        nn.init.xavier_uniform_(self.out_proj.weight)
        nn.init.constant_(self.out_proj.bias, 0.0)
        if self.role_proj is not None:
            if self.role_init == "xavier":
                nn.init.xavier_uniform_(self.role_proj.weight, gain=1 / math.sqrt(2))
            else:
                nn.init.normal_(self.role_proj.weight, mean=0.0, std=self.head_dim**-0.5)
            nn.init.constant_(self.role_proj.bias, 0.0)

    def _input_projections(self) -> List[nn.Linear]:
        """q, role, k, v: the order of their rows in memory (see _pack_projections)."""
        projections = [self.q_proj, self.role_proj, self.k_proj, self.v_proj]
        return [projection for projection in projections if projection is not None]

    def _pack_projections(self) -> None:
        """The input projections' weights (and biases) one after another in one storage, so that
        self-attention's q, role, k, v and cross-attention's q, role and k, v are each one view
        (see joined_parameters); projections with different input sizes (kdim, vdim) are
        packed in the runs that share one."""
        projections = self._input_projections()
        runs = [projections]
        if len({projection.in_features for projection in projections}) > 1:
            runs = [projections[:-2], projections[-2:]]  # [q, role] and [k, v]
        for run in runs:
            if len({projection.in_features for projection in run}) == 1:
                pack_adjacent([projection.weight for projection in run])
                pack_adjacent([projection.bias for projection in run])

    def _apply(self, fn, *args, **kwargs):
        module = super()._apply(fn, *args, **kwargs)
        self._pack_projections()  # .to(), .half(), ... give each parameter its own storage
        return module

    def __setstate__(self, state) -> None:
        super().__setstate__(state)
        self._pack_projections()  # a deep copy or unpickling copies each parameter apart

    def _project(self, x: Tensor, *projections: Optional[nn.Linear]) -> List[Optional[Tensor]]:
        """Each projection of x (None for a missing one, the role without roles), from one
        matrix product of the joined weights (adjacent in memory: a view, no copy): fewer
        kernel launches, and one product for x's gradient in the backward. The weights stay
        separate parameters, as in checkpoints."""
        present = [projection for projection in projections if projection is not None]
        if len(present) == 1:
            outputs = [present[0](x)]
        else:
            weight = joined([projection.weight for projection in present])
            bias = joined([projection.bias for projection in present])
            sizes = [projection.out_features for projection in present]
            outputs = list(F.linear(x, weight, bias).split(sizes, dim=-1))
        return [None if projection is None else outputs.pop(0) for projection in projections]

    def _split_heads(self, x: Tensor) -> Tensor:
        """(time, batch, heads * head_dim) -> (batch, heads, time, head_dim)."""
        time, batch, _ = x.shape
        return x.view(time, batch, self.num_heads, self.head_dim).permute(1, 2, 0, 3)

    def forward(
        self,
        query: Tensor,
        key: Optional[Tensor],
        value: Optional[Tensor],
        key_padding_mask: Optional[Tensor] = None,
        incremental_state: Optional[IncrementalState] = None,
        need_weights: bool = True,
        static_kv: bool = False,
        attn_mask: Optional[Tensor] = None,
        before_softmax: bool = False,
        need_head_weights: bool = False,
    ) -> Tuple[Tensor, Optional[Tensor]]:
        """Time-first input (time, batch, embed_dim), as fairseq's MultiheadAttention."""
        need_weights = need_weights or need_head_weights
        tgt_len, bsz, _ = query.shape
        padding_bias: Optional[Tensor] = None  # key_padding_mask as 0 / -inf, when cached
        saved_state = (
            self._get_input_buffer(incremental_state) if incremental_state is not None else None
        )

        if self.self_attention:
            # Queries, roles, keys and values of one input: one matrix product.
            q, role, k, v = self._project(
                query, self.q_proj, self.role_proj, self.k_proj, self.v_proj
            )
        else:
            q, role = self._project(query, self.q_proj, self.role_proj)
        q = self._split_heads(q)  # scaled in each path below (the blockwise one by blocks)
        if saved_state is not None and static_kv and "prev_key" in saved_state:
            # Cross-attention keys/values of the encoder output were computed at the first step.
            k, v = saved_state["prev_key"], saved_state["prev_value"]
            key_padding_mask = saved_state.get("prev_key_padding_mask")
            padding_bias = saved_state.get("prev_key_padding_bias")
        else:
            if not self.self_attention:
                assert key is not None and value is not None
                if self._caches_per_sentence(incremental_state):
                    self._check_beam_copies(key)
                    # The beams of a sentence share its encoder output: project it once per
                    # sentence.
                    key, value = key[:, :: self.beam_size], value[:, :: self.beam_size]
                    if key_padding_mask is not None:
                        key_padding_mask = key_padding_mask[:: self.beam_size]
                if key is value:  # fairseq passes the encoder output as both
                    k, v = self._project(key, self.k_proj, self.v_proj)
                else:
                    k, v = self.k_proj(key), self.v_proj(value)
            k, v = self._split_heads(k), self._split_heads(v)
            if saved_state is not None:
                if "prev_key" in saved_state and not static_kv:
                    key_padding_mask = self._append_padding_mask(
                        saved_state.get("prev_key_padding_mask"),
                        key_padding_mask,
                        bsz,
                        saved_state["prev_key"].size(2),
                        k.size(2),
                    )
                    k = torch.cat([saved_state["prev_key"], k], dim=2)
                    v = torch.cat([saved_state["prev_value"], v], dim=2)
                saved_state["prev_key"] = k
                saved_state["prev_value"] = v
                saved_state["prev_key_padding_mask"] = key_padding_mask
                if static_kv and key_padding_mask is not None:
                    # The same padding at every step: its additive form made once.
                    padding_bias = key_padding_bias(key_padding_mask, q.dtype)
                    saved_state["prev_key_padding_bias"] = padding_bias
                self._set_input_buffer(incremental_state, saved_state)
        # The fused kernels take no Shaw terms and return no weights.
        probabilities_needed = need_weights or before_softmax
        if self.relative_positions is None and not probabilities_needed:
            filler = self._fused_attention(
                q * self.scaling, k, v, key_padding_mask, attn_mask, padding_bias
            )
        elif not probabilities_needed and self._blocks_pay(q, k):
            filler = self._blockwise_attention(q, k, v, key_padding_mask, attn_mask)
        else:
            filler, attn_probs = self._explicit_attention(
                q * self.scaling, k, v, key_padding_mask, attn_mask, before_softmax
            )
            if before_softmax:
                return filler, v
        if role is not None:
            role = self._split_heads(role)
            # Z = V̄ ⊙ R (+ V̄): the residual keeps gradients alive where R is near 0.
            bound = filler * role
            filler = bound + filler if self.role_residual else bound

        out = filler.permute(2, 0, 1, 3).reshape(tgt_len, bsz, self.inner_dim)
        out = self.out_proj(out)

        returned_weights: Optional[Tensor] = None
        if need_weights:
            returned_weights = attn_probs.transpose(0, 1)  # heads, batch, tgt, src
            if not need_head_weights:
                returned_weights = returned_weights.mean(dim=0)
        return out, returned_weights

    def _fused_attention(
        self,
        q: Tensor,
        k: Tensor,
        v: Tensor,
        key_padding_mask: Optional[Tensor],
        attn_mask: Optional[Tensor],
        padding_bias: Optional[Tensor] = None,
    ) -> Tensor:
        """softmax(Q K^T + masks) V by `scaled_dot_product_attention` (flash / memory-efficient
        kernels on a GPU): the path without a relative-position term and without weights to
        return. q is already scaled; padding_bias, when given, is key_padding_mask's
        `key_padding_bias`. Returns (bsz, heads, tgt_len, head_dim)."""
        bsz, heads, tgt_len, head_dim = q.shape
        sentences, src_len = k.size(0), k.size(2)
        beams = bsz // sentences
        if beams > 1:
            # Keys cached once per sentence: the beams of a sentence become more queries.
            q = q.view(sentences, beams, heads, tgt_len, head_dim).transpose(1, 2)
            q = q.reshape(sentences, heads, beams * tgt_len, head_dim)
            if attn_mask is not None:
                attn_mask = attn_mask.repeat(beams, 1)
        mask = None
        if attn_mask is not None:
            mask = additive_mask(attn_mask, q.dtype)
        if key_padding_mask is not None and mask is not None:
            padding = key_padding_mask.view(sentences, 1, 1, src_len).to(torch.bool)
            mask = mask.masked_fill(padding, float("-inf"))
        elif key_padding_mask is not None:
            mask = padding_bias
            if mask is None:
                mask = key_padding_bias(key_padding_mask, q.dtype)
        dropout_p = active_dropout(self.dropout_module)
        filler = F.scaled_dot_product_attention(
            q, k, v, attn_mask=mask, dropout_p=dropout_p, scale=1.0
        )
        if beams > 1:
            filler = filler.view(sentences, heads, beams, tgt_len, head_dim).transpose(1, 2)
            filler = filler.reshape(bsz, heads, tgt_len, head_dim)
        return filler

    def _blocks_pay(self, q: Tensor, k: Tensor) -> bool:
        """Whether the relative-position attention runs by query blocks: a full forward (not a
        decoding step) long enough for its T x T tensors to matter (see worth_blocking)."""
        bsz, _, tgt_len, _ = q.shape
        return (
            tgt_len > 1
            and k.size(0) == bsz
            and worth_blocking(self.head_dim, tgt_len, k.size(2), q.device)
        )

    def _blockwise_attention(
        self,
        q: Tensor,
        k: Tensor,
        v: Tensor,
        key_padding_mask: Optional[Tensor],
        attn_mask: Optional[Tensor],
    ) -> Tensor:
        """The relative-position attention without the T x T probabilities stored for the
        backward (see blockwise_relative_attention): the same filler as _explicit_attention."""
        assert self.relative_positions is not None
        relative = self.relative_positions
        dropout_p = active_dropout(self.dropout_module)
        return blockwise_relative_attention(
            q,
            k,
            v,
            relative.relative_keys,
            relative.relative_values,
            relative.bucket_index(q.size(2), k.size(2), q.device),
            *attention_bias(key_padding_mask, attn_mask, q.dtype),
            self.scaling,
            dropout_p,
        )

    def _explicit_attention(
        self,
        q: Tensor,
        k: Tensor,
        v: Tensor,
        key_padding_mask: Optional[Tensor],
        attn_mask: Optional[Tensor],
        before_softmax: bool,
    ) -> Tuple[Tensor, Tensor]:
        """The attention written out: Shaw relative terms, and the weights to return.

        Returns (filler, attention probabilities), or (logits, logits) with before_softmax.
        """
        bsz, heads, tgt_len, _ = q.shape
        sentences, src_len = k.size(0), k.size(2)
        bucket_index = None
        if self.relative_positions is not None:
            bucket_index = self.relative_positions.bucket_index(tgt_len, src_len, q.device)
            if tgt_len == 1:  # one query (a decoding step): the terms join its keys and values
                key_rows, value_rows = self.relative_positions.rows(bucket_index[0])
                k, v, bucket_index = k + key_rows, v + value_rows, None
        if sentences != bsz:
            # Keys cached once per sentence: the beams fold into the query axis (fairseq's einsum).
            q_by_sentence = q.view(sentences, -1, heads, tgt_len, self.head_dim)
            attn_weights = torch.einsum("bxhtd,bhsd->bxhts", q_by_sentence, k)
            attn_weights = attn_weights.reshape(bsz, heads, tgt_len, src_len)
            if key_padding_mask is not None:
                key_padding_mask = key_padding_mask.repeat_interleave(bsz // sentences, dim=0)
        else:
            attn_weights = torch.matmul(q, k.transpose(2, 3))
        if bucket_index is not None:
            attn_weights = attn_weights + self.relative_positions.key_logits(q, bucket_index)
        if attn_mask is not None:
            if attn_mask.dtype == torch.bool:
                attn_weights = attn_weights.masked_fill(attn_mask, float("-inf"))
            else:
                attn_weights = attn_weights + attn_mask
        if key_padding_mask is not None:
            attn_weights = attn_weights.masked_fill(
                key_padding_mask.view(bsz, 1, 1, src_len).to(torch.bool), float("-inf")
            )
        if before_softmax:
            return attn_weights, attn_weights

        # At least fp32 for the softmax (bf16/fp16 training); float64 stays float64.
        softmax_dtype = torch.promote_types(attn_weights.dtype, torch.float32)
        attn_probs = F.softmax(attn_weights, dim=-1, dtype=softmax_dtype).type_as(attn_weights)
        dropped_probs = self.dropout_module(attn_probs)
        if sentences != bsz:
            probs_by_sentence = dropped_probs.view(sentences, -1, heads, tgt_len, src_len)
            filler = torch.einsum("bxhts,bhsd->bxhtd", probs_by_sentence, v)
            filler = filler.reshape(bsz, heads, tgt_len, self.head_dim)
        else:
            filler = torch.matmul(dropped_probs, v)
        if bucket_index is not None:
            filler = filler + self.relative_positions.value_term(dropped_probs, bucket_index)
        return filler, attn_probs

    def set_beam_size(self, beam_size: int) -> None:
        """Beam search repeats every encoder row `beam_size` times; cross-attention then caches
        its keys and values once per sentence, as fairseq's MultiheadAttention does."""
        self.beam_size = beam_size

    def _caches_per_sentence(self, incremental_state: Optional[IncrementalState]) -> bool:
        return (
            self.encoder_decoder_attention and incremental_state is not None and self.beam_size > 1
        )

    def _check_beam_copies(self, source: Tensor) -> None:
        """A model left at beam size > 1 by an earlier generator must not mix up sentences.

        The comparison is checked on the device (`_assert_async`), so the host does not wait
        for it: a CPU raises at once, a GPU reports a device-side assertion.
        """
        time, rows, channels = source.shape
        message = (
            f"{__file__}: cross-attention expected the encoder rows in groups of "
            f"{self.beam_size} identical beam copies (set_beam_size({self.beam_size})); "
            "call model.set_beam_size(1) before decoding other batches"
        )
        if rows % self.beam_size != 0:
            raise ValueError(message)
        by_sentence = source.view(time, rows // self.beam_size, self.beam_size, channels)
        torch._assert_async(by_sentence.eq(by_sentence[:, :, :1]).all(), message)

    @staticmethod
    def _append_padding_mask(
        prev_mask: Optional[Tensor],
        new_mask: Optional[Tensor],
        bsz: int,
        prev_len: int,
        new_len: int,
    ) -> Optional[Tensor]:
        if prev_mask is None and new_mask is None:
            return None
        if prev_mask is None:
            prev_mask = new_mask.new_zeros(bsz, prev_len)
        if new_mask is None:
            new_mask = prev_mask.new_zeros(bsz, new_len)
        return torch.cat([prev_mask.to(torch.bool), new_mask.to(torch.bool)], dim=1)

    def reorder_incremental_state(
        self, incremental_state: IncrementalState, new_order: Tensor
    ) -> IncrementalState:
        """Follow beam search: hypothesis i of the next step continues hypothesis new_order[i]."""
        input_buffer = self._get_input_buffer(incremental_state)
        if self.encoder_decoder_attention and self.beam_size > 1:
            # One cached row per sentence: moving hypotheses within a sentence changes nothing,
            # only finished sentences leaving the batch do.
            prev_key = input_buffer.get("prev_key")
            if prev_key is None or prev_key.size(0) * self.beam_size == new_order.size(0):
                return incremental_state
            new_order = new_order.view(-1, self.beam_size)[:, 0] // self.beam_size
        for name, buffered in input_buffer.items():
            if buffered is not None:
                input_buffer[name] = buffered.index_select(0, new_order)
        return self._set_input_buffer(incremental_state, input_buffer)

    def _get_input_buffer(
        self, incremental_state: Optional[IncrementalState]
    ) -> Dict[str, Optional[Tensor]]:
        result = self.get_incremental_state(incremental_state, "attn_state")
        return result if result is not None else {}

    def _set_input_buffer(
        self, incremental_state: IncrementalState, buffer: Dict[str, Optional[Tensor]]
    ) -> IncrementalState:
        return self.set_incremental_state(incremental_state, "attn_state", buffer)
