"""fairseq's attention masks as additive biases: 0 where a key is attended to, -inf where it is
masked, shared by the fused, written-out and blockwise attention paths."""

import torch
from torch import Tensor


def key_padding_bias(key_padding_mask: Tensor, dtype: torch.dtype) -> Tensor:
    """(rows, 1, 1, keys) of `key_padding_mask` (rows, keys), True or nonzero at padding."""
    rows, keys = key_padding_mask.shape
    padding = key_padding_mask.view(rows, 1, 1, keys).to(torch.bool)
    return torch.zeros((), dtype=dtype, device=padding.device).masked_fill(padding, float("-inf"))


def additive_mask(attn_mask: Tensor, dtype: torch.dtype) -> Tensor:
    """A bool `attn_mask` as 0 / -inf (-inf where True); a float one as it is, in `dtype`."""
    if attn_mask.dtype == torch.bool:
        return torch.zeros_like(attn_mask, dtype=dtype).masked_fill(attn_mask, float("-inf"))
    return attn_mask.to(dtype)
