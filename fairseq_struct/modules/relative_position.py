"""Relative position representations (Shaw et al., 2018), shared across the heads of a layer.

Two learned tables a^K and a^V of shape (2k+1, head_dim). The key j seen from query i uses row
clip(j - i, -k, k) + k. Logits get q_i · a^K_ij (eq. 4 of Shaw et al.), outputs get
Σ_j α_ij a^V_ij (eq. 3), without building a (T_q, T_k, head_dim) tensor.
"""

from typing import Dict, Tuple

import torch
from torch import Tensor, nn

# Per (k, device), the bucket table of the longest length seen so far (rounded up to
# _TABLE_GROWTH): a T_q x T_k table is a view of its corner, shared by layers, beam steps, batches.
_bucket_tables: Dict[Tuple[int, torch.device], Tensor] = {}
_TABLE_GROWTH = 64


def _bucket_table(max_relative_position: int, length: int, device: torch.device) -> Tensor:
    positions = torch.arange(length, device=device)
    distance = positions.unsqueeze(0) - positions.unsqueeze(1)
    k = max_relative_position
    return distance.clamp(-k, k) + k


def _shared_bucket_table(max_relative_position: int, length: int, device: torch.device) -> Tensor:
    """A (L, L) bucket table with L >= length, made once per (k, device) and length growth;
    made afresh inside torch.compile, which folds it into the graph."""
    if torch.compiler.is_compiling():
        return _bucket_table(max_relative_position, length, device)
    key = (max_relative_position, device)
    table = _bucket_tables.get(key)
    if table is None or table.size(0) < length:
        rounded = -(-length // _TABLE_GROWTH) * _TABLE_GROWTH
        table = _bucket_table(max_relative_position, rounded, device)
        _bucket_tables[key] = table
    return table


class RelativePositionEmbeddings(nn.Module):
    def __init__(self, max_relative_position: int, head_dim: int) -> None:
        super().__init__()
        if max_relative_position < 1:
            raise ValueError(f"max_relative_position must be >= 1, got {max_relative_position}")
        self.max_relative_position = max_relative_position
        num_buckets = 2 * max_relative_position + 1
        self.relative_keys = nn.Parameter(torch.empty(num_buckets, head_dim))
        self.relative_values = nn.Parameter(torch.empty(num_buckets, head_dim))
        nn.init.xavier_uniform_(self.relative_keys)
        nn.init.xavier_uniform_(self.relative_values)

    @property
    def num_buckets(self) -> int:
        return 2 * self.max_relative_position + 1

    def bucket_index(self, query_len: int, key_len: int, device: torch.device) -> Tensor:
        """(query_len, key_len) table of clip(j - i, -k, k) + k.

        The queries are the last `query_len` of the `key_len` positions, which covers both the
        full forward (query_len == key_len) and incremental decoding (one new query at the end).
        A view of a table shared by every layer with the same k on the device (see
        _shared_bucket_table): no kernel runs for it once the table is long enough.
        """
        table = _shared_bucket_table(self.max_relative_position, key_len, device)
        return table[key_len - query_len : key_len, :key_len]

    def rows(self, bucket_row: Tensor) -> Tuple[Tensor, Tensor]:
        """a^K_{ij} and a^V_{ij} of every key j seen from one query i (bucket_row: its (T_k,)
        buckets): (T_k, d) each. A single query (a decoding step) adds them to its keys and
        values, q·(k_j + a^K_ij) and Σ_j α_ij (v_j + a^V_ij): the same terms as key_logits and
        value_term in fewer kernels, without (T_q, T_k, d) tensors as T_q is 1."""
        return self.relative_keys[bucket_row], self.relative_values[bucket_row]

    def key_logits(self, query: Tensor, bucket_index: Tensor) -> Tensor:
        """q_i · a^K_{ij} for query (..., T_q, d); returns (..., T_q, T_k)."""
        per_bucket = torch.matmul(query, self.relative_keys.transpose(0, 1))
        index = bucket_index.expand(query.shape[:-2] + bucket_index.shape)
        return per_bucket.gather(-1, index)

    def value_term(self, attn_probs: Tensor, bucket_index: Tensor) -> Tensor:
        """Σ_j α_ij a^V_{ij} for attention weights (..., T_q, T_k); returns (..., T_q, d)."""
        index = bucket_index.expand(attn_probs.shape)
        # The edge buckets sum up to T_k weights: accumulated in fp32, as a half-precision sum
        # of many small terms loses them.
        bucket_probs = attn_probs.new_zeros(
            attn_probs.shape[:-1] + (self.num_buckets,), dtype=torch.float32
        )
        bucket_probs.scatter_add_(-1, index, attn_probs.float())
        return torch.matmul(bucket_probs.type_as(self.relative_values), self.relative_values)
