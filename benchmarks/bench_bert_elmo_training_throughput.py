"""Masked-LM training throughput of BERT-ELMo vs the same BERT on the same text (design.md §6).

`.venv/bin/python benchmarks/bench_bert_elmo_training_throughput.py` prints one JSON line: words of
text/s of `bert_elmo_base` (a) and of BERT on pieces (b), `ratio` (a / b) and `ratio_tokens` (by
input tokens). Details: benchmarks/README.md#bench_bert_elmo_training_throughputpy.
"""

import argparse
import json
import logging
import statistics
import sys
from typing import Dict, List, Tuple

import numpy as np
import torch
from bench_bert2d_training_throughput import (
    MASK_SYMBOL,
    TurkishLikeText,
    add_common_args,
    build_side,
    load_average,
    model_dimensions,
    piece_rows,
    replacement_ids,
    run_interleaved,
    size_overrides,
    turkish_like_text,
)
from interleaved_timing import cpu_time_ratio, set_up
from torch import Tensor

import fairseq_struct.plugin  # noqa: F401  (registers the models)
from fairseq_struct.datasets.masking import MaskingOptions, mask_tokens
from fairseq_struct.pieces.word_boundaries import special_symbol_lookup, word_start_lookup

logger = logging.getLogger("bench_bert_elmo_training_throughput")

TARGET_RATIO = 0.7
UNTOUCHED, MASKED, RANDOM, KEPT = 0, 1, 2, 3


def word_rows(text: TurkishLikeText) -> Tensor:
    """(sentences, longest + 2) word ids: <s> words </s>, right-padded."""
    dictionary = text.word_dictionary
    rows = [
        [dictionary.bos()] + [dictionary.nspecial + word for word in row] + [dictionary.eos()]
        for row in text.word_rows
    ]
    width = max(len(row) for row in rows)
    return torch.tensor([row + [dictionary.pad()] * (width - len(row)) for row in rows])


def mask_same_words(
    text: TurkishLikeText, words: Tensor, pieces: Tensor, seed: int
) -> Tuple[Tuple[Tensor, Tensor], Tuple[Tensor, Tensor]]:
    """((word source, word target), (piece source, piece target)) with the same words chosen.

    The task's `mask_tokens` masks the word rows (every token a word); each chosen word's
    action (<mask>, random, unchanged) is then applied to all of its pieces, a random word
    becoming random pieces.
    """
    word_dictionary, piece_dictionary = text.word_dictionary, text.piece_dictionary
    rng = np.random.default_rng(seed)
    word_special = special_symbol_lookup(word_dictionary).numpy()
    word_replacements = replacement_ids(word_dictionary)
    piece_replacements = replacement_ids(piece_dictionary)
    word_mask, piece_mask = word_dictionary.index(MASK_SYMBOL), piece_dictionary.index(MASK_SYMBOL)
    word_source, word_target = words.clone(), torch.full_like(words, word_dictionary.pad())
    piece_source, piece_target = pieces.clone(), torch.full_like(pieces, piece_dictionary.pad())
    for i, row in enumerate(words.numpy()):
        source, target = mask_tokens(
            row,
            np.ones(len(row), dtype=bool),
            word_special[row],
            MaskingOptions(strategy="whole_word"),
            word_mask,
            word_dictionary.pad(),
            word_replacements,
            rng,
        )
        word_source[i], word_target[i] = torch.from_numpy(source), torch.from_numpy(target)
        chosen = target != word_dictionary.pad()
        # A random replacement that drew the word itself reads as unchanged, as it is.
        action = np.where(
            ~chosen,
            UNTOUCHED,
            np.where(source == word_mask, MASKED, np.where(source == target, KEPT, RANDOM)),
        )
        position = 1  # after <s>
        for j, word in enumerate(text.word_rows[i]):
            span = slice(position, position + len(text.word_pieces[word]))
            position = span.stop
            word_action = action[j + 1]
            if word_action == UNTOUCHED:
                continue
            piece_target[i, span] = pieces[i, span]
            if word_action == MASKED:
                piece_source[i, span] = piece_mask
            elif word_action == RANDOM:
                piece_source[i, span] = torch.from_numpy(
                    rng.choice(piece_replacements, span.stop - span.start)
                )
    return (word_source, word_target), (piece_source, piece_target)


