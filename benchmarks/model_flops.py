"""Model FLOPs of the benchmarked architectures, counted from their dimensions, and the dense
bf16 peak of the GPU they run on: the two halves of model FLOPs utilisation (MFU).

Model FLOPs are what the architecture needs, not what an implementation executes (PaLM,
appendix B): an (n x k) by (k x m) product is 2nkm FLOPs; training is 3 x forward, without
recomputation or the optimizer. Counted: every weight matrix on the rows it sees (`linear`, 6 ·
`matmul_params` · tokens in training: the tied output projection included, embedding gathers
not); the energies QK^T and sums AV, every causal energy included as dense kernels compute them
(`attention`); Shaw's q · a^K and bucketed a^V terms (`relative_positions`). Not counted: biases,
norms, softmax, activations, the TP-Transformer's role binding, WWA's word averaging. A masked-LM
head counts on the masked tokens only, as fairseq's criteria apply it; Whole-Word Attention
(design.md §4.4) computes m² + (2w+1)·n energies per head, each row with its own m (Zöllner et
al., eq. 9); beam search counts the encoder and cross-attention's k/v once per sentence.
`.venv/bin/python benchmarks/model_flops.py` prints training FLOPs per token of the base archs.
"""

import argparse
import json
import re
import sys
from argparse import Namespace
from dataclasses import dataclass
from typing import Any, List, Optional, Sequence, Tuple

# Dense (no 2:4 sparsity) bf16 tensor-core peaks from the vendors' datasheets, in FLOP/s, matched
# against torch.cuda.get_device_name() lower-cased, first match wins (so the specific names come
# before the family names they contain). Datasheets quote the sparse figure first: dense is half.
DENSE_BF16_PEAK_FLOPS: List[Tuple[str, float]] = [
    (r"\bh100\b.*\bpcie\b", 756e12),
    (r"\bh100\b.*\bnvl\b", 835e12),
    (r"\bh100\b", 989e12),  # SXM5 (torch names it "NVIDIA H100 80GB HBM3")
    (r"\bh800\b.*\bpcie\b", 756e12),
    (r"\bh800\b", 989e12),
    (r"\bh200\b.*\bnvl\b", 835e12),
    (r"\bg?h200\b", 989e12),  # H200 SXM and GH200: the H100 SXM's tensor cores
    (r"\bb200\b", 2250e12),
    (r"\ba100\b", 312e12),  # SXM4 and PCIe, 40 and 80 GB alike
    (r"\ba800\b", 312e12),
    (r"\bl40s\b", 362e12),
    (r"\bl40\b", 181e12),
    (r"\bl4\b", 121e12),
    (r"\ba40\b", 150e12),
    (r"\ba10\b", 125e12),
    (r"\bmi300x\b", 1307e12),
    (r"\bmi250x\b", 383e12),
]


def dense_bf16_peak_flops(device_name: str) -> Optional[float]:
    """The table's peak for a device name, or None for a device it does not know."""
    name = device_name.lower()
    for pattern, flops in DENSE_BF16_PEAK_FLOPS:
        if re.search(pattern, name):
            return flops
    return None


def add_peak_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--peak-tflops",
        type=float,
        help="dense bf16 peak of the device in TFLOP/s, instead of the table's figure for its "
        "name (e.g. 989 for an H100 SXM); needed for MFU on a device the table does not know",
    )


def resolve_peak(device_name: str, peak_tflops: Optional[float]) -> Tuple[Optional[float], str]:
    """(peak FLOP/s or None, where the figure comes from), the override first."""
    if peak_tflops is not None:
        return peak_tflops * 1e12, "--peak-tflops"
    flops = dense_bf16_peak_flops(device_name)
    if flops is None:
        return None, f"unknown device {device_name!r}: give --peak-tflops for MFU"
    return flops, "dense bf16 datasheet table (model_flops.DENSE_BF16_PEAK_FLOPS)"


@dataclass(frozen=True)
class FlopCount:
    """FLOPs of one pass over a batch, by kind of term (see the module docstring)."""

    linear: int = 0
    attention: int = 0
    relative_positions: int = 0

    @property
    def total(self) -> int:
        return self.linear + self.attention + self.relative_positions

    def __add__(self, other: "FlopCount") -> "FlopCount":
        return FlopCount(
            self.linear + other.linear,
            self.attention + other.attention,
            self.relative_positions + other.relative_positions,
        )

    def __mul__(self, factor: int) -> "FlopCount":
        return FlopCount(
            self.linear * factor, self.attention * factor, self.relative_positions * factor
        )

    __rmul__ = __mul__

    def as_dict(self) -> dict:
        return {
            "linear": self.linear,
            "attention": self.attention,
            "relative_positions": self.relative_positions,
            "total": self.total,
        }


