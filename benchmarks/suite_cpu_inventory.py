"""A pytest plugin for bench_suite_cpu.py --inventory: the CPU of each test's setup, call and
teardown, appended as JSON lines to $SUITE_CPU_INVENTORY.

A phase's CPU is the change across it of its worker's process tree: the worker and its live
descendants, each with the CPU of the children it has reaped (psutil's user, system,
children_user and children_system). How to read it: benchmarks/README.md#bench_suite_cpupy.
"""

import json
import os
import time
from typing import Iterator

import psutil
import pytest


def tree_cpu_seconds(root: int) -> float:
    """CPU seconds of `root` and of its live descendants, each with its reaped children's."""
    process = psutil.Process(root)
    total = 0.0
    for member in [process, *process.children(recursive=True)]:
        try:
            times = member.cpu_times()
        except psutil.NoSuchProcess:  # ended while read
            continue
        total += times.user + times.system + times.children_user + times.children_system
    return total


def _measured(phase: str):
    @pytest.hookimpl(hookwrapper=True)
    def hook(item: pytest.Item) -> Iterator[None]:
        cpu, wall = tree_cpu_seconds(os.getpid()), time.perf_counter()
        yield
        record = {
            "test": item.nodeid,
            "phase": phase,
            "cpu_s": round(tree_cpu_seconds(os.getpid()) - cpu, 2),
            "wall_s": round(time.perf_counter() - wall, 2),
            "worker": os.environ.get("PYTEST_XDIST_WORKER", "main"),
        }
        with open(os.environ["SUITE_CPU_INVENTORY"], "a", encoding="utf-8") as out:
            out.write(json.dumps(record) + "\n")

    return hook


pytest_runtest_setup = _measured("setup")
pytest_runtest_call = _measured("call")
pytest_runtest_teardown = _measured("teardown")
