"""Whole-Word Attention (WWA, Zöllner et al., section 5; design.md §4.4).

    out = x + mha_wwa(x) + mha_wind(x)

This module returns mha_wwa(x) + mha_wind(x); the caller adds the residual x.

- mha_wwa: the token vectors of each word are averaged (eq. 8), multi-head attention runs over
  the m words with Shaw relative positions at word level (clipping k, 16 by default), and each
  word's output is copied back to its tokens (z_i = ŷ_F(i)).
- mha_wind: every token attends to the tokens at most w positions away (2w+1 keys, itself
  included) with relative positions d^K_{j-i}, d^V_{j-i} (eqs. 3-4), in time and memory linear
  in T.

Each has its own q/k/v/out projections. Energy values per head: m² + (2w+1)·n instead of n²
(eq. 9).
"""

import math
from typing import Optional, Tuple

import torch
from fairseq.modules.fairseq_dropout import FairseqDropout
from torch import Tensor, nn

from fairseq_struct.modules.blockwise_relative_attention import (
    active_dropout,
    blockwise_relative_attention,
    worth_blocking,
)
from fairseq_struct.modules.relative_position import RelativePositionEmbeddings


def attention_energy_count(num_words: int, num_tokens: int, window: int = 5) -> int:
    """Energy values per head of WWA for one sequence: m² + (2w+1)·n (Zöllner et al., eq. 9)."""
    return num_words**2 + (2 * window + 1) * num_tokens


def average_words(
    tokens: Tensor, word_index: Tensor, key_padding_mask: Optional[Tensor], num_words: int
) -> Tuple[Tensor, Tensor, Tensor]:
    """eq. 8: x̂_j = mean of the x_i with F(i) = j, as scatter-adds (linear in T).

    tokens (B, T, C), word_index (B, T) with values below num_words at the real tokens. Returns
    the word vectors (B, num_words, C) in the dtype of tokens, the word sizes (B, num_words) in
    tokens (0 for an empty slot) and the word index with padding tokens sent to word 0. Sums and
    sizes accumulate in fp32 at least: fp16 sums of a long word overflow, bf16 ones drop the
    small terms.
    """
    batch, _, dim = tokens.shape
    summands = tokens.to(torch.promote_types(tokens.dtype, torch.float32))
    if key_padding_mask is not None:
        # Padding tokens join word 0 with weight 0, whatever word_index says there.
        word_index = word_index.masked_fill(key_padding_mask, 0)
        summands = summands.masked_fill(key_padding_mask.unsqueeze(-1), 0.0)
        token_weight = (~key_padding_mask).to(summands.dtype)
    else:
        token_weight = summands.new_ones(word_index.shape)
    token_to_word = word_index.unsqueeze(-1).expand(-1, -1, dim)
    word_sums = summands.new_zeros(batch, num_words, dim).scatter_add(1, token_to_word, summands)
    word_sizes = summands.new_zeros(batch, num_words).scatter_add(1, word_index, token_weight)
    words = word_sums / word_sizes.clamp(min=1).unsqueeze(-1)
    return words.to(tokens.dtype), word_sizes, word_index


class AttentionProjections(nn.Module):
    """q/k/v/out projections of one multi-head attention, with fairseq's initialisation."""

    def __init__(self, embed_dim: int, num_heads: int) -> None:
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = embed_dim // num_heads
        self.q_proj = nn.Linear(embed_dim, embed_dim)
        self.k_proj = nn.Linear(embed_dim, embed_dim)
        self.v_proj = nn.Linear(embed_dim, embed_dim)
        self.out_proj = nn.Linear(embed_dim, embed_dim)
        # fairseq's MultiheadAttention initialisation, so both sides of a comparison start alike.
        for proj in (self.q_proj, self.k_proj, self.v_proj):
            nn.init.xavier_uniform_(proj.weight, gain=1 / math.sqrt(2))
            nn.init.constant_(proj.bias, 0.0)
        nn.init.xavier_uniform_(self.out_proj.weight)
        nn.init.constant_(self.out_proj.bias, 0.0)

    def split_heads(self, x: Tensor) -> Tensor:
        """(batch, length, embed_dim) -> (batch, heads, length, head_dim)."""
        batch, length, _ = x.shape
        return x.view(batch, length, self.num_heads, self.head_dim).transpose(1, 2)

    def queries_keys_values(self, x: Tensor) -> Tuple[Tensor, Tensor, Tensor]:
        """Scaled queries, keys and values of x (batch, length, embed_dim), split into heads."""
        q = self.split_heads(self.q_proj(x) * self.head_dim**-0.5)
        return q, self.split_heads(self.k_proj(x)), self.split_heads(self.v_proj(x))

    def output(self, heads: Tensor) -> Tensor:
        """(batch, heads, length, head_dim) -> out_proj of the concatenated heads."""
        batch, _, length, _ = heads.shape
        return self.out_proj(heads.transpose(1, 2).reshape(batch, length, -1))