TRAINING_FACTOR = 3  # forward + backward (2 x forward), no recomputation


def _attention_scores_and_sums(queries: int, keys: int, inner_dim: int) -> int:
    """QK^T and AV over all heads: 2 products of queries x keys x head_dim per head."""
    return 2 * 2 * queries * keys * inner_dim


def _relative_position_terms(queries: int, max_relative: int, inner_dim: int) -> int:
    """Shaw et al.: q · a^K for the 2k+1 buckets and (bucketed weights) · a^V, per head."""
    if max_relative <= 0:
        return 0
    return 2 * 2 * queries * (2 * max_relative + 1) * inner_dim


@dataclass(frozen=True)
class Seq2SeqDims:
    """What the FLOPs of a fairseq encoder-decoder Transformer depend on (tp_transformer,
    transformer_relpos, stock transformer): encoder and decoder of the same width."""

    encoder_layers: int
    decoder_layers: int
    embed_dim: int
    ffn_dim: int
    heads: int
    head_dim: int
    vocab_size: int
    roles: bool = False  # TP-Transformer role projection in every attention
    max_relative_positions: int = 0  # Shaw k in self-attention (0: none)

    @property
    def inner_dim(self) -> int:
        return self.heads * self.head_dim

    @property
    def attention_projections(self) -> int:
        """Weights of one attention's projections: q, k, v, out (and the role)."""
        return (4 + int(self.roles)) * self.embed_dim * self.inner_dim

    @property
    def ffn_params(self) -> int:
        return 2 * self.embed_dim * self.ffn_dim

    def matmul_params(self) -> int:
        """N_matmul: weights of all matrix products, the (tied) output projection included."""
        encoder_layer = self.attention_projections + self.ffn_params
        decoder_layer = 2 * self.attention_projections + self.ffn_params
        output_projection = self.embed_dim * self.vocab_size
        return (
            self.encoder_layers * encoder_layer
            + self.decoder_layers * decoder_layer
            + output_projection
        )

    @classmethod
    def from_args(cls, args: Namespace, vocab_size: int, roles: bool) -> "Seq2SeqDims":
        """From a model's arch namespace (`model.args` after the arch function ran)."""
        decoder = (args.decoder_embed_dim, args.decoder_ffn_embed_dim, args.decoder_attention_heads)
        encoder = (args.encoder_embed_dim, args.encoder_ffn_embed_dim, args.encoder_attention_heads)
        if decoder != encoder:
            raise ValueError(
                f"{__file__}: decoder (embed, ffn, heads) {decoder} differ from the encoder's "
                f"{encoder}; only equal widths are counted"
            )
        embed_dim, ffn_dim, heads = encoder
        head_dim = getattr(args, "attention_head_dim", None) or embed_dim // heads
        return cls(
            encoder_layers=args.encoder_layers,
            decoder_layers=args.decoder_layers,
            embed_dim=embed_dim,
            ffn_dim=ffn_dim,
            heads=heads,
            head_dim=head_dim,
            vocab_size=vocab_size,
            roles=roles,
            max_relative_positions=getattr(args, "max_relative_positions", 0) or 0,
        )

    @classmethod
    def from_model(cls, model: Any) -> "Seq2SeqDims":
        """From a built fairseq TransformerModel (or subclass); roles from the model class."""
        return cls.from_args(
            model.args, len(model.decoder.dictionary), bool(getattr(model, "uses_roles", False))
        )


def _encoder_stack(dims: Seq2SeqDims, sentences: int, src_len: int) -> FlopCount:
    tokens = sentences * src_len
    return dims.encoder_layers * FlopCount(
        linear=2 * tokens * (dims.attention_projections + dims.ffn_params),
        attention=sentences * _attention_scores_and_sums(src_len, src_len, dims.inner_dim),
        relative_positions=_relative_position_terms(
            tokens, dims.max_relative_positions, dims.inner_dim
        ),
    )


def _cross_attention_keys_values(dims: Seq2SeqDims, source_tokens: int) -> FlopCount:
    """The k and v projections of the encoder output, once per source token and layer."""
    return FlopCount(
        linear=dims.decoder_layers * 2 * source_tokens * 2 * dims.embed_dim * dims.inner_dim
    )


