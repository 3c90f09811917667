"""Every benchmark script runs with tiny sizes and prints one JSON line (the figures themselves
come from `make bench`, never from tests)."""

import json
import sys

import pytest
from conftest import REPO_ROOT, run_tool

TINY = ["--layers", "1", "--embed-dim", "64", "--repeats", "1", "--warmup-steps", "1"]


@pytest.mark.parametrize(
    "script", ["bench_bert2d_training_throughput.py", "bench_bert_elmo_training_throughput.py"]
)
def test_masked_lm_benchmark_prints_one_json_line(script):
    result = run_tool([sys.executable, f"benchmarks/{script}", *TINY], cwd=REPO_ROOT, timeout=300)
    lines = [line for line in result.stdout.splitlines() if line.startswith("{")]
    assert len(lines) == 1, result.stdout
    figures = json.loads(lines[0])
    assert figures["ratio"] > 0 and isinstance(figures["meets_target"], bool)
