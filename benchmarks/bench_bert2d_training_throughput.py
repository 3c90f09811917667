"""Masked-LM training throughput of BERT2D vs fairseq's stock RoBERTa of equal size (design.md §6).

`.venv/bin/python benchmarks/bench_bert2d_training_throughput.py` prints one JSON line: tokens/s of
`bert2d_base` (a) and `roberta_base` (b) and `ratio` (a / b); its batch and step also serve
bench_bert_elmo_training_throughput.py. Details and figures:
benchmarks/README.md#bench_bert2d_training_throughputpy.
"""

import argparse
import json
import logging
import os
import statistics
import sys
from dataclasses import dataclass
from typing import Callable, Dict, List, Sequence, Tuple

import numpy as np
import torch
import torch.nn.functional as F
from fairseq.data import Dictionary
from interleaved_timing import (
    add_repetition_arguments,
    cpu_time_ratio,
    run_in_turns,
    set_up,
    warm_up,
)
from torch import Tensor, nn

import fairseq_struct.plugin  # noqa: F401  (registers the models)
from fairseq_struct.datasets.masking import MaskingOptions, mask_tokens
from fairseq_struct.pieces.markers import WORD_START
from fairseq_struct.pieces.word_boundaries import special_symbol_lookup, word_start_lookup
from fairseq_struct.testing.build_from_arch import build_model_from_arch

logger = logging.getLogger("bench_bert2d_training_throughput")

TARGET_RATIO = 0.95
MASK_SYMBOL = "<mask>"

CONSONANTS = "bcçdfgğhjklmnprsştvyz"
VOWELS = "aeıioöuü"
# Frequent Turkish suffix forms; more continuation pieces are made up from letters.
SUFFIXES = (
    "lar ler da de ta te dan den tan ten ın in un ün ı i u ü ya ye yı yi na ne nın nin mış miş "
    "acak ecek lık lik luk lük cı ci sı si yor dır dir la le sız siz lı li ken ki dı di tı ti "
    "mak mek ma me ım im um üm ız iz ca ce"
).split()


@dataclass
class TurkishLikeText:
    """A synthetic corpus: the same text as pieces and as words, with both dictionaries."""

    piece_dictionary: Dictionary
    word_dictionary: Dictionary  # words in frequency order, as fairseq-preprocess sorts them
    word_pieces: List[List[int]]  # per word rank: its piece ids
    word_rows: List[List[int]]  # per sentence: word ranks, whose pieces fill the piece row
    pieces_per_word_in_text: float
    words_per_s_note: str = "words of text (whitespace words, <s> and </s> excluded)"


def _syllable(rng: np.random.Generator) -> str:
    onset = CONSONANTS[rng.integers(len(CONSONANTS))] if rng.random() < 0.8 else ""
    coda = CONSONANTS[rng.integers(len(CONSONANTS))] if rng.random() < 0.35 else ""
    return onset + VOWELS[rng.integers(len(VOWELS))] + coda


def _zipf_probabilities(count: int, exponent: float = 1.0) -> np.ndarray:
    weights = 1.0 / np.arange(1, count + 1, dtype=np.float64) ** exponent
    return weights / weights.sum()