def _decoder_queries(
    dims: Seq2SeqDims, rows: int, queries: int, self_keys: int, src_len: int
) -> FlopCount:
    """Everything of the decoder that runs per target query (all but cross-attention k/v):
    `rows` sequences of `queries` queries each, seeing `self_keys` target keys."""
    tokens = rows * queries
    # Self-attention: q, k, v, out (+ role); cross-attention: q, out (+ role); FFN.
    per_token_weights = (
        dims.attention_projections
        + (2 + int(dims.roles)) * dims.embed_dim * dims.inner_dim
        + dims.ffn_params
    )
    layers = dims.decoder_layers * FlopCount(
        linear=2 * tokens * per_token_weights,
        attention=rows
        * (
            _attention_scores_and_sums(queries, self_keys, dims.inner_dim)
            + _attention_scores_and_sums(queries, src_len, dims.inner_dim)
        ),
        relative_positions=_relative_position_terms(
            tokens, dims.max_relative_positions, dims.inner_dim
        ),
    )
    return layers + FlopCount(linear=2 * tokens * dims.embed_dim * dims.vocab_size)


def seq2seq_forward_flops(
    dims: Seq2SeqDims, sentences: int, src_len: int, tgt_len: int
) -> FlopCount:
    """Teacher-forced forward of `sentences` pairs of src_len source and tgt_len target tokens,
    the output projection on every target token."""
    return (
        _encoder_stack(dims, sentences, src_len)
        + _cross_attention_keys_values(dims, sentences * src_len)
        + _decoder_queries(dims, sentences, tgt_len, tgt_len, src_len)
    )


def seq2seq_training_flops(
    dims: Seq2SeqDims, sentences: int, src_len: int, tgt_len: int
) -> FlopCount:
    return TRAINING_FACTOR * seq2seq_forward_flops(dims, sentences, src_len, tgt_len)


def seq2seq_beam_search_flops(
    dims: Seq2SeqDims, sentences: int, src_len: int, decoder_steps: int, beam: int
) -> FlopCount:
    """Incremental beam search: the encoder once per sentence, cross-attention k/v once per
    sentence (what a decoder caching them per sentence needs), and at decoder step i (0-based)
    one query per hypothesis (sentences x beam rows, as fairseq's SequenceGenerator keeps them)
    over i + 1 cached self-attention keys, the output projection included."""
    flops = _encoder_stack(dims, sentences, src_len) + _cross_attention_keys_values(
        dims, sentences * src_len
    )
    for step in range(decoder_steps):
        flops = flops + _decoder_queries(dims, sentences * beam, 1, step + 1, src_len)
    return flops


@dataclass(frozen=True)
class EncoderDims:
    """What the FLOPs of a masked-LM Transformer encoder depend on (roberta, bert2d, their
    Shaw and Whole-Word Attention variants), LM head included."""

    layers: int
    embed_dim: int
    ffn_dim: int
    heads: int
    vocab_size: int
    relative_positions: int = 0  # Shaw k in full self-attention (0: none)
    whole_word_attention: bool = False
    wwa_window: int = 5
    # Word-level Shaw clipping of Whole-Word Attention (struct_encoder: --relative-positions or 16).
    wwa_relative_positions: int = 16

    @property
    def attention_projections(self) -> int:
        """Weights of a layer's attention projections; WWA has two sets (word and window)."""
        sets = 2 if self.whole_word_attention else 1
        return sets * 4 * self.embed_dim * self.embed_dim

    @property
    def ffn_params(self) -> int:
        return 2 * self.embed_dim * self.ffn_dim

    @property
    def lm_head_params(self) -> int:
        """RoBERTa's LM head: the dense layer and the (tied) output projection."""
        return self.embed_dim * self.embed_dim + self.embed_dim * self.vocab_size

    def matmul_params(self) -> int:
        return self.layers * (self.attention_projections + self.ffn_params) + self.lm_head_params

    @classmethod
    def from_args(cls, args: Namespace, vocab_size: int) -> "EncoderDims":
        """From a masked-LM model's arch namespace (fairseq's roberta or the struct encoders)."""
        relative = getattr(args, "relative_positions", 0) or 0
        return cls(
            layers=args.encoder_layers,
            embed_dim=args.encoder_embed_dim,
            ffn_dim=args.encoder_ffn_embed_dim,
            heads=args.encoder_attention_heads,
            vocab_size=vocab_size,
            relative_positions=relative,
            whole_word_attention=bool(getattr(args, "whole_word_attention", False)),
            wwa_window=getattr(args, "wwa_window", 5) or 5,
            wwa_relative_positions=relative or 16,
        )

    @classmethod
    def from_model(cls, model: Any) -> "EncoderDims":
        return cls.from_args(model.args, len(model.encoder.dictionary))


