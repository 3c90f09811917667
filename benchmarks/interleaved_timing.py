"""Timing helpers shared by the benchmarks: both sides of a comparison run in turns in one
process, and each turn records wall-clock and process CPU seconds."""

import argparse
import time
from typing import Callable, Tuple

import torch


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def timed(step: Callable[[], object], steps: int, device: torch.device) -> Tuple[float, float]:
    """Wall-clock and process CPU seconds of `steps` calls."""
    synchronize(device)
    start, start_cpu = time.perf_counter(), time.process_time()
    for _ in range(steps):
        step()
    synchronize(device)
    return time.perf_counter() - start, time.process_time() - start_cpu


def add_repetition_arguments(
    parser: argparse.ArgumentParser, warmup_steps: int, steps: int, repeats: int
) -> None:
    """--warmup-steps, --steps, --repeats and --threads, with a benchmark's own defaults."""
    parser.add_argument(
        "--warmup-steps", type=int, default=warmup_steps, help="untimed steps per side"
    )
    parser.add_argument("--steps", type=int, default=steps, help="steps per timed repeat")
    parser.add_argument("--repeats", type=int, default=repeats, help="timed repeats per side")
    add_threads_argument(parser)


def add_threads_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch intra-op threads (1 by default: on a shared machine, threads waiting for "
        "each other make CPU timings erratic)",
    )