class WholeWordAttention(nn.Module):
    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        window: int = 5,
        max_relative_position: int = 16,
        dropout: float = 0.0,
    ) -> None:
        super().__init__()
        if embed_dim % num_heads != 0:
            raise ValueError(f"embed_dim {embed_dim} is not a multiple of num_heads {num_heads}")
        if window < 1:
            raise ValueError(f"window must be >= 1, got {window}")
        self.embed_dim = embed_dim
        self.num_heads = num_heads
        self.window = window
        head_dim = embed_dim // num_heads
        self.word_attention = AttentionProjections(embed_dim, num_heads)
        self.word_relative_positions = RelativePositionEmbeddings(max_relative_position, head_dim)
        # Not mha_wwa's weights: the paper's mha_wind "introduces additional trainable variables".
        self.window_attention = AttentionProjections(embed_dim, num_heads)
        # Clipping at w gives one row per window offset -w..w.
        self.window_relative_positions = RelativePositionEmbeddings(window, head_dim)
        self.dropout_module = FairseqDropout(dropout, module_name=self.__class__.__name__)
        # Energy values per head of the last forward, summed over the batch (read by tests and
        # benchmarks to check eq. 9 against what was really computed).
        self.last_energy_count: Optional[int] = None

    def forward(
        self,
        x: Tensor,
        word_index: Tensor,
        key_padding_mask: Optional[Tensor] = None,
        num_words: Optional[int] = None,
    ) -> Tensor:
        """mha_wwa(x) + mha_wind(x), without the residual.

        x: (T, B, C) time-major, as fairseq's encoder layers. word_index: (B, T) long, the word
        of each token (0, 0, 1, 2, 2, ...), any value at padding. key_padding_mask: (B, T) bool,
        True at padding, or None. num_words: a host int above every word index of the batch
        (the most words of a sequence, or any upper bound), when the caller knows it; None
        uses T word slots (m² energies become T²). It is not checked against word_index (that
        would sync): a smaller one is an out-of-range scatter. Returns (T, B, C).
        """
        tokens = x.transpose(0, 1)
        words, word_energies = self.whole_word_attention(
            tokens, word_index, key_padding_mask, num_words=num_words
        )
        window, window_energies = self.windowed_attention(tokens, key_padding_mask)
        self.last_energy_count = word_energies + window_energies
        return (words + window).transpose(0, 1)

    def whole_word_attention(
        self,
        tokens: Tensor,
        word_index: Tensor,
        key_padding_mask: Optional[Tensor],
        num_words: Optional[int] = None,
    ) -> Tuple[Tensor, int]:
        """mha_wwa of tokens (B, T, C): (B, T, C) output and energy values per head.

        num_words: word slots, a host int above every word index (see `forward`); None gives T
        slots, since a sequence of T tokens has at most T words. Slots without tokens have size
        0: they are masked as keys and no token reads their output, so the real outputs do not
        depend on the number of slots, only the cost does (m² energies per head).
        """
        batch, length, _ = tokens.shape
        if num_words is None:
            # Not word_index.max() + 1: reading it would make the host wait for the device.
            num_words = length
        words, word_sizes, word_index = average_words(
            tokens, word_index, key_padding_mask, num_words
        )
        word_padding_mask = word_sizes == 0

        q, k, v = self.word_attention.queries_keys_values(words)
        relative = self.word_relative_positions
        bucket_index = relative.bucket_index(num_words, num_words, tokens.device)
        if worth_blocking(q.size(-1), num_words, num_words, tokens.device):
            # By query blocks, no m x m tensor kept for the backward: the same heads.
            accumulate = torch.promote_types(q.dtype, torch.float32)
            masked = word_padding_mask[:, None, None, :]
            key_bias = torch.zeros(masked.shape, dtype=accumulate, device=q.device)
            key_bias = key_bias.masked_fill(masked, torch.finfo(accumulate).min)
            heads = blockwise_relative_attention(
                q,
                k,
                v,
                relative.relative_keys,
                relative.relative_values,
                bucket_index,
                key_bias,
                dropout_p=active_dropout(self.dropout_module),
            )
        else:
            energies = torch.matmul(q, k.transpose(2, 3)) + relative.key_logits(q, bucket_index)
            probs = self._masked_softmax(energies, word_padding_mask[:, None, None, :])
            heads = torch.matmul(probs, v) + relative.value_term(probs, bucket_index)
        word_outputs = self.word_attention.output(heads)
        # z_i = ŷ_F(i): every token gets its word's output.
        token_to_word = word_index.unsqueeze(-1).expand(-1, -1, word_outputs.size(-1))
        return word_outputs.gather(1, token_to_word), batch * num_words * num_words

    def windowed_attention(
        self, tokens: Tensor, key_padding_mask: Optional[Tensor]
    ) -> Tuple[Tensor, int]:
        """mha_wind of tokens (B, T, C): (B, T, C) output and energy values per head.

        The band of energies (B, H, T, 2w+1), offset o being key i + o - w of query i, is made
        one offset at a time from the keys padded with w zeros each side: q · k[o : o + T]
        along d, then the weighted values Σ_o p_o v[o : o + T] the same way. Every term is a
        slice of the padded keys or values (no copy); what the backward keeps is q, k, v and
        the (B, H, T, 2w+1) weights, nothing that grows with the window's overlap.
        """
        batch, length, _ = tokens.shape
        w = self.window
        span = 2 * w + 1
        q, k, v = self.window_attention.queries_keys_values(tokens)
        relative = self.window_relative_positions
        padded_keys = nn.functional.pad(k, (0, 0, w, w))
        padded_values = nn.functional.pad(v, (0, 0, w, w))
        band = torch.stack(
            [(q * padded_keys[:, :, o : o + length]).sum(-1) for o in range(span)], dim=-1
        )
        # Offset o is row o of the relative table (clipping at w): q_i · d^K_{j-i} is a matmul.
        energies = band + torch.matmul(q, relative.relative_keys.transpose(0, 1))

        if key_padding_mask is None:
            key_padding_mask = torch.zeros(batch, length, dtype=torch.bool, device=tokens.device)
        # Keys outside the sequence count as padding.
        outside = nn.functional.pad(key_padding_mask, (w, w), value=True).unfold(1, span, 1)
        probs = self._masked_softmax(energies, outside[:, None, :, :])

        heads = torch.matmul(probs, relative.relative_values)
        for o in range(span):
            heads = heads + probs[..., o : o + 1] * padded_values[:, :, o : o + length]
        return self.window_attention.output(heads), batch * length * span

    def _masked_softmax(self, energies: Tensor, mask: Tensor) -> Tensor:
        # The dtype's lowest finite value rather than -inf: a padding token whose whole window is
        # padding gets finite (ignored) weights instead of NaNs that would reach the gradients.
        energies = energies.masked_fill(mask, torch.finfo(energies.dtype).min)
        # In fp32 (fp64 stays fp64) whatever the input dtype: fp16/bf16 sums lose too much.
        accumulate = torch.promote_types(energies.dtype, torch.float32)
        probs = torch.softmax(energies, dim=-1, dtype=accumulate).to(energies.dtype)
        return self.dropout_module(probs)