def self_attention_layer_flops(dims: EncoderDims, tokens: int, words: Optional[int]) -> FlopCount:
    """Forward of one encoder self-attention (projections included, FFN excluded) over one
    sequence of `tokens` tokens, `words` of them words (needed for Whole-Word Attention)."""
    d = dims.embed_dim
    if not dims.whole_word_attention:
        return FlopCount(
            linear=2 * tokens * 4 * d * d,
            attention=_attention_scores_and_sums(tokens, tokens, d),
            relative_positions=_relative_position_terms(tokens, dims.relative_positions, d),
        )
    if words is None:
        raise ValueError("Whole-Word Attention FLOPs need the number of words of the sequence")
    span = 2 * dims.wwa_window + 1
    return FlopCount(
        # The word attention projects the m word vectors, the window attention the n tokens.
        linear=2 * (words + tokens) * 4 * d * d,
        # m² + (2w+1)·n energies per head (eq. 9), each also weighting a value.
        attention=2 * 2 * (words * words + span * tokens) * d,
        # Word level: Shaw terms over 2k+1 buckets; window: one table row per offset.
        relative_positions=_relative_position_terms(words, dims.wwa_relative_positions, d)
        + 2 * 2 * tokens * span * d,
    )


def encoder_forward_flops(
    dims: EncoderDims,
    sentences: int,
    tokens_per_sentence: int,
    lm_head_tokens: int,
    words_per_sentence: Sequence[int] = (),
) -> FlopCount:
    """Forward of `sentences` rows of `tokens_per_sentence` tokens, the LM head on
    `lm_head_tokens` tokens (the masked ones); words per row are needed for Whole-Word
    Attention only."""
    if dims.whole_word_attention and len(words_per_sentence) != sentences:
        raise ValueError(f"Whole-Word Attention FLOPs need the words of all {sentences} rows")
    tokens = sentences * tokens_per_sentence
    rows = words_per_sentence if dims.whole_word_attention else [None] * sentences
    attention = FlopCount()
    for words in rows:
        attention = attention + self_attention_layer_flops(dims, tokens_per_sentence, words)
    layers = dims.layers * (attention + FlopCount(linear=2 * tokens * dims.ffn_params))
    return layers + FlopCount(linear=2 * lm_head_tokens * dims.lm_head_params)


def encoder_training_flops(
    dims: EncoderDims,
    sentences: int,
    tokens_per_sentence: int,
    lm_head_tokens: int,
    words_per_sentence: Sequence[int] = (),
) -> FlopCount:
    return TRAINING_FACTOR * encoder_forward_flops(
        dims, sentences, tokens_per_sentence, lm_head_tokens, words_per_sentence
    )


def mfu(
    flops_per_step: float, seconds_per_step: float, peak_flops: Optional[float]
) -> Optional[float]:
    """Model FLOPs utilisation: achieved model FLOP/s over the device's dense bf16 peak."""
    if peak_flops is None or seconds_per_step <= 0:
        return None
    return flops_per_step / seconds_per_step / peak_flops


def main(argv: List[str]) -> int:
    """Training FLOPs per token of the benchmarked base archs, and this machine's peak."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--vocab-size", type=int, default=32000, help="joined dictionary size")
    parser.add_argument("--sentence-len", type=int, default=30, help="source = target tokens")
    parser.add_argument("--seq-len", type=int, default=512, help="masked-LM tokens per row")
    parser.add_argument("--mask-rate", type=float, default=0.15, help="LM-head share of tokens")
    add_peak_argument(parser)
    args = parser.parse_args(argv)

    import torch  # noqa: E402  (only the command line needs torch and fairseq)

    import fairseq_struct.plugin  # noqa: F401  (registers the archs)
    from fairseq_struct.testing.build_from_arch import build_model_from_arch, joined_dictionary

    dictionary = joined_dictionary(args.vocab_size)
    figures = {}
    for arch in ("tp_transformer_base", "transformer_relpos_base", "transformer"):
        dims = Seq2SeqDims.from_model(build_model_from_arch(arch, dictionary))
        flops = seq2seq_training_flops(dims, 1, args.sentence_len, args.sentence_len)
        figures[arch] = {
            "matmul_params": dims.matmul_params(),
            "training_flops_per_target_token": flops.total / args.sentence_len,
        }
    for arch in ("roberta_base",):
        model = build_model_from_arch(arch, dictionary, max_positions=args.seq_len)
        dims = EncoderDims.from_model(model)
        masked = round(args.mask_rate * args.seq_len)
        flops = encoder_training_flops(dims, 1, args.seq_len, masked)
        figures[arch] = {
            "matmul_params": dims.matmul_params(),
            "training_flops_per_token": flops.total / args.seq_len,
        }
    name = torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu"
    peak, source = resolve_peak(name, args.peak_tflops)
    print(json.dumps({"device_name": name, "peak_flops": peak, "peak_source": source, **figures}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
