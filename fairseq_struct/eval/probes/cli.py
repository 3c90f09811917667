"""The probes' command line: `fairseq-struct probes` and `python -m fairseq_struct.eval.probes`."""

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Dict, Optional, Sequence

from fairseq_struct.commands import program_name
from fairseq_struct.eval.probes.format import ProbeError, read_probes

# The first line of --help (what the one-module command said).
DESCRIPTION = (
    "Qualitative probes of a pretrained masked-LM encoder (Polatbilek's thesis, 4.4.1 and 5.1.1)."
)


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog=program_name("fairseq_struct.eval.probes"),
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("checkpoint", type=Path, help="a pretraining checkpoint (masked LM)")
    parser.add_argument(
        "--data", required=True, type=Path, help="the pretraining data directory of the checkpoint"
    )
    parser.add_argument("--probes", required=True, type=Path, help="the probe file (see below)")
    parser.add_argument(
        "--layer", type=int, default=-1, help="0: embeddings, 1..L: layer outputs, -1: last"
    )
    parser.add_argument("--json", type=Path, help="also write every result here as JSON")
    parser.add_argument("--top", type=int, default=5, help="nearest words kept in the JSON")
    parser.add_argument(
        "--second-segment",
        help="feed '<s> context </s> TEXT </s>' (the thesis filled it with 'wwgg')",
    )
    return parser.parse_args(argv)


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    # torch and fairseq load with the model, after the arguments.
    from fairseq_struct.eval.probes.report import tables
    from fairseq_struct.eval.probes.runner import load_encoder, run_probes

    try:
        probes = read_probes(args.probes)
        encoder, description = load_encoder(
            args.checkpoint, args.data, args.layer, args.second_segment
        )
        results = run_probes(probes, encoder, args.top)
    except (ProbeError, FileNotFoundError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    header = (
        f"checkpoint {args.checkpoint} ({description}); layer {encoder.describe_layer()}; "
        f"word vector = mean of its units; cosine similarity"
    )
    print(header + "\n\n" + tables(results))
    if args.json:
        write_json(args.json, args, description, encoder.layer, results)
    return 0


def write_json(
    path: Path, args: argparse.Namespace, description: str, layer: int, results: Dict[str, Any]
) -> None:
    """Every result, with what produced it (checkpoint, model, layer, probe file, test)."""
    from fairseq_struct.eval.probes.statistics import P_VALUE_TEST

    report = {
        "checkpoint": str(args.checkpoint),
        "model": description,
        "layer": layer,
        "probes": str(args.probes),
        "p_value_test": P_VALUE_TEST,
        **results,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, ensure_ascii=False, indent=2) + "\n", "utf-8")
