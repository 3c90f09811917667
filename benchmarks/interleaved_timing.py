"""Timing helpers shared by the benchmarks: both sides of a comparison run in turns in one
process, and each turn records wall-clock and process CPU seconds."""

import argparse
import logging
import statistics
import sys
import time
from typing import Callable, Mapping, Optional, Sequence, Tuple

import torch


def set_up(args: argparse.Namespace, force_logging: bool = False) -> torch.device:
    """A benchmark's start: INFO logs to stderr (`force_logging`: even where an import already
    configured the root logger), --threads torch threads; returns the --device."""
    logging.basicConfig(
        stream=sys.stderr, level=logging.INFO, format="%(name)s: %(message)s", force=force_logging
    )
    torch.set_num_threads(args.threads)
    return torch.device(args.device)


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


def warm_up(
    steps: Mapping[str, Callable[[], object]],
    warmup_steps: int,
    device: torch.device,
    log: logging.Logger,
    unit: str = "steps",
) -> None:
    """`warmup_steps` untimed calls of each side's step."""
    for name, step in steps.items():
        log.info("warm-up %s (%d %s)", name, warmup_steps, unit)
        timed(step, warmup_steps, device)


def run_in_turns(
    steps: Mapping[str, Callable[[], object]],
    steps_per_repeat: int,
    repeats: int,
    device: torch.device,
    record: Callable[[str, float, float], str],
    log: logging.Logger,
) -> None:
    """`repeats` rounds in which each side in turn (a, b, a, b, ...) makes `steps_per_repeat`
    timed calls of its step, so that load from other processes hits every side alike.
    `record(side, wall-clock seconds, CPU seconds)` keeps a round's times and returns what
    `log` shows of them."""
    for repeat in range(repeats):
        for name, step in steps.items():
            figures = record(name, *timed(step, steps_per_repeat, device))
            log.info("repeat %d %s: %s", repeat, name, figures)


def cpu_time_ratio(
    cpu_seconds_a: Sequence[float], cpu_seconds_b: Sequence[float], device: torch.device
) -> Optional[float]:
    """rate_a / rate_b from the repeats' process CPU seconds, on the CPU only. Time taken from
    this process by other processes counts in wall-clock time but not in CPU time: on a busy
    CPU-only machine this ratio shows what the code itself costs."""
    if device.type != "cpu":
        return None
    return round(statistics.median(cpu_seconds_b) / statistics.median(cpu_seconds_a), 4)


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
