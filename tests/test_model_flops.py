"""Model FLOPs counted from the architecture (benchmarks/model_flops.py): hand counts of tiny
models, the parameter part against the built models' weights, and the whole count against
torch's own FLOP counter run on the real fairseq models."""

import importlib.util
import sys
from pathlib import Path

import pytest
import torch
from fairseq.data import Dictionary
from torch import nn
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils.flop_counter import FlopCounterMode

import fairseq_struct.plugin  # noqa: F401  (registers the archs)
from fairseq_struct.modules.whole_word_attention import attention_energy_count
from fairseq_struct.pieces.word_boundaries import word_start_lookup, word_structure
from fairseq_struct.testing.build_from_arch import build_model_from_arch, joined_dictionary

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
_spec = importlib.util.spec_from_file_location("model_flops", BENCHMARKS / "model_flops.py")
model_flops = importlib.util.module_from_spec(_spec)
sys.modules["model_flops"] = model_flops  # dataclasses look their module up by name
_spec.loader.exec_module(model_flops)

EncoderDims = model_flops.EncoderDims
Seq2SeqDims = model_flops.Seq2SeqDims

# Stock fairseq transformer at the tiny archs' sizes (its own defaults are base size).
STOCK_TINY = dict(
    encoder_layers=2,
    decoder_layers=2,
    encoder_embed_dim=128,
    encoder_ffn_embed_dim=512,
    encoder_attention_heads=4,
    decoder_attention_heads=4,
)
SEQ2SEQ_ARCHS = [
    ("tp_transformer_tiny", {}),
    ("transformer_relpos_tiny", {}),
    ("transformer", STOCK_TINY),
]


def linear_weights(model: nn.Module) -> int:
    """Weights of every nn.Linear module, a tied one counted once per module that applies it."""
    return sum(m.weight.numel() for m in model.modules() if isinstance(m, nn.Linear))


def piece_dictionary(words: int = 40, suffixes: int = 10) -> Dictionary:
    """SentencePiece-like pieces (word starts marked with ▁) and <mask>, as the MLM task has."""
    dictionary = Dictionary()
    for i in range(words):
        dictionary.add_symbol(f"\u2581w{i}")
    for i in range(suffixes):
        dictionary.add_symbol(f"s{i}")
    dictionary.add_symbol("<mask>")
    return dictionary


def measured_flops(run) -> int:
    """What torch's FLOP counter sees; SDPA through its math backend, whose matmuls it counts
    (it does not count the fused CPU kernel at all)."""
    with sdpa_kernel(SDPBackend.MATH), FlopCounterMode(display=False) as counter:
        run()
    return counter.get_total_flops()


def test_one_layer_encoder_counted_by_hand():
    # 1 layer, d 8, ffn 16, 2 heads, vocabulary 20; one row of 4 tokens, LM head on 3 of them.
    dims = EncoderDims(layers=1, embed_dim=8, ffn_dim=16, heads=2, vocab_size=20)
    flops = model_flops.encoder_forward_flops(
        dims, sentences=1, tokens_per_sentence=4, lm_head_tokens=3
    )
    projections = 2 * 4 * (4 * 8 * 8)  # q, k, v, out on 4 tokens
    ffn = 2 * 4 * (8 * 16 + 16 * 8)
    lm_head = 2 * 3 * (8 * 8 + 8 * 20)  # dense + output projection on the 3 masked tokens
    scores_and_sums = 2 * (2 * 4 * 4 * 8)  # QK^T and AV: 4 x 4 energies, head_dim x heads = 8
    assert flops.linear == projections + ffn + lm_head == 5440
    assert flops.attention == scores_and_sums == 512
    assert flops.relative_positions == 0
    training = model_flops.encoder_training_flops(dims, 1, 4, 3)
    assert training.total == 3 * 5952
    assert dims.matmul_params() == 4 * 64 + 2 * 128 + 64 + 160


