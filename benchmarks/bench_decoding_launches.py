"""Kernel launches of one beam-search step, counted on the CPU.

`.venv/bin/python benchmarks/bench_decoding_launches.py` prints one JSON line: the `step`,
`first_step` and `search` counts of `tp_transformer_base` (a) and stock `transformer` (b), and
`ratio` (step of a / step of b). Details: benchmarks/README.md#bench_decoding_launchespy.
"""

import argparse
import json
import sys
from types import SimpleNamespace
from typing import Any, Dict, List

import torch
from bench_gpu_training import source_batch
from bench_update_launches import WIDTHS, add_count_arguments
from fairseq.sequence_generator import EnsembleModel, SequenceGenerator

import fairseq_struct.plugin  # noqa: F401  (registers the models, applies the repairs)
from fairseq_struct.testing.build_from_arch import build_model_from_arch, joined_dictionary
from fairseq_struct.testing.operation_count import KernelOperationCounter

RATIO_TARGET = 1.15


def count_search(arch: str, args: argparse.Namespace) -> Dict[str, Any]:
    """The kernel operations of a beam search of `arch` and of each of its decoder calls."""
    dictionary = joined_dictionary(args.vocab_size)
    model = build_model_from_arch(arch, dictionary, seed=1, **WIDTHS[args.widths]).eval()
    generation = SimpleNamespace(beam=args.beam, print_alignment=False)
    model.prepare_for_inference_(SimpleNamespace(generation=generation))
    generator = SequenceGenerator(
        [model], dictionary, beam_size=args.beam, max_len_a=0, max_len_b=args.steps,
        min_len=args.steps,
    )  # fmt: skip
    sample = source_batch(dictionary, args.sentences, args.src_len, seed=1)
    calls: List[KernelOperationCounter] = []
    stock_forward_decoder = EnsembleModel.forward_decoder

    def counted_forward_decoder(self: EnsembleModel, *call_args: Any, **kwargs: Any) -> Any:
        with KernelOperationCounter() as counter:
            output = stock_forward_decoder(self, *call_args, **kwargs)
        calls.append(counter)
        return output

    with torch.no_grad():
        generator.forward(sample)  # warm: caches made once, as in a real search's later batches
        EnsembleModel.forward_decoder = counted_forward_decoder
        try:
            with KernelOperationCounter() as search:
                hypotheses = generator.forward(sample)
        finally:
            EnsembleModel.forward_decoder = stock_forward_decoder
    lengths = {len(beam[0]["tokens"]) for beam in hypotheses}
    if lengths != {args.steps + 1} or len(calls) != args.steps + 1:
        raise RuntimeError(f"{arch}: expected {args.steps + 1} decoder calls, got {len(calls)}")
    steps = {counter.total for counter in calls[1:]}
    if len(steps) != 1:
        raise RuntimeError(f"{arch}: the steps after the first differ: {sorted(steps)}")
    return {
        "arch": arch,
        "step": calls[1].total,
        "first_step": calls[0].total,
        "search": search.total,
        "by_operation": dict(calls[1].operations.most_common(10)),
    }


def parse_args(argv: List[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_count_arguments(parser)
    parser.add_argument("--sentences", type=int, default=2)
    parser.add_argument("--src-len", type=int, default=8)
    parser.add_argument("--steps", type=int, default=8, help="tokens of every hypothesis")
    parser.add_argument("--beam", type=int, default=5)
    return parser.parse_args(argv)


def main(argv: List[str]) -> int:
    args = parse_args(argv)
    torch.set_num_threads(1)
    a, b = count_search(args.arch_tp, args), count_search(args.arch_stock, args)
    ratio = a["step"] / b["step"]
    print(
        json.dumps(
            {
                "benchmark": "decoding_launches",
                "counted": "kernel-launching ATen operations (views, allocations, metadata "
                "left out) of each decoder call of fairseq's SequenceGenerator",
                "widths": args.widths,
                "search": {
                    "sentences": args.sentences, "src_len": args.src_len, "beam": args.beam,
                    "steps": args.steps,
                },  # fmt: skip
                "a": a,
                "b": b,
                "ratio": round(ratio, 4),
                "ratio_is": "step of a / step of b",
                "ratio_target": RATIO_TARGET,
                "meets_target": ratio <= RATIO_TARGET,
            }
        ),
        flush=True,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
