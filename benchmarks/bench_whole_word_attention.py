"""Whole-Word Attention vs full self-attention at 2,048 tokens: peak memory, time, energies.

`.venv/bin/python benchmarks/bench_whole_word_attention.py` prints one JSON line: peak MiB and
seconds of `wwa`, `wwa_window`, `mha` and `relpos`, their ratios, and the energies per head. The
sides, how memory is measured and the figures: benchmarks/README.md#bench_whole_word_attentionpy.
"""

import argparse
import json
import logging
import statistics
import sys
from typing import Callable, Dict, List

import torch
from fairseq.modules import MultiheadAttention
from interleaved_timing import add_repetition_arguments, run_in_turns, set_up, synchronize, timed
from torch import Tensor, nn
from torch.profiler import ProfilerActivity, profile

from fairseq_struct.modules.role_attention import (
    RoleAttentionOptions,
    RoleRelativeMultiheadAttention,
)
from fairseq_struct.modules.whole_word_attention import WholeWordAttention, attention_energy_count

logger = logging.getLogger("bench_whole_word_attention")

# Targets against fused attention (fairseq's MultiheadAttention), Whole-Word Attention at most
# 2x the memory and time, the Shaw relative-position attention at most 1.5x the memory and 2x
# the time (the times are GPU targets: a CPU line reports them, its figures say little).
TARGET_MEMORY_RATIO = 2.0
TARGET_TIME_RATIO = 2.0
RELPOS_TARGET_MEMORY_RATIO = 1.5
RELPOS_TARGET_TIME_RATIO = 2.0
MIB = 2**20


def turkish_like_word_index(tokens: int, mean_pieces: float, seed: int) -> Tensor:
    """(1, tokens) word index with 1 + Poisson(mean_pieces - 1) pieces per word."""
    generator = torch.Generator().manual_seed(seed)
    rates = torch.full((tokens,), mean_pieces - 1.0)
    pieces = 1 + torch.poisson(rates, generator=generator).long()
    return torch.repeat_interleave(torch.arange(tokens), pieces)[:tokens].unsqueeze(0)


def peak_memory_bytes(step: Callable[[], None], device: torch.device) -> int:
    """Peak bytes allocated during one call of step, above what was allocated before it."""
    if device.type == "cuda":
        synchronize(device)
        before = torch.cuda.memory_allocated(device)
        torch.cuda.reset_peak_memory_stats(device)
        step()
        synchronize(device)
        return torch.cuda.max_memory_allocated(device) - before
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        step()
    events = [e for e in prof.profiler.kineto_results.events() if e.name() == "[memory]"]
    live = peak = 0
    for event in sorted(events, key=lambda e: e.start_ns()):
        live += event.nbytes()
        peak = max(peak, live)
    return peak


def training_step(
    layer: nn.Module, forward: Callable[[Tensor], Tensor], x: Tensor
) -> Callable[[], None]:
    def step() -> None:
        layer.zero_grad(set_to_none=True)
        x.grad = None
        forward(x).sum().backward()

    return step