def test_one_layer_tp_transformer_counted_by_hand():
    # 1+1 layers, d 4, ffn 8, 2 heads of 2 (inner 4), vocabulary 10, roles, Shaw k = 1 (3
    # buckets); one pair of 3 source and 2 target tokens.
    dims = Seq2SeqDims(
        encoder_layers=1,
        decoder_layers=1,
        embed_dim=4,
        ffn_dim=8,
        heads=2,
        head_dim=2,
        vocab_size=10,
        roles=True,
        max_relative_positions=1,
    )
    flops = model_flops.seq2seq_forward_flops(dims, sentences=1, src_len=3, tgt_len=2)
    attention_weights = 5 * 4 * 4  # q, k, v, out, role
    ffn = 2 * 4 * 8
    encoder_linear = 2 * 3 * (attention_weights + ffn)
    cross_keys_values = 2 * 3 * (2 * 4 * 4)  # on the 3 source tokens
    decoder_linear = 2 * 2 * (attention_weights + 3 * 4 * 4 + ffn)  # self, cross q/out/role, ffn
    output_projection = 2 * 2 * 4 * 10
    assert flops.linear == encoder_linear + cross_keys_values + decoder_linear + output_projection
    assert flops.linear == 1984
    encoder_attention = 2 * 2 * 3 * 3 * 4
    decoder_attention = 2 * 2 * 2 * 2 * 4 + 2 * 2 * 2 * 3 * 4  # causal self (full 2 x 2), cross
    assert flops.attention == encoder_attention + decoder_attention == 304
    # q·a^K and weights·a^V over 3 buckets, per self-attention query (3 source, 2 target).
    assert flops.relative_positions == 2 * 2 * (3 + 2) * 3 * 4 == 240


@pytest.mark.parametrize("arch,overrides", SEQ2SEQ_ARCHS)
def test_seq2seq_matmul_params_are_the_models_linear_weights(arch, overrides):
    model = build_model_from_arch(arch, joined_dictionary(64), seed=1, **overrides)
    dims = Seq2SeqDims.from_model(model)
    # The tied output projection is an nn.Linear sharing the embedding's weight in fairseq.
    assert dims.matmul_params() == linear_weights(model)
    # With as many source as target tokens every weight sees every token once: 2 N per token.
    flops = model_flops.seq2seq_forward_flops(dims, sentences=3, src_len=7, tgt_len=7)
    assert flops.linear == 2 * dims.matmul_params() * 3 * 7


def test_stock_transformer_has_no_role_or_relative_terms():
    model = build_model_from_arch("transformer", joined_dictionary(64), **STOCK_TINY)
    dims = Seq2SeqDims.from_model(model)
    assert (dims.roles, dims.max_relative_positions, dims.head_dim) == (False, 0, 32)
    tp = Seq2SeqDims.from_model(build_model_from_arch("tp_transformer_tiny", joined_dictionary(64)))
    assert (tp.roles, tp.max_relative_positions, tp.head_dim) == (True, 16, 32)


@pytest.mark.parametrize("arch,overrides", SEQ2SEQ_ARCHS)
def test_seq2seq_count_matches_torch_flop_counter_forward_and_backward(arch, overrides):
    model = build_model_from_arch(arch, joined_dictionary(64), seed=1, **overrides).eval()
    sentences, src_len, tgt_len = 3, 7, 5
    src_tokens = torch.randint(4, 64, (sentences, src_len))
    prev_output_tokens = torch.randint(4, 64, (sentences, tgt_len))
    src_lengths = torch.full((sentences,), src_len)
    dims = Seq2SeqDims.from_model(model)

    def forward_backward() -> None:
        model(src_tokens, src_lengths, prev_output_tokens)[0].sum().backward()

    forward = measured_flops(lambda: model(src_tokens, src_lengths, prev_output_tokens))
    assert forward == model_flops.seq2seq_forward_flops(dims, sentences, src_len, tgt_len).total
    training = model_flops.seq2seq_training_flops(dims, sentences, src_len, tgt_len)
    assert measured_flops(forward_backward) == training.total


def test_beam_search_count_decodes_every_hypothesis_one_token_per_step():
    dims = Seq2SeqDims.from_model(
        build_model_from_arch("tp_transformer_tiny", joined_dictionary(64))
    )
    teacher_forced = model_flops.seq2seq_forward_flops(dims, sentences=10, src_len=6, tgt_len=4)
    beam = model_flops.seq2seq_beam_search_flops(
        dims, sentences=2, src_len=6, decoder_steps=4, beam=5
    )
    # 2 sentences x 5 beams decode 4 tokens each: the decoder's per-token weights see 40 tokens,
    # as in a teacher-forced pass of 10 pairs, but the encoder and the cross-attention keys
    # and values run once per sentence (2 instead of 10).
    encoder_per_sentence = model_flops.seq2seq_forward_flops(dims, 1, 6, 0).linear
    assert beam.linear == teacher_forced.linear - 8 * encoder_per_sentence
    # Self-attention sees 1 + 2 + 3 + 4 cached keys instead of 4 x 4.
    inner, layers = dims.inner_dim, dims.decoder_layers
    self_keys_saved = layers * 2 * 2 * inner * 10 * (4 * 4 - (1 + 2 + 3 + 4))
    encoder_attention = 2 * 2 * inner * dims.encoder_layers * 6 * 6
    assert beam.attention == teacher_forced.attention - self_keys_saved - 8 * encoder_attention


