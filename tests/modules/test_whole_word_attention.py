"""Whole-Word Attention (design.md §4.4; Zöllner et al., section 5) against a plain computation."""

from typing import List, Optional

import pytest
import torch
from torch import Tensor
from torch.utils._python_dispatch import TorchDispatchMode

from fairseq_struct.modules.blockwise_relative_attention import query_block_rows
from fairseq_struct.modules.whole_word_attention import (
    WholeWordAttention,
    attention_energy_count,
    average_words,
)
from fairseq_struct.testing.host_sync import HostSyncRecorder

EMBED_DIM, HEADS, WINDOW, MAX_REL = 8, 2, 2, 3


def build(
    window: int = WINDOW,
    embed_dim: int = EMBED_DIM,
    heads: int = HEADS,
    dropout: float = 0.0,
):
    torch.manual_seed(0)
    attention = WholeWordAttention(
        embed_dim,
        heads,
        window=window,
        max_relative_position=MAX_REL,
        dropout=dropout,
    )
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
    """Records the shape of every floating-point tensor an aten op returns, forward and
    backward (not the integer bucket-index table, shared by the layers and read by views)."""

    def __init__(self) -> None:
        super().__init__()
        self.shapes = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in out if isinstance(out, (tuple, list)) else [out]:
            if isinstance(t, Tensor) and t.is_floating_point():
                self.shapes.append(tuple(t.shape))
        return out


def has_square(shapes, n: int) -> bool:
    return any(sum(size >= n for size in shape) >= 2 for shape in shapes)


