"""A pytest plugin for bench_suite_cpu.py --inventory: the CPU of each test's setup, call and
teardown, appended as JSON lines to $SUITE_CPU_INVENTORY.

A phase's CPU is the change, across it, of its worker's process tree: the worker and its live
descendants, each with the CPU of the children it has reaped (utime, stime, cutime and cstime of
/proc/PID/stat). The commands a test starts, and the preloaded servers' forks, count when their
parent reaps them; a process that outlives the phase counts in the phase that it ends in.
"""

import json
import os
import time
from pathlib import Path
from typing import Dict, Iterator, List, Tuple

import pytest

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def _process(pid: str) -> Tuple[int, int]:
    """(parent pid, CPU ticks of the process and of the children it reaped)."""
    text = Path(f"/proc/{pid}/stat").read_text()
    fields = text[text.rindex(")") + 2 :].split()  # after the command name, which may hold spaces
    return int(fields[1]), sum(int(ticks) for ticks in fields[11:15])


def tree_cpu_seconds(root: int) -> float:
    children: Dict[int, List[int]] = {}
    ticks: Dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                parent, cpu = _process(entry)
            except (OSError, ValueError, IndexError):  # ended while read
                continue
            children.setdefault(parent, []).append(int(entry))
            ticks[int(entry)] = cpu
    total, pending = 0, [root]
    while pending:
        pid = pending.pop()
        total += ticks.get(pid, 0)
        pending.extend(children.get(pid, []))
    return total / CLOCK_TICKS


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
