"""Reproduction of a torch bug: compiled flex_attention on a CPU returns wrong rows at random.

`.venv/bin/python benchmarks/cpu_flex_attention_fault.py --keys 72 96` prints one JSON line: for
each key count the query rows that were wrong in any of --calls calls, and `faulty_keys`. The
setting and the figures: benchmarks/README.md#cpu_flex_attention_faultpy.
"""

import argparse
import json
import sys
from typing import List

import torch
from torch.nn.attention.flex_attention import flex_attention
from torch.nn.functional import scaled_dot_product_attention


def wrong_rows(keys: int, calls: int) -> List[int]:
    # Compiled afresh for each count: past dynamo's recompile limit flex_attention would run
    # eagerly (and correctly).
    torch._dynamo.reset()
    compiled = torch.compile(flex_attention, dynamic=False)
    generator = torch.Generator().manual_seed(0)
    q = torch.randn(1, 1, 24, 16, generator=generator)
    k = torch.randn(1, 1, keys, 16, generator=generator)
    v = torch.randn(1, 1, keys, 16, generator=generator)
    expected = scaled_dot_product_attention(q, k, v)
    rows = set()
    for _ in range(calls):
        out = compiled(q, k, v)
        bad = ((out - expected).abs() > 1e-4) | out.isnan()
        rows.update(bad.any(-1).flatten().nonzero().flatten().tolist())
    return sorted(rows)


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keys", type=int, nargs="+", default=[8, 24, 48, 65, 72, 96, 120, 200])
    parser.add_argument("--calls", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    found = {keys: wrong_rows(keys, args.calls) for keys in args.keys}
    print(
        json.dumps(
            {
                "benchmark": "cpu_flex_attention_fault",
                "torch": torch.__version__,
                "cpu_capability": torch.backends.cpu.get_cpu_capability(),
                "threads": torch.get_num_threads(),
                "wrong_rows_by_keys": found,
                "faulty_keys": [keys for keys, rows in found.items() if rows],
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
