"""Whole-Word Attention (SPEC 4.4, seed 002 section 5) against a plain reference computation."""

from typing import List

import pytest
import torch
from torch import Tensor
from torch.utils._python_dispatch import TorchDispatchMode

from fairseq_struct.modules.whole_word_attention import WholeWordAttention, attention_energy_count

EMBED_DIM, HEADS, WINDOW, MAX_REL = 8, 2, 2, 3


def build(window: int = WINDOW, embed_dim: int = EMBED_DIM, heads: int = HEADS):
    torch.manual_seed(0)
    attention = WholeWordAttention(embed_dim, heads, window=window, max_relative_position=MAX_REL)
    # Non-zero biases so that the reference also checks where the biases enter.
    with torch.no_grad():
        for name, param in attention.named_parameters():
            if name.endswith("bias"):
                param.normal_()
    return attention.eval()


def reference_attention(projections, x: Tensor, max_rel: int, allowed, rel_keys, rel_values):
    """Dense softmax over all n keys of one sequence x (n, C), written out per head and pair."""
    n, dim = x.shape
    heads, head_dim = projections.num_heads, projections.head_dim
    q = (projections.q_proj(x) * head_dim**-0.5).view(n, heads, head_dim)
    k = projections.k_proj(x).view(n, heads, head_dim)
    v = projections.v_proj(x).view(n, heads, head_dim)
    out = torch.zeros(n, heads, head_dim)
    for h in range(heads):
        for i in range(n):
            keys = [j for j in range(n) if allowed(i, j)]
            offsets = [max(-max_rel, min(max_rel, j - i)) + max_rel for j in keys]
            e = torch.stack([q[i, h] @ (k[j, h] + rel_keys[o]) for j, o in zip(keys, offsets)])
            alpha = torch.softmax(e, dim=0)
            out[i, h] = sum(a * (v[j, h] + rel_values[o]) for a, j, o in zip(alpha, keys, offsets))
    return projections.out_proj(out.reshape(n, dim))


def reference_wwa(attention: WholeWordAttention, x: Tensor, words: List[int]) -> Tensor:
    """mha_wwa + mha_wind of one unpadded sequence x (n, C) with word ids `words`."""
    m = words[-1] + 1
    word_vectors = torch.stack(
        [x[[i for i, wd in enumerate(words) if wd == j]].mean(0) for j in range(m)]
    )
    word_rel = attention.word_relative_positions
    word_out = reference_attention(
        attention.word_attention,
        word_vectors,
        word_rel.max_relative_position,
        lambda i, j: True,
        word_rel.relative_keys,
        word_rel.relative_values,
    )
    w = attention.window
    window_rel = attention.window_relative_positions
    window_out = reference_attention(
        attention.window_attention,
        x,
        w,
        lambda i, j: abs(i - j) <= w,
        window_rel.relative_keys,
        window_rel.relative_values,
    )
    return word_out[words] + window_out


SENTENCES = [[0, 0, 1, 2, 2, 2, 3, 4, 5, 5, 6, 6], [0, 1, 1, 2, 3, 3, 3], [0, 1, 2, 2, 2]]


def padded_batch(sentences: List[List[int]], seed: int = 1):
    torch.manual_seed(seed)
    length = max(map(len, sentences))
    x = torch.randn(length, len(sentences), EMBED_DIM)
    word_index = torch.full((len(sentences), length), 99, dtype=torch.long)
    padding = torch.ones(len(sentences), length, dtype=torch.bool)
    for b, words in enumerate(sentences):
        word_index[b, : len(words)] = torch.tensor(words)
        padding[b, : len(words)] = False
    return x, word_index, padding


def test_output_matches_reference_on_padded_batch():
    attention = build()
    x, word_index, padding = padded_batch(SENTENCES)
    with torch.no_grad():
        out = attention(x, word_index, padding)
        assert out.shape == x.shape
        for b, words in enumerate(SENTENCES):
            expected = reference_wwa(attention, x[: len(words), b], words)
            torch.testing.assert_close(out[: len(words), b], expected, atol=1e-5, rtol=1e-5)


def test_sequence_longer_than_clipping_matches_reference():
    attention = build(window=3)
    words = [j // 2 for j in range(22)]  # 11 words: word distances beyond k = 3
    x, word_index, padding = padded_batch([words])
    with torch.no_grad():
        out = attention(x, word_index, None)
        torch.testing.assert_close(
            out[:, 0], reference_wwa(attention, x[:, 0], words), atol=1e-5, rtol=1e-5
        )


def test_padding_does_not_change_other_outputs():
    attention = build()
    x, word_index, padding = padded_batch(SENTENCES)
    noisy = x.clone()
    noisy[padding.t()] = 1e3 * torch.randn(int(padding.sum()), EMBED_DIM)
    with torch.no_grad():
        batched = attention(x, word_index, padding)
        assert torch.equal(
            attention(noisy, word_index, padding)[~padding.t()], batched[~padding.t()]
        )
        for b, words in enumerate(SENTENCES):
            alone = attention(x[: len(words), b : b + 1], word_index[b : b + 1, : len(words)], None)
            torch.testing.assert_close(alone[:, 0], batched[: len(words), b], atol=1e-6, rtol=1e-6)


def test_long_padding_gives_finite_gradients():
    attention = build().train()
    x, word_index, padding = padded_batch([[0] * 3, list(range(20))])
    x.requires_grad_(True)
    out = attention(x, word_index, padding)
    out[~padding.t()].sum().backward()
    assert torch.isfinite(x.grad).all()
    assert all(torch.isfinite(p.grad).all() for p in attention.parameters())


class ShapeRecorder(TorchDispatchMode):
    """Records the shape of every tensor an aten op returns, forward and backward."""

    def __init__(self) -> None:
        super().__init__()
        self.shapes = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in out if isinstance(out, (tuple, list)) else [out]:
            if isinstance(t, Tensor):
                self.shapes.append(tuple(t.shape))
        return out


def has_square(shapes, n: int) -> bool:
    return any(sum(size >= n for size in shape) >= 2 for shape in shapes)


def test_no_n_by_n_tensor_in_forward_or_backward():
    n = 64
    attention = build(window=5)
    words = [j // 2 for j in range(n)]  # m = n / 2 words: the word attention is m x m
    x, word_index, _ = padded_batch([words])
    x.requires_grad_(True)
    with ShapeRecorder() as recorder:
        attention(x, word_index, None).sum().backward()
    assert not has_square(recorder.shapes, n)
    assert (1, HEADS, n // 2, n // 2) in recorder.shapes
    assert (1, HEADS, n, 11) in recorder.shapes


def test_shape_recorder_detects_dense_attention():
    n = 64
    x = torch.randn(1, n, EMBED_DIM)
    with ShapeRecorder() as recorder:
        torch.softmax(x @ x.transpose(1, 2), -1)
    assert has_square(recorder.shapes, n)


@pytest.mark.parametrize("window", [5, 2])
def test_energy_count_matches_formula(window):
    attention = build(window=window)
    words = [0, 0, 1, 2, 2, 2, 3, 4, 4, 5, 6, 6, 6, 6, 7]
    x, word_index, _ = padded_batch([words])
    with torch.no_grad():
        attention(x, word_index, None)
    assert attention.last_energy_count == attention_energy_count(8, 15, window)
    assert attention_energy_count(8, 15) == 8**2 + 11 * 15
