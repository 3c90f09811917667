"""Beam-search speed of the TP-Transformer vs fairseq's stock Transformer (design.md §6).

`.venv/bin/python benchmarks/bench_tp_generation_speed.py` prints one JSON line:
`sentences_per_s_tp`, `sentences_per_s_stock` and `ratio` (tp / stock). How every hypothesis is
held to `--steps` tokens, and the figures: benchmarks/README.md#bench_tp_generation_speedpy.
"""

import argparse
import json
import logging
import statistics
import sys
from typing import Any, Callable, Dict, List

import torch
from fairseq.data import Dictionary
from fairseq.sequence_generator import SequenceGenerator
from interleaved_timing import add_threads_argument, cpu_time_ratio, run_in_turns, set_up, warm_up
from torch import Tensor

import fairseq_struct.plugin  # noqa: F401  (registers the models)
from fairseq_struct.testing.build_from_arch import build_model_from_arch, joined_dictionary

logger = logging.getLogger("bench_tp_generation_speed")

TARGET_RATIO = 0.9


def source_batch(
    dictionary: Dictionary, batch_size: int, src_len: int, seed: int
) -> Dict[str, Dict[str, Tensor]]:
    generator = torch.Generator().manual_seed(seed)
    src_tokens = torch.randint(
        dictionary.nspecial, len(dictionary), (batch_size, src_len), generator=generator
    )
    src_tokens[:, -1] = dictionary.eos()
    src_lengths = torch.full((batch_size,), src_len)
    return {"net_input": {"src_tokens": src_tokens, "src_lengths": src_lengths}}


def check_lengths(hypotheses: List[List[Dict[str, Tensor]]], steps: int, arch: str) -> None:
    """Both sides must decode the same number of steps, or the comparison means nothing."""
    lengths = {len(hypo["tokens"]) for hypos in hypotheses for hypo in hypos}
    if lengths != {steps + 1}:
        raise RuntimeError(f"{arch}: hypotheses of lengths {sorted(lengths)}, expected {steps + 1}")


def parse_args(argv: List[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu", help="where both run")
    parser.add_argument("--arch-tp", default="tp_transformer_base", help="the measured model")
    parser.add_argument("--arch-stock", default="transformer", help="fairseq's stock reference")
    parser.add_argument("--vocab-size", type=int, default=32000, help="joined dictionary size")
    parser.add_argument("--batch-size", type=int, default=16, help="source sentences per batch")
    parser.add_argument("--src-len", type=int, default=20, help="tokens per source sentence")
    parser.add_argument(
        "--steps", type=int, default=20, help="output tokens per hypothesis (min_len = max_len)"
    )
    parser.add_argument("--beam", type=int, default=5, help="beam size of both generators")
    parser.add_argument("--warmup", type=int, default=1, help="untimed batches per side")
    parser.add_argument("--repeats", type=int, default=7, help="timed batches per side")
    parser.add_argument("--seed", type=int, default=1, help="for the weights and the batch")
    add_threads_argument(parser)
    return parser.parse_args(argv)


def main(argv: List[str]) -> int:
    args = parse_args(argv)
    device = set_up(args)

    dictionary = joined_dictionary(args.vocab_size)
    sample = source_batch(dictionary, args.batch_size, args.src_len, args.seed)
    sample["net_input"] = {name: t.to(device) for name, t in sample["net_input"].items()}

    sides = {}
    for label, arch in (("tp", args.arch_tp), ("stock", args.arch_stock)):
        model = build_model_from_arch(arch, dictionary, seed=args.seed).to(device).eval()
        generator = SequenceGenerator(
            [model],
            dictionary,
            beam_size=args.beam,
            max_len_a=0,
            max_len_b=args.steps,
            min_len=args.steps,
        )
        params = sum(p.numel() for p in model.parameters())
        logger.info("%s: %s, %d parameters", label, arch, params)
        sides[label] = {
            "arch": arch,
            "params": params,
            "generator": generator,
            "rates": [],
            "cpu_seconds": [],
        }

    def translate(side: Dict[str, Any]) -> Callable[[], None]:
        """One batch and the check of its lengths (timed with it, as in bench_gpu_training:
        microseconds against a beam search)."""
        return lambda: check_lengths(side["generator"].forward(sample), args.steps, side["arch"])

    def record(label: str, seconds: float, cpu_seconds: float) -> str:
        side = sides[label]
        side["rates"].append(args.batch_size / seconds)
        side["cpu_seconds"].append(cpu_seconds)
        return f"{side['rates'][-1]:.2f} sentences/s"

    steps = {label: translate(side) for label, side in sides.items()}
    warm_up(steps, args.warmup, device, logger, unit="batches")
    run_in_turns(steps, 1, args.repeats, device, record, logger)

    rate_tp = statistics.median(sides["tp"]["rates"])
    rate_stock = statistics.median(sides["stock"]["rates"])
    ratio = rate_tp / rate_stock
    result = {
        "benchmark": "tp_generation_speed",
        "device": str(device),
        "threads": torch.get_num_threads(),
        "batch": args.batch_size,
        "src_len": args.src_len,
        "steps": args.steps,
        "length_control": "max_len_a=0, max_len_b=min_len=steps: every hypothesis is steps "
        "tokens + EOS, steps + 1 decoder calls per batch",
        "beam": args.beam,
        "vocab_size": len(dictionary),
        "warmup": args.warmup,
        "repeats": args.repeats,
        "seed": args.seed,
        "arch_tp": sides["tp"]["arch"],
        "arch_stock": sides["stock"]["arch"],
        "params_tp": sides["tp"]["params"],
        "params_stock": sides["stock"]["params"],
        "sentences_per_s_tp": round(rate_tp, 3),
        "sentences_per_s_stock": round(rate_stock, 3),
        "ratio": round(ratio, 4),
        "ratio_cpu_time": cpu_time_ratio(
            sides["tp"]["cpu_seconds"], sides["stock"]["cpu_seconds"], device
        ),
        "target": TARGET_RATIO,
        "meets_target": ratio >= TARGET_RATIO,
    }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