def parse_args(argv: List[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu", help="where all run")
    parser.add_argument("--tokens", type=int, default=2048, help="sequence length n")
    parser.add_argument("--batch-size", type=int, default=1, help="sequences per batch")
    parser.add_argument("--embed-dim", type=int, default=768, help="d_model (bert base: 768)")
    parser.add_argument("--heads", type=int, default=12, help="attention heads (bert base: 12)")
    parser.add_argument("--window", type=int, default=5, help="WWA window w each side")
    parser.add_argument("--max-relative-position", type=int, default=16, help="Shaw clipping k")
    parser.add_argument(
        "--mean-pieces", type=float, default=1.5, help="mean pieces per word (Turkish-like)"
    )
    parser.add_argument("--seed", type=int, default=1, help="for the weights, input and words")
    add_repetition_arguments(parser, warmup_steps=1, steps=1, repeats=5)
    return parser.parse_args(argv)


def main(argv: List[str]) -> int:
    args = parse_args(argv)
    device = set_up(args)
    n, dim = args.tokens, args.embed_dim

    word_index = turkish_like_word_index(n, args.mean_pieces, args.seed)
    word_index = word_index.expand(args.batch_size, n).contiguous().to(device)
    m = int(word_index[0].max()) + 1
    torch.manual_seed(args.seed)
    x = torch.randn(n, args.batch_size, dim, device=device, requires_grad=True)

    wwa = WholeWordAttention(dim, args.heads, args.window, args.max_relative_position)
    mha = MultiheadAttention(dim, args.heads, self_attention=True)
    relpos = RoleRelativeMultiheadAttention(
        dim,
        args.heads,
        RoleAttentionOptions(
            head_dim=dim // args.heads,
            use_roles=False,
            max_relative_positions=args.max_relative_position,
        ),
        self_attention=True,
    )
    forwards: Dict[str, Callable[[Tensor], Tensor]] = {
        # m as a host int, as a data loader that knows its words passes it: no host sync.
        "wwa": lambda t: wwa(t, word_index, None, num_words=m),
        "wwa_window": lambda t: wwa.windowed_attention(t.transpose(0, 1), None)[0],
        # need_weights=False as in fairseq's TransformerEncoderLayer (roberta's encoder).
        "mha": lambda t: mha(t, t, t, need_weights=False)[0],
        "relpos": lambda t: relpos(t, t, t, need_weights=False)[0],
    }
    layers = {"wwa": wwa, "mha": mha, "relpos": relpos, "wwa_window": wwa}
    steps = {}
    for name, layer in layers.items():
        layer.to(device).train()
        steps[name] = training_step(layer, forwards[name], x)
        logger.info("%s: %d parameters", name, sum(p.numel() for p in layer.parameters()))

    for name, step in steps.items():
        timed(step, args.warmup_steps, device)
    peak_mib = {}
    for name, step in steps.items():
        # Gradients freed before the window, so that every free the step makes is of a tensor
        # allocated inside it (the profiler does not see frees of older blocks).
        layers[name].zero_grad(set_to_none=True)
        x.grad = None
        peak_mib[name] = peak_memory_bytes(step, device) / MIB
    seconds: Dict[str, List[float]] = {name: [] for name in steps}
    cpu_seconds: Dict[str, List[float]] = {name: [] for name in steps}

    def record(name: str, wall: float, cpu: float) -> str:
        seconds[name].append(wall / args.steps)
        cpu_seconds[name].append(cpu / args.steps)
        return f"{seconds[name][-1]:.3f} s"

    run_in_turns(steps, args.steps, args.repeats, device, record, logger)
    median = {name: statistics.median(values) for name, values in seconds.items()}
    median_cpu = {name: statistics.median(values) for name, values in cpu_seconds.items()}

    # Energies per head of one sequence, as eq. 9 counts them.
    with torch.no_grad():
        wwa(x[:, :1], word_index[:1], None, num_words=m)
    energies_measured = wwa.last_energy_count
    energies_formula = attention_energy_count(m, n, args.window)
    memory_ratio = peak_mib["wwa"] / peak_mib["mha"]
    time_ratio = median["wwa"] / median["mha"]
    relpos_memory_ratio = peak_mib["relpos"] / peak_mib["mha"]
    relpos_time_ratio = median["relpos"] / median["mha"]
    result = {
        "benchmark": "whole_word_attention",
        "device": str(device),
        "torch_threads": torch.get_num_threads(),
        "batch_size": args.batch_size,
        "tokens_n": n,
        "words_m": m,
        "pieces_per_word": round(n / m, 3),
        "embed_dim": dim,
        "heads": args.heads,
        "window": args.window,
        "max_relative_position": args.max_relative_position,
        "step": "forward + backward of one attention layer",
        "memory_method": (
            "torch.cuda.max_memory_allocated"
            if device.type == "cuda"
            else "torch.profiler profile_memory: peak running sum of CPU allocator events"
        ),
        "peak_mib": {name: round(value, 1) for name, value in peak_mib.items()},
        "seconds": {name: round(value, 4) for name, value in median.items()},
        "memory_ratio": round(memory_ratio, 4),
        "time_ratio": round(time_ratio, 4),
        "time_ratio_cpu_time": (
            round(median_cpu["wwa"] / median_cpu["mha"], 4) if device.type == "cpu" else None
        ),
        "relpos_memory_ratio": round(relpos_memory_ratio, 4),
        "relpos_time_ratio": round(relpos_time_ratio, 4),
        "memory_ratio_vs_relpos": round(peak_mib["wwa"] / peak_mib["relpos"], 4),
        "time_ratio_vs_relpos": round(median["wwa"] / median["relpos"], 4),
        "energies_per_head_measured": energies_measured,
        "energies_per_head_formula": energies_formula,
        "energies_per_head_full": n * n,
        "energy_ratio_vs_full": round(energies_measured / (n * n), 4),
        "repeats": args.repeats,
        "seed": args.seed,
        "target": {
            "memory_ratio": TARGET_MEMORY_RATIO,
            "time_ratio": TARGET_TIME_RATIO,
            "relpos_memory_ratio": RELPOS_TARGET_MEMORY_RATIO,
            "relpos_time_ratio": RELPOS_TARGET_TIME_RATIO,
        },
        "meets_target": {
            "memory_ratio": memory_ratio <= TARGET_MEMORY_RATIO,
            "time_ratio": time_ratio <= TARGET_TIME_RATIO,
            "relpos_memory_ratio": relpos_memory_ratio <= RELPOS_TARGET_MEMORY_RATIO,
            "relpos_time_ratio": relpos_time_ratio <= RELPOS_TARGET_TIME_RATIO,
            "energies_match_formula": energies_measured == energies_formula,
        },
    }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