def parse_args(argv: List[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_common_args(parser)
    parser.add_argument("--arch-a", default="bert_elmo_base", help="the measured model")
    parser.add_argument(
        "--arch-b",
        default="bert2d_base",
        help="the BERT on pieces: bert2d_base (run with 1D positions) or roberta_base",
    )
    parser.add_argument(
        "--seq-len",
        type=int,
        default=128,
        help="BERT's pieces per sentence, <s> and </s> included (BERT-ELMo gets the same words)",
    )
    parser.add_argument(
        "--output-vocab-size",
        type=int,
        default=0,
        help="BERT-ELMo's MLM output words (0: the whole word dictionary, the arch default)",
    )
    return parser.parse_args(argv)


def main(argv: List[str]) -> int:
    args = parse_args(argv)
    device = set_up(args)

    text = turkish_like_text(
        args.piece_vocab_size, args.word_vocab_size, args.batch_size, args.seq_len - 2, args.seed
    )
    words, pieces = word_rows(text), piece_rows(text)
    (word_source, word_target), (piece_source, piece_target) = mask_same_words(
        text, words, pieces, args.seed
    )
    num_words = sum(len(row) for row in text.word_rows)
    distinct_words = len({word for row in text.word_rows for word in row})
    logger.info(
        "%d words (%d distinct), %s word batch, %s piece batch, %.3f pieces per word",
        num_words,
        distinct_words,
        tuple(words.shape),
        tuple(pieces.shape),
        text.pieces_per_word_in_text,
    )

    overrides = size_overrides(args)
    sides = []
    inputs = (
        (
            "a",
            args.arch_a,
            text.word_dictionary,
            words,
            word_source,
            word_target,
            word_start_lookup(text.word_dictionary, tokens_are_words=True)[words],
            {"output_vocab_size": args.output_vocab_size},
        ),
        (
            "b",
            args.arch_b,
            text.piece_dictionary,
            pieces,
            piece_source,
            piece_target,
            word_start_lookup(text.piece_dictionary)[pieces],
            {"position_embedding": "1d"} if args.arch_b.startswith("bert2d") else {},
        ),
    )
    for label, arch, dictionary, tokens, source, target, word_starts, extra in inputs:
        arch_overrides: Dict[str, object] = {**overrides, **extra}
        net_input: Dict[str, Tensor] = {"src_tokens": source.to(device)}
        if arch.startswith(("bert2d", "bert_elmo")):
            net_input["word_starts"] = word_starts.to(device)  # as the task passes them
        else:  # fairseq's roberta asks a task for its positions without this
            arch_overrides["max_positions"] = 512
        units = {"words": num_words, "tokens": int(tokens.ne(dictionary.pad()).sum())}
        target = target.to(device)
        sides.append(
            build_side(
                label, arch, dictionary, arch_overrides, net_input, target, units, args, device
            )
        )
    a, b = sides
    run_interleaved(sides, args.warmup_steps, args.steps, args.repeats, device)

    ratio = a.rate("words") / b.rate("words")
    result = {
        "benchmark": "bert_elmo_training_throughput",
        "device": str(device),
        "torch_threads": torch.get_num_threads(),
        "arch_a": a.arch,
        "arch_b": b.arch + (" --position-embedding 1d" if b.arch.startswith("bert2d") else ""),
        "dimensions": model_dimensions(a.model),
        "params_a": a.params,
        "params_b": b.params,
        "output_vocab_a": a.model.encoder.output_vocab_size,
        "vocab_a": a.vocab_size,
        "vocab_b": b.vocab_size,
        "sentences": args.batch_size,
        "batch_shape_a": list(words.shape),
        "batch_shape_b": list(pieces.shape),
        "words_per_batch": num_words,
        "distinct_words_per_batch": distinct_words,
        "pieces_per_word": round(text.pieces_per_word_in_text, 3),
        "masked_tokens_a": a.masked_tokens,
        "masked_tokens_b": b.masked_tokens,
        "masking": "whole_word 15%, 80/10/10, the same words on both sides",
        "optimizer": "AdamW(lr, betas=(0.9, 0.98), eps=1e-6, weight_decay=0.01)",
        "words": text.words_per_s_note + ": the same count for both sides",
        "tokens": "non-pad input tokens incl. <s> and </s> (a: words, b: pieces)",
        "warmup_steps": args.warmup_steps,
        "steps_per_repeat": args.steps,
        "repeats": args.repeats,
        "seed": args.seed,
        "seconds_per_step_a": round(statistics.median(a.seconds), 4),
        "seconds_per_step_b": round(statistics.median(b.seconds), 4),
        "words_per_s_a": round(a.rate("words"), 2),
        "words_per_s_b": round(b.rate("words"), 2),
        "tokens_per_s_a": round(a.rate("tokens"), 2),
        "tokens_per_s_b": round(b.rate("tokens"), 2),
        "ratio": round(ratio, 4),
        "ratio_tokens": round(a.rate("tokens") / b.rate("tokens"), 4),
        "ratio_cpu_time": cpu_time_ratio(a.cpu_seconds, b.cpu_seconds, device),
        "target": TARGET_RATIO,
        "meets_target": ratio >= TARGET_RATIO,
        "load_average": load_average(),
    }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
