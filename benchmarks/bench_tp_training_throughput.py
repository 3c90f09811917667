"""Training throughput of the TP-Transformer vs its relative-position baseline (design.md §6).

`.venv/bin/python benchmarks/bench_tp_training_throughput.py` prints one JSON line: target words/s
of both (`words_per_s_a`, `words_per_s_b`) and `ratio` (a / b). The step and the figures:
benchmarks/README.md#bench_tp_training_throughputpy.
"""

import argparse
import json
import logging
import statistics
import sys
from typing import Callable, Dict, List

import torch
from fairseq.criterions.label_smoothed_cross_entropy import label_smoothed_nll_loss
from fairseq.data import Dictionary
from fairseq.optim.adafactor import Adafactor
from interleaved_timing import (
    add_repetition_arguments,
    cpu_time_ratio,
    run_in_turns,
    set_up,
    warm_up,
)
from torch import Tensor, nn

import fairseq_struct.plugin  # noqa: F401  (registers the models)
from fairseq_struct.testing.build_from_arch import build_model_from_arch, joined_dictionary

logger = logging.getLogger("bench_tp_training_throughput")

TARGET_RATIO = 0.9


def synthetic_batch(
    dictionary: Dictionary, batch_size: int, src_len: int, tgt_len: int, seed: int
) -> Dict[str, Tensor]:
    """Random ids without padding, so every position is a counted target word."""
    generator = torch.Generator().manual_seed(seed)
    low, high = dictionary.nspecial, len(dictionary)
    src_tokens = torch.randint(low, high, (batch_size, src_len), generator=generator)
    src_tokens[:, -1] = dictionary.eos()
    target = torch.randint(low, high, (batch_size, tgt_len), generator=generator)
    target[:, -1] = dictionary.eos()
    # Teacher forcing: the decoder reads the target shifted right behind EOS, as fairseq does.
    prev_output_tokens = torch.cat([target[:, -1:], target[:, :-1]], dim=1)
    return {
        "src_tokens": src_tokens,
        "src_lengths": torch.full((batch_size,), src_len),
        "prev_output_tokens": prev_output_tokens,
        "target": target,
    }


def make_training_step(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    batch: Dict[str, Tensor],
    label_smoothing: float,
    padding_idx: int,
) -> Callable[[], None]:
    def step() -> None:
        net_output = model(batch["src_tokens"], batch["src_lengths"], batch["prev_output_tokens"])
        lprobs = model.get_normalized_probs(net_output, log_probs=True)
        loss, _ = label_smoothed_nll_loss(
            lprobs.view(-1, lprobs.size(-1)),
            batch["target"].view(-1),
            label_smoothing,
            ignore_index=padding_idx,
        )
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()

    return step


def build_optimizer(name: str, model: nn.Module, lr: float) -> torch.optim.Optimizer:
    if name == "adafactor":
        # The paper's optimizer with an external learning rate (design.md §2.3).
        return Adafactor(model.parameters(), lr=lr, scale_parameter=False, relative_step=False)
    return torch.optim.Adam(model.parameters(), lr=lr, betas=(0.9, 0.98))


def parse_args(argv: List[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu", help="where both run")
    parser.add_argument("--arch-a", default="tp_transformer_base", help="the measured model")
    parser.add_argument("--arch-b", default="transformer_relpos_base", help="the reference")
    parser.add_argument("--vocab-size", type=int, default=32000, help="joined dictionary size")
    parser.add_argument("--batch-size", type=int, default=8, help="sentences per batch")
    parser.add_argument("--src-len", type=int, default=24, help="source tokens per sentence")
    parser.add_argument("--tgt-len", type=int, default=24, help="target tokens per sentence")
    parser.add_argument(
        "--optimizer",
        choices=["adafactor", "adam"],
        default="adafactor",
        help="fairseq's Adafactor (the paper's) or torch's Adam, the same for both models",
    )
    parser.add_argument("--lr", type=float, default=1e-4, help="learning rate of the optimizer")
    parser.add_argument("--label-smoothing", type=float, default=0.1, help="epsilon of the loss")
    parser.add_argument("--seed", type=int, default=1, help="for the weights and the batch")
    add_repetition_arguments(parser, warmup_steps=2, steps=2, repeats=7)
    return parser.parse_args(argv)


def main(argv: List[str]) -> int:
    args = parse_args(argv)
    device = set_up(args)

    dictionary = joined_dictionary(args.vocab_size)
    batch = synthetic_batch(dictionary, args.batch_size, args.src_len, args.tgt_len, args.seed)
    batch = {name: tensor.to(device) for name, tensor in batch.items()}
    target_words = int(batch["target"].ne(dictionary.pad()).sum())

    sides = {}
    for label, arch in (("a", args.arch_a), ("b", args.arch_b)):
        model = build_model_from_arch(arch, dictionary, seed=args.seed).to(device).train()
        optimizer = build_optimizer(args.optimizer, model, args.lr)
        step = make_training_step(model, optimizer, batch, args.label_smoothing, dictionary.pad())
        params = sum(p.numel() for p in model.parameters())
        logger.info("%s: %s, %d parameters", label, arch, params)
        sides[label] = {
            "arch": arch,
            "params": params,
            "step": step,
            "words_per_s": [],
            "cpu_seconds": [],
        }

    def record(label: str, seconds: float, cpu_seconds: float) -> str:
        side = sides[label]
        side["words_per_s"].append(args.steps * target_words / seconds)
        side["cpu_seconds"].append(cpu_seconds)
        return f"{side['words_per_s'][-1]:.1f} words/s"

    steps = {label: side["step"] for label, side in sides.items()}
    warm_up(steps, args.warmup_steps, device, logger)
    run_in_turns(steps, args.steps, args.repeats, device, record, logger)

    words_per_s_a = statistics.median(sides["a"]["words_per_s"])
    words_per_s_b = statistics.median(sides["b"]["words_per_s"])
    ratio = words_per_s_a / words_per_s_b
    result = {
        "benchmark": "tp_training_throughput",
        "device": str(device),
        "torch_threads": torch.get_num_threads(),
        "batch_shape": {
            "sentences": args.batch_size,
            "src_len": args.src_len,
            "tgt_len": args.tgt_len,
        },
        "words": "target tokens (fairseq wps)",
        "vocab_size": len(dictionary),
        "optimizer": args.optimizer,
        "label_smoothing": args.label_smoothing,
        "warmup_steps": args.warmup_steps,
        "steps_per_repeat": args.steps,
        "repeats": args.repeats,
        "seed": args.seed,
        "arch_a": sides["a"]["arch"],
        "arch_b": sides["b"]["arch"],
        "params_a": sides["a"]["params"],
        "params_b": sides["b"]["params"],
        "words_per_s_a": round(words_per_s_a, 2),
        "words_per_s_b": round(words_per_s_b, 2),
        "ratio": round(ratio, 4),
        "ratio_cpu_time": cpu_time_ratio(
            sides["a"]["cpu_seconds"], sides["b"]["cpu_seconds"], device
        ),
        "target": TARGET_RATIO,
        "meets_target": ratio >= TARGET_RATIO,
    }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