@pytest.mark.parametrize("arch", ["roberta", "bert2d_tiny"])
def test_encoder_count_matches_model_and_torch_flop_counter(arch):
    dictionary = piece_dictionary()
    sizes = dict(encoder_layers=2, encoder_embed_dim=32, encoder_ffn_embed_dim=64)
    sizes.update(encoder_attention_heads=4, max_positions=64)
    model = build_model_from_arch(arch, dictionary, seed=1, **sizes).eval()
    dims = EncoderDims.from_model(model)
    # The LM head's output projection is the embedding matrix used by F.linear, no nn.Linear.
    assert dims.matmul_params() == linear_weights(model) + len(dictionary) * 32

    sentences, length = 3, 12
    tokens = torch.randint(dictionary.nspecial, len(dictionary) - 1, (sentences, length))
    masked = torch.zeros(sentences, length, dtype=torch.bool)
    masked[:, ::4] = True

    def forward() -> torch.Tensor:
        features, _ = model(tokens, features_only=True)
        return model.encoder.output_layer(features, masked_tokens=masked)

    counted = model_flops.encoder_forward_flops(dims, sentences, length, int(masked.sum()))
    assert measured_flops(forward) == counted.total
    assert measured_flops(lambda: forward().sum().backward()) == 3 * counted.total


def test_whole_word_attention_counts_eq9_energies_and_both_projection_sets():
    dictionary = piece_dictionary()
    sizes = dict(encoder_layers=1, encoder_embed_dim=32, encoder_ffn_embed_dim=64)
    sizes.update(encoder_attention_heads=4, max_positions=64, whole_word_attention=True)
    model = build_model_from_arch("bert2d_tiny", dictionary, seed=1, **sizes)
    dims = EncoderDims.from_model(model)
    assert (dims.whole_word_attention, dims.wwa_window, dims.wwa_relative_positions) == (
        True,
        5,
        16,
    )
    # Word and window attention have their own q/k/v/out.
    assert dims.matmul_params() == linear_weights(model) + len(dictionary) * 32

    generator = torch.Generator().manual_seed(0)
    sentences, length = 2, 20
    tokens = torch.randint(4, len(dictionary) - 1, (sentences, length), generator=generator)
    structure = word_structure(word_start_lookup(dictionary)[tokens], tokens, dictionary.eos())
    words = [int(row.max()) + 1 for row in structure.word_index]
    assert all(1 < m < length for m in words)
    flops = model_flops.encoder_forward_flops(dims, sentences, length, 0, words)
    # Each energy of a head is a head_dim dot product and weights a head_dim value: 4 x d FLOPs
    # per energy of all heads; each row counts its own m (eq. 9), whatever slots a batched
    # implementation pads the words to.
    energies = sum(attention_energy_count(m, length, dims.wwa_window) for m in words)
    assert flops.attention == 4 * 32 * energies
    projections = 2 * 4 * 32 * 32 * (sum(words) + sentences * length)
    ffn = 2 * 2 * 32 * 64 * sentences * length
    assert flops.linear == projections + ffn
    word_relative = 2 * 2 * sum(words) * 33 * 32  # 2k+1 = 33 buckets
    window_relative = 2 * 2 * sentences * length * 11 * 32  # one row per offset
    assert flops.relative_positions == word_relative + window_relative
    with pytest.raises(ValueError, match="words"):
        model_flops.encoder_forward_flops(dims, sentences, length, 0)


@pytest.mark.parametrize(
    "name,peak",
    [
        ("NVIDIA H100 80GB HBM3", 989e12),
        ("NVIDIA H100 PCIe", 756e12),
        ("NVIDIA H100 NVL", 835e12),
        ("NVIDIA H200", 989e12),
        ("NVIDIA GH200 480GB", 989e12),
        ("NVIDIA A100-SXM4-80GB", 312e12),
        ("NVIDIA A100 80GB PCIe", 312e12),
        ("NVIDIA L40S", 362e12),
        ("NVIDIA L40", 181e12),
        ("NVIDIA L4", 121e12),
        ("Tesla V100-SXM2-16GB", None),
    ],
)
def test_peak_table_matches_device_names(name, peak):
    assert model_flops.dense_bf16_peak_flops(name) == peak


def test_peak_override_and_mfu():
    assert model_flops.resolve_peak("NVIDIA H200", 500.0)[0] == 500e12
    assert model_flops.resolve_peak("NVIDIA H200", None)[0] == 989e12
    assert model_flops.resolve_peak("cpu", None)[0] is None
    # 4e14 model FLOPs per step in 1 s on a 1e15 FLOP/s device: 40%.
    assert model_flops.mfu(4e14, 1.0, 1e15) == pytest.approx(0.4)
    assert model_flops.mfu(4e14, 1.0, None) is None
