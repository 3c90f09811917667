"""Kernel launches of one fairseq training update, counted on the CPU.

`.venv/bin/python benchmarks/bench_update_launches.py` prints one JSON line per optimizer: the
`update` and `optimizer_norm_copies` counts of `tp_transformer_base` (a) and stock `transformer`
(b), and `ratio` (update of a / of b). Details: benchmarks/README.md#bench_update_launchespy.
"""

import argparse
import json
import sys
from collections import Counter
from typing import Any, Callable, Dict, List

import torch
from bench_tp_training_throughput import synthetic_batch
from fairseq.criterions.label_smoothed_cross_entropy import label_smoothed_nll_loss

import fairseq_struct.plugin  # noqa: F401  (registers the models, applies the repairs)
from fairseq_struct.fixes.stock_update import restore_stock_updates
from fairseq_struct.testing.build_from_arch import build_model_from_arch, joined_dictionary
from fairseq_struct.testing.fairseq_optimizers import build_fairseq_optimizer
from fairseq_struct.testing.operation_count import KernelOperationCounter

OPTIMIZER_FLAGS = {
    "adam": ["--optimizer", "adam", "--adam-betas", "(0.9, 0.98)", "--lr", "0.0005"],
    # scripts/train-en-tr.sh: the paper's Adafactor (design.md §2.3), an external learning rate
    "adafactor": ["--optimizer", "adafactor", "--lr", "0.003"],
}
OPTIMIZER_TARGETS = {"adam": 60, "adafactor": 200}
RATIO_TARGET = 1.25
PRECISION_FLAGS = {"bf16": ["--bf16"], "fp32": []}
# Small widths with the arch's layers and heads (the attention head dimension is the
# TP-Transformer's option; fairseq's transformer ignores it and divides d_model by the heads).
WIDTHS = {
    "arch": {},
    "small": {
        "encoder_embed_dim": 32,
        "decoder_embed_dim": 32,
        "encoder_ffn_embed_dim": 64,
        "decoder_ffn_embed_dim": 64,
        "attention_head_dim": 4,
    },
}


def count_update(
    arch: str, optimizer_name: str, precision: str, args: argparse.Namespace
) -> Dict[str, Any]:
    """The kernel operations of one update of `arch` (after one that made the state)."""
    dictionary = joined_dictionary(args.vocab_size)
    model = build_model_from_arch(arch, dictionary, seed=1, **WIDTHS[args.widths])
    if precision == "bf16":
        model = model.to(torch.bfloat16)
    model.train()
    params = [p for p in model.parameters() if p.requires_grad]
    flags = OPTIMIZER_FLAGS[optimizer_name] + PRECISION_FLAGS[precision]
    optimizer = build_fairseq_optimizer(params, flags)
    batch = synthetic_batch(dictionary, args.batch_size, args.sentence_len, args.sentence_len, 1)
    sample_size = args.batch_size * args.sentence_len

    def forward_backward() -> None:
        net_output = model(batch["src_tokens"], batch["src_lengths"], batch["prev_output_tokens"])
        lprobs = model.get_normalized_probs(net_output, log_probs=True)
        loss, _ = label_smoothed_nll_loss(
            lprobs.view(-1, lprobs.size(-1)), batch["target"].view(-1), 0.1, dictionary.pad()
        )
        optimizer.backward(loss)

    parts: List[Callable[[], None]] = [
        optimizer.zero_grad,
        forward_backward,
        lambda: optimizer.multiply_grads(1.0 / sample_size),
        lambda: optimizer.clip_grad_norm(0.0),
        optimizer.step,
    ]
    for part in parts:  # the first update makes the optimizer's state
        part()
    counts = []
    by_operation: Counter = Counter()
    for part in parts:
        with KernelOperationCounter() as counter:
            part()
        counts.append(counter.total)
        by_operation.update(counter.operations)
    update = sum(counts)
    return {
        "arch": arch,
        "parameter_tensors": len(params),
        "update": update,
        "forward_backward": counts[1],
        "optimizer_norm_copies": update - counts[1],
        "by_operation": dict(by_operation.most_common(10)),
    }


def add_count_arguments(parser: argparse.ArgumentParser) -> None:
    """The two archs compared and what the counts do not depend on (this benchmark's and
    bench_decoding_launches.py's)."""
    parser.add_argument("--arch-tp", default="tp_transformer_base")
    parser.add_argument("--arch-stock", default="transformer")
    parser.add_argument(
        "--widths", choices=list(WIDTHS), default="arch", help="(the counts do not depend on it)"
    )
    parser.add_argument(
        "--vocab-size", type=int, default=1000, help="(the counts do not depend on it)"
    )


def parse_args(argv: List[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--optimizers", nargs="+", choices=list(OPTIMIZER_FLAGS), default=list(OPTIMIZER_FLAGS)
    )
    parser.add_argument("--precision", choices=list(PRECISION_FLAGS), default="bf16")
    parser.add_argument(
        "--update",
        choices=["project", "stock"],
        default="project",
        help="the project's multi-tensor update (fairseq_struct/fixes) or fairseq's own",
    )
    add_count_arguments(parser)
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--sentence-len", type=int, default=8)
    return parser.parse_args(argv)


def measure(args: argparse.Namespace, optimizer_name: str) -> Dict[str, Any]:
    a = count_update(args.arch_tp, optimizer_name, args.precision, args)
    b = count_update(args.arch_stock, optimizer_name, args.precision, args)
    ratio = a["update"] / b["update"]
    target = OPTIMIZER_TARGETS[optimizer_name]
    return {
        "benchmark": "update_launches",
        "optimizer": optimizer_name,
        "precision": args.precision,
        "batch": {
            "sentences": args.batch_size,
            "src_len": args.sentence_len,
            "tgt_len": args.sentence_len,
        },
        "update_of": args.update,
        "counted": "kernel-launching ATen operations (views, allocations, metadata left out)",
        "widths": args.widths,
        "a": a,
        "b": b,
        "ratio": round(ratio, 4),
        "ratio_is": "update of a / update of b",
        "ratio_target": RATIO_TARGET,
        "optimizer_norm_copies_target": target,
        "meets_target": ratio <= RATIO_TARGET
        and max(a["optimizer_norm_copies"], b["optimizer_norm_copies"]) <= target,
    }


def main(argv: List[str]) -> int:
    args = parse_args(argv)
    torch.set_num_threads(1)
    if args.update == "stock":
        restore_stock_updates()
    for optimizer_name in args.optimizers:
        print(json.dumps(measure(args, optimizer_name)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
