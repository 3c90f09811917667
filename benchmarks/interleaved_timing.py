"""Timing helpers shared by the benchmarks: both sides of a comparison run in turns in one
process, and each turn records wall-clock and process CPU seconds."""

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