@pytest.mark.parametrize("tokens_per_word", [2, 16])
def test_no_n_by_n_tensor_in_forward_or_backward(tokens_per_word):
    """No T x T tensor; the word attention m x m only while m is at most twice the head size
    (8 here: 4 words), by query blocks above it (32 words: blocks of 2 rows)."""
    n = 64
    m = n // tokens_per_word
    attention = build(window=5)
    words = [j // tokens_per_word for j in range(n)]
    x, word_index, _ = padded_batch([words])
    x.requires_grad_(True)
    with ShapeRecorder() as recorder:
        attention(x, word_index, None, num_words=m).sum().backward()
    assert not has_square(recorder.shapes, n)
    assert (1, HEADS, n, 11) in recorder.shapes  # the window's band
    rows = query_block_rows(EMBED_DIM // HEADS, m, m, x.device)
    if m > 2 * EMBED_DIM // HEADS:
        assert not has_square(recorder.shapes, m)
        assert (1, HEADS, rows, m) in recorder.shapes
    else:
        assert (1, HEADS, m, m) in recorder.shapes


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
        attention(x, word_index, None, num_words=8)
    assert attention.last_energy_count == attention_energy_count(8, 15, window)
    assert attention_energy_count(8, 15) == 8**2 + 11 * 15
    # Without num_words the word attention has one slot per token: the energies it computes.
    with torch.no_grad():
        attention(x, word_index, None)
    assert attention.last_energy_count == attention_energy_count(15, 15, window)


def test_word_slots_do_not_change_outputs():
    """num_words None (T slots), the exact m, or a larger bound: the same outputs and
    gradients; the empty slots are masked keys that no token reads."""
    attention = build()
    x, word_index, padding = padded_batch(SENTENCES)
    results = []
    for num_words in (None, 7, 30):
        attention.zero_grad(set_to_none=True)
        leaf = x.clone().requires_grad_(True)
        out = attention(leaf, word_index, padding, num_words=num_words)
        (out * (~padding.t()).unsqueeze(-1)).sum().backward()
        grads = [leaf.grad] + [p.grad for p in attention.parameters()]
        results.append((out[~padding.t()].detach(), grads))
    for out, grads in results[1:]:
        torch.testing.assert_close(out, results[0][0], atol=1e-6, rtol=1e-6)
        for grad, expected in zip(grads, results[0][1]):
            # Sums over more (zero) rows: rounding only.
            torch.testing.assert_close(grad, expected, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("padded", [False, True], ids=["no_padding_mask", "padding_mask"])
@pytest.mark.parametrize("num_words", [None, 7], ids=["num_words_none", "num_words_7"])
def test_forward_and_backward_make_no_host_sync(padded, num_words):
    """No host synchronisation: no step of the layer's training reads a tensor back to the host."""
    attention = build(dropout=0.1).train()
    x, word_index, padding = padded_batch(SENTENCES)
    x.requires_grad_(True)
    if not padded:
        word_index = word_index.masked_fill(padding, 0)
    with HostSyncRecorder() as recorder:
        out = attention(x, word_index, padding if padded else None, num_words=num_words)
        out.sum().backward()
    assert not recorder.syncs, HostSyncRecorder.report(recorder.syncs)
    assert x.grad is not None


def test_host_sync_recorder_sees_syncs_in_backward():
    """The recorder is awake inside the layer's autograd backward too (the no-sync test above
    would pass vacuously otherwise)."""

    class ReadsBack(torch.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            return t.clone()

        @staticmethod
        def backward(ctx, grad):
            return grad * int(grad.abs().max() > 0)

    attention = build()
    x, word_index, padding = padded_batch(SENTENCES)
    x.requires_grad_(True)
    with HostSyncRecorder() as recorder:
        ReadsBack.apply(attention(x, word_index, padding, num_words=7)).sum().backward()
    assert [sync.operation for sync in recorder.syncs] == ["aten._local_scalar_dense"]


def reference_window(
    attention: WholeWordAttention, tokens: Tensor, key_padding_mask: Optional[Tensor]
) -> Tensor:
    """mha_wind of tokens (B, T, C) written one offset at a time: offset o is key i + o - w."""
    projections = attention.window_attention
    relative = attention.window_relative_positions
    q, k, v = projections.queries_keys_values(tokens)
    batch, length = tokens.shape[:2]
    w = attention.window
    if key_padding_mask is None:
        key_padding_mask = torch.zeros(batch, length, dtype=torch.bool)
    energies, keys = [], []
    for o in range(2 * w + 1):
        j = torch.arange(length) + o - w
        inside = (j >= 0) & (j < length)
        j = j.clamp(0, length - 1)
        e = (q * k[:, :, j]).sum(-1) + q @ relative.relative_keys[o]
        allowed = inside & ~key_padding_mask[:, j]
        energies.append(e.masked_fill(~allowed[:, None], torch.finfo(e.dtype).min))
        keys.append(j)
    probs = torch.softmax(torch.stack(energies, dim=-1), dim=-1)
    heads = sum(
        probs[..., o : o + 1] * (v[:, :, j] + relative.relative_values[o])
        for o, j in enumerate(keys)
    )
    return projections.output(heads)


@pytest.mark.parametrize("window", [1, 2, 3])
def test_banded_window_matches_per_offset_reference(window):
    """Forward and gradients of the band against the per-offset loop over gathered keys, with
    padding, windows crossing both sequence edges, and sequences shorter than the window."""
    attention = build(window=window)
    lengths = [13, 5, 1, 2]
    x, _, padding = padded_batch([list(range(n)) for n in lengths])
    tokens = x.transpose(0, 1)
    real = (~padding).unsqueeze(-1).float()
    upstream = torch.randn(tokens.shape)
    results = []
    for compute in (
        lambda t: attention.windowed_attention(t, padding)[0],
        lambda t: reference_window(attention, t, padding),
    ):
        attention.zero_grad(set_to_none=True)
        leaf = tokens.clone().requires_grad_(True)
        out = compute(leaf)
        # Padding queries are ignored (their outputs are finite, but are nobody's business).
        (out * real * upstream).sum().backward()
        grads = {"tokens": leaf.grad}
        grads.update(
            (name, param.grad)
            for name, param in attention.named_parameters()
            if name.startswith("window_")
        )
        results.append(((out * real).detach(), grads))
    (out, grads), (expected_out, expected_grads) = results
    torch.testing.assert_close(out, expected_out, atol=1e-5, rtol=1e-5)
    assert grads.keys() == expected_grads.keys() and len(grads) == 11
    for name, grad in grads.items():
        torch.testing.assert_close(grad, expected_grads[name], atol=1e-5, rtol=1e-5, msg=name)


def test_banded_window_without_padding_mask_matches_reference():
    attention = build(window=3)
    tokens = torch.randn(2, 10, EMBED_DIM)
    with torch.no_grad():
        torch.testing.assert_close(
            attention.windowed_attention(tokens, None)[0],
            reference_window(attention, tokens, None),
            atol=1e-5,
            rtol=1e-5,
        )


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_word_averages_accumulate_in_fp32(dtype):
    # One long word of large values (fp16: the sum 80,000 overflows) and one of a large value
    # and many small ones (bf16: 256 + 1 rounds back to 256).
    tokens = torch.cat([torch.full((20,), 4000.0), torch.tensor([256.0] + [1.0] * 16)])
    word_index = torch.tensor([0] * 20 + [1] * 17).unsqueeze(0)
    tokens = tokens.view(1, -1, 1).expand(1, -1, 2)
    words, sizes, _ = average_words(tokens.to(dtype), word_index, None, num_words=3)
    assert words.dtype == dtype
    torch.testing.assert_close(words[0, :, 0].float(), torch.tensor([4000.0, 16.0, 0.0]))
    torch.testing.assert_close(sizes, torch.tensor([[20.0, 17.0, 0.0]]))


class SoftmaxRecorder(TorchDispatchMode):
    """Records the input dtype of every softmax (forward and backward)."""

    def __init__(self) -> None:
        super().__init__()
        self.dtypes = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if "softmax" in str(func.overloadpacket):
            self.dtypes.append((str(func.overloadpacket), args[0].dtype))
        return func(*args, **(kwargs or {}))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_softmaxes_run_in_fp32_and_match_fp32(dtype):
    attention = build()
    x, word_index, padding = padded_batch([[0] * 3, list(range(20))])
    with torch.no_grad():
        expected = attention(x, word_index, padding)
    attention.to(dtype).train()
    half_x = x.to(dtype).requires_grad_(True)
    with SoftmaxRecorder() as recorder:
        out = attention(half_x, word_index, padding, num_words=20)
        out[~padding.t()].float().sum().backward()
    assert out.dtype == dtype
    assert recorder.dtypes and all(d == torch.float32 for _, d in recorder.dtypes), recorder.dtypes
    # The window attention forward and backward; the 20 word slots (above twice the head
    # size) by query blocks, each block's softmax made in the forward and again in the backward.
    blocks = -(-20 // query_block_rows(EMBED_DIM // HEADS, 20, 20, x.device))
    assert len(recorder.dtypes) == 2 + 2 * blocks
    assert torch.isfinite(out).all() and torch.isfinite(half_x.grad).all()
    assert all(torch.isfinite(p.grad).all() for p in attention.parameters())
    tolerance = 2e-2 if dtype == torch.float16 else 1e-1
    torch.testing.assert_close(
        out[~padding.t()].float(), expected[~padding.t()], atol=tolerance, rtol=tolerance
    )