def turkish_like_text(
    piece_vocab_size: int,
    word_vocab_size: int,
    sentences: int,
    pieces_per_row: int,
    seed: int,
    num_suffix_pieces: int = 2000,
    max_word_chars: int = 15,
) -> TurkishLikeText:
    """Words of 2..max_word_chars characters = a stem piece + Poisson(0.45) suffix pieces.

    `piece_vocab_size` is the size of the piece dictionary (fairseq's 4 specials and <mask>
    included); each row holds `pieces_per_row` pieces of whole words (row length + 2 with <s>
    and </s>), drawn from the word vocabulary with Zipf's law.
    """
    rng = np.random.default_rng(seed)
    num_suffix_pieces = min(num_suffix_pieces, piece_vocab_size // 4)
    suffixes = list(dict.fromkeys(SUFFIXES))[:num_suffix_pieces]
    seen = set(suffixes)
    while len(suffixes) < num_suffix_pieces:
        piece = _syllable(rng)[: 1 + rng.integers(4)]
        if piece not in seen:
            seen.add(piece)
            suffixes.append(piece)
    piece_dictionary = Dictionary()
    num_stems = piece_vocab_size - len(piece_dictionary) - num_suffix_pieces - 1  # - <mask>
    stems: List[str] = []
    seen = set()
    while len(stems) < num_stems:
        stem = "".join(_syllable(rng) for _ in range(1 + rng.integers(3)))
        if 2 <= len(stem) <= max_word_chars - 2 and stem not in seen:
            seen.add(stem)
            stems.append(stem)
    stem_ids = [piece_dictionary.add_symbol(WORD_START + stem) for stem in stems]
    suffix_ids = [piece_dictionary.add_symbol(suffix) for suffix in suffixes]
    piece_dictionary.add_symbol(MASK_SYMBOL)

    # Frequent stems and suffixes recur in many words, as Turkish stems take many suffixes.
    stem_probabilities = _zipf_probabilities(len(stems))
    suffix_probabilities = _zipf_probabilities(len(suffixes))
    word_dictionary = Dictionary()
    word_pieces: List[List[int]] = []
    seen = set()
    while len(word_pieces) < word_vocab_size:
        # Drawn in blocks: rng.choice with p costs O(len(p)) per call.
        block = word_vocab_size
        stem_draws = rng.choice(len(stems), block, p=stem_probabilities)
        suffix_counts = rng.poisson(0.45, block)
        suffix_draws = iter(rng.choice(len(suffixes), suffix_counts.sum(), p=suffix_probabilities))
        for stem, count in zip(stem_draws.tolist(), suffix_counts.tolist()):
            chosen = [int(next(suffix_draws)) for _ in range(count)]
            word = stems[stem] + "".join(suffixes[s] for s in chosen)
            if len(word) > max_word_chars or word in seen:
                continue
            seen.add(word)
            word_dictionary.add_symbol(word)
            word_pieces.append([stem_ids[stem]] + [suffix_ids[s] for s in chosen])
            if len(word_pieces) == word_vocab_size:
                break
    word_dictionary.add_symbol(MASK_SYMBOL)

    # Word ranks of the text, Zipfian; a word that would overflow the row is drawn again.
    word_probabilities = _zipf_probabilities(word_vocab_size)
    draws = iter(rng.choice(word_vocab_size, 64 * sentences * pieces_per_row, p=word_probabilities))
    word_rows: List[List[int]] = []
    for _ in range(sentences):
        row: List[int] = []
        left = pieces_per_row
        while left > 0:
            word = int(next(draws))
            if len(word_pieces[word]) <= left:
                row.append(word)
                left -= len(word_pieces[word])
        word_rows.append(row)
    num_words = sum(len(row) for row in word_rows)
    return TurkishLikeText(
        piece_dictionary=piece_dictionary,
        word_dictionary=word_dictionary,
        word_pieces=word_pieces,
        word_rows=word_rows,
        pieces_per_word_in_text=sentences * pieces_per_row / num_words,
    )


def piece_rows(text: TurkishLikeText) -> Tensor:
    """(sentences, pieces_per_row + 2) piece ids: <s> pieces </s> (no padding)."""
    dictionary = text.piece_dictionary
    rows = [
        [dictionary.bos()]
        + [piece for word in row for piece in text.word_pieces[word]]
        + [dictionary.eos()]
        for row in text.word_rows
    ]
    return torch.tensor(rows, dtype=torch.long)


def replacement_ids(dictionary: Dictionary) -> np.ndarray:
    """The non-special symbols: what a random replacement draws from."""
    return np.flatnonzero(~special_symbol_lookup(dictionary).numpy())


def mask_batch(
    tokens: Tensor, dictionary: Dictionary, word_starts: Tensor, seed: int
) -> Tuple[Tensor, Tensor]:
    """(source, target) of a right-padded batch, masked row by row as the task does."""
    rng = np.random.default_rng(seed)
    special = special_symbol_lookup(dictionary).numpy()
    replacements = replacement_ids(dictionary)
    sources, targets = [], []
    for row, starts in zip(tokens.numpy(), word_starts.numpy()):
        source, target = mask_tokens(
            row,
            starts,
            special[row],
            MaskingOptions(strategy="whole_word"),
            dictionary.index(MASK_SYMBOL),
            dictionary.pad(),
            replacements,
            rng,
        )
        sources.append(torch.from_numpy(source))
        targets.append(torch.from_numpy(target))
    return torch.stack(sources), torch.stack(targets)


def size_overrides(args: argparse.Namespace) -> Dict[str, int]:
    """Encoder sizes as command-line overrides; none given = the base arch's own."""
    overrides: Dict[str, int] = {}
    if args.layers is not None:
        overrides["encoder_layers"] = args.layers
    if args.embed_dim is not None:
        overrides["encoder_embed_dim"] = args.embed_dim
        overrides["encoder_ffn_embed_dim"] = args.ffn_dim or 4 * args.embed_dim
        overrides["encoder_attention_heads"] = args.heads or max(1, args.embed_dim // 64)
    if args.ffn_dim is not None:
        overrides["encoder_ffn_embed_dim"] = args.ffn_dim
    if args.heads is not None:
        overrides["encoder_attention_heads"] = args.heads
    return overrides


def model_dimensions(model: nn.Module) -> Dict[str, int]:
    encoder = model.encoder.sentence_encoder
    layer = encoder.layers[0]
    return {
        "layers": len(encoder.layers),
        "embed_dim": layer.embed_dim,
        "ffn_dim": layer.fc1.out_features,
        "heads": layer.self_attn.num_heads,
    }


def build_optimizer(model: nn.Module, lr: float) -> torch.optim.Optimizer:
    # RoBERTa's pretraining recipe: Adam with decoupled weight decay 0.01, betas (0.9, 0.98).
    return torch.optim.AdamW(
        model.parameters(), lr=lr, betas=(0.9, 0.98), eps=1e-6, weight_decay=0.01
    )


def make_training_step(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    net_input: Dict[str, Tensor],
    target: Tensor,
    padding_idx: int,
) -> Callable[[], None]:
    """The masked_lm_struct criterion's MLM loss, then backward and an optimizer step."""
    # Flat indices of the masked tokens, as the task's collater gives them to the criterion.
    positions = target.ne(padding_idx).view(-1).nonzero().squeeze(1)
    targets = target.reshape(-1).index_select(0, positions)
    output_targets = getattr(model.encoder, "output_targets", None)
    if output_targets is not None:  # bert_elmo: output over the N most frequent words
        targets = output_targets(targets)

    def step() -> None:
        features, _ = model(**net_input, features_only=True)
        masked_features = features.reshape(-1, features.size(-1)).index_select(0, positions)
        logits = model.encoder.output_layer(masked_features)
        loss = F.cross_entropy(logits.float(), targets, reduction="sum")
        optimizer.zero_grad(set_to_none=True)
        # fairseq divides the gradient by sample_size, the number of masked tokens.
        (loss / max(1, targets.numel())).backward()
        optimizer.step()

    return step


@dataclass
class Side:
    label: str
    arch: str
    model: nn.Module
    step: Callable[[], None]
    units_per_step: Dict[str, int]  # e.g. {"tokens": ..., "words": ...}
    seconds: List[float]
    cpu_seconds: List[float]
    masked_tokens: int = 0
    vocab_size: int = 0

    @property
    def params(self) -> int:
        return sum(p.numel() for p in self.model.parameters())

    def rate(self, unit: str) -> float:
        return self.units_per_step[unit] / statistics.median(self.seconds)


def build_side(
    label: str,
    arch: str,
    dictionary: Dictionary,
    overrides: Dict[str, object],
    net_input: Dict[str, Tensor],
    target: Tensor,
    units: Dict[str, int],
    args: argparse.Namespace,
    device: torch.device,
) -> Side:
    """One side of the comparison: `arch` built with `overrides` (--seed), on `device` in train
    mode, and its training step (AdamW, --lr) on the batch."""
    model = build_model_from_arch(arch, dictionary, seed=args.seed, **overrides)
    model = model.to(device).train()
    step = make_training_step(
        model, build_optimizer(model, args.lr), net_input, target, dictionary.pad()
    )
    masked = int(target.ne(dictionary.pad()).sum())
    side = Side(label, arch, model, step, units, [], [], masked, len(dictionary))
    logger.info("%s: %s, %d parameters, %s", label, arch, side.params, model_dimensions(model))
    return side


def run_interleaved(
    sides: Sequence[Side], warmup_steps: int, steps: int, repeats: int, device: torch.device
) -> None:
    by_label = {side.label: side for side in sides}

    def record(label: str, seconds: float, cpu_seconds: float) -> str:
        side = by_label[label]
        side.seconds.append(seconds / steps)
        side.cpu_seconds.append(cpu_seconds / steps)
        return f"{side.seconds[-1]:.2f} s/step"

    side_steps = {side.label: side.step for side in sides}
    warm_up(side_steps, warmup_steps, device, logger)
    run_in_turns(side_steps, steps, repeats, device, record, logger)


def load_average() -> List[float]:
    return [round(value, 2) for value in os.getloadavg()]


def add_common_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu", help="where both run")
    parser.add_argument("--layers", type=int, help="encoder layers (default: the arch's, 12)")
    parser.add_argument("--embed-dim", type=int, help="d_model (default: the arch's, 768)")
    parser.add_argument("--ffn-dim", type=int, help="FFN size (default: 4 x d_model)")
    parser.add_argument("--heads", type=int, help="attention heads (default: d_model / 64)")
    parser.add_argument("--piece-vocab-size", type=int, default=32000, help="piece dictionary")
    parser.add_argument("--word-vocab-size", type=int, default=30000, help="distinct words")
    parser.add_argument("--batch-size", type=int, default=8, help="sentences per batch")
    parser.add_argument("--lr", type=float, default=1e-4, help="AdamW learning rate")
    parser.add_argument("--seed", type=int, default=1, help="for the weights, text and masks")
    add_repetition_arguments(parser, warmup_steps=1, steps=1, repeats=7)


def parse_args(argv: List[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_common_args(parser)
    parser.add_argument("--arch-a", default="bert2d_base", help="the measured model (bert2d)")
    parser.add_argument("--arch-b", default="roberta_base", help="the reference (roberta)")
    parser.add_argument(
        "--seq-len", type=int, default=128, help="tokens per sentence, <s> and </s> included"
    )
    parser.add_argument(
        "--max-intermediate-subwords", type=int, default=3, help="BERT2D's M (side a)"
    )
    return parser.parse_args(argv)


def main(argv: List[str]) -> int:
    args = parse_args(argv)
    device = set_up(args)

    text = turkish_like_text(
        args.piece_vocab_size, args.word_vocab_size, args.batch_size, args.seq_len - 2, args.seed
    )
    dictionary = text.piece_dictionary
    tokens = piece_rows(text)
    word_starts = word_start_lookup(dictionary)[tokens]
    source, target = mask_batch(tokens, dictionary, word_starts, args.seed)
    logger.info(
        "batch %s, %.3f pieces per word, %d masked tokens",
        tuple(tokens.shape),
        text.pieces_per_word_in_text,
        int(target.ne(dictionary.pad()).sum()),
    )
    source, target, word_starts = source.to(device), target.to(device), word_starts.to(device)
    units = {"tokens": int(tokens.ne(dictionary.pad()).sum())}

    overrides = size_overrides(args)
    sides = []
    for label, arch in (("a", args.arch_a), ("b", args.arch_b)):
        arch_overrides = dict(overrides)
        net_input: Dict[str, Tensor] = {"src_tokens": source}
        if arch.startswith("bert2d"):
            arch_overrides["max_intermediate_subwords"] = args.max_intermediate_subwords
            net_input["word_starts"] = word_starts
        else:  # fairseq's roberta asks a task for its positions without this; bert2d_base: 512
            arch_overrides["max_positions"] = 512
        sides.append(
            build_side(
                label, arch, dictionary, arch_overrides, net_input, target, units, args, device
            )
        )
    a, b = sides
    run_interleaved(sides, args.warmup_steps, args.steps, args.repeats, device)

    ratio = a.rate("tokens") / b.rate("tokens")
    result = {
        "benchmark": "bert2d_training_throughput",
        "device": str(device),
        "torch_threads": torch.get_num_threads(),
        "arch_a": a.arch,
        "arch_b": b.arch,
        "dimensions": model_dimensions(a.model),
        "bert2d_options": {
            "position_embedding": a.model.args.position_embedding,
            "max_intermediate_subwords": a.model.args.max_intermediate_subwords,
            "subword_id_strategy": a.model.args.subword_id_strategy,
            "num_segments": a.model.args.num_segments,
        },
        "params_a": a.params,
        "params_b": b.params,
        "batch_shape": {"sentences": args.batch_size, "tokens_per_sentence": args.seq_len},
        "vocab_size": len(dictionary),
        "pieces_per_word": round(text.pieces_per_word_in_text, 3),
        "masked_tokens": int(target.ne(dictionary.pad()).sum()),
        "masking": "whole_word 15%, 80/10/10",
        "optimizer": "AdamW(lr, betas=(0.9, 0.98), eps=1e-6, weight_decay=0.01)",
        "tokens": "input tokens incl. <s> and </s> (fairseq wps)",
        "warmup_steps": args.warmup_steps,
        "steps_per_repeat": args.steps,
        "repeats": args.repeats,
        "seed": args.seed,
        "seconds_per_step_a": round(statistics.median(a.seconds), 4),
        "seconds_per_step_b": round(statistics.median(b.seconds), 4),
        "tokens_per_s_a": round(a.rate("tokens"), 2),
        "tokens_per_s_b": round(b.rate("tokens"), 2),
        "ratio": round(ratio, 4),
        "ratio_cpu_time": cpu_time_ratio(a.cpu_seconds, b.cpu_seconds, device),
        "target": TARGET_RATIO,
        "meets_target": ratio >= TARGET_RATIO,
        "load_average": load_average(),
    }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
