"""CPU seconds of a new `python -m fairseq_struct COMMAND` process (`--help` of every command and a
small run of each one that needs no model) against a new process that imports the plugin.

`.venv/bin/python benchmarks/bench_command_startup.py --repeats 3` prints one JSON line: the
baseline's CPU seconds, each command's, the slowest, and those over the goal. The goal and the
figures: benchmarks/README.md#bench_command_startuppy.
"""

import argparse
import json
import resource
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Dict, List

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from fairseq_struct.commands import COMMANDS  # noqa: E402

GOAL_SECONDS = 0.5
BASELINE = [sys.executable, "-c", "import fairseq_struct; fairseq_struct.register()"]


def model_free_runs(demo: Path, out: Path) -> Dict[str, List[str]]:
    """A small real run of each command that needs no model, on the demo corpus in `demo`
    (`demo-corpus --out-dir DEMO`), writing under `out`."""
    train, test = demo / "train", demo / "test"
    return {
        "demo-labelled": ["--out-dir", str(out / "labelled"), "--train-sentences", "200",
                          "--valid-sentences", "5", "--test-sentences", "5"],
        "score": ["--hyp", f"{test}.tr", "--ref", f"{test}.tr"],
        "density-buckets": ["--segmented-ref", f"{test}.tr", "--ref", f"{test}.tr",
                            "--system", f"same={test}.tr", "--out-dir", str(out / "buckets")],
        "corpus-stats": ["--segmented", f"{train}.tr"],
        "complexity": [f"{train}.tr"],
        "clean-corpus": ["--src", f"{train}.en", "--tgt", f"{train}.tr",
                         "--out-prefix", str(out / "clean")],
        "splits": ["--src", f"{train}.en", "--tgt", f"{train}.tr", "--out-dir",
                   str(out / "splits"), "--subset", "small=100,20,20"],
        "aso": ["--scores-a", "0.61", "0.62", "0.60", "0.63", "0.64",
                "--scores-b", "0.58", "0.59", "0.57", "0.60", "0.58",
                "--num-bootstrap-iterations", "50"],
        "prepare": ["--train", str(train), "--valid", str(demo / "valid"), "--test", str(test),
                    "--mode", "bpe", "--vocab-size", "200", "--out-dir", str(out / "prepared")],
    }  # fmt: skip


def cpu_seconds(command: List[str], cwd: Path) -> float:
    """User + system CPU seconds of one new process running `command` (which must succeed)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    result = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{result.stderr[-2000:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def best(command: List[str], cwd: Path, repeats: int) -> float:
    return round(min(cpu_seconds(command, cwd) for _ in range(repeats)), 3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--commands", nargs="+", choices=COMMANDS, help="default: every one")
    args = parser.parse_args()
    names = args.commands or list(COMMANDS)
    front_door = [sys.executable, "-m", "fairseq_struct"]
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory)
        demo = root / "demo"
        cpu_seconds([*front_door, "demo-corpus", "--out-dir", str(demo), "--train", "300",
                     "--valid", "30", "--test", "30"], root)  # fmt: skip
        baseline = best(BASELINE, root, args.repeats)
        helps = {name: best([*front_door, name, "--help"], root, args.repeats) for name in names}
        runs = {
            name: best([*front_door, name, *arguments], root, args.repeats)
            for name, arguments in model_free_runs(demo, root / "out").items()
            if name in names
        }
    slowest = max(max(helps.values()), max(runs.values()))
    print(
        json.dumps(
            {
                "benchmark": "command_startup",
                "baseline_plugin_import_cpu_s": baseline,
                "help_cpu_s": helps,
                "model_free_run_cpu_s": runs,
                "slowest_help_cpu_s": max(helps.values()),
                "slowest_model_free_run_cpu_s": max(runs.values()),
                "goal_cpu_s": GOAL_SECONDS,
                "over_goal": {
                    f"{name} {kind}": seconds
                    for kind, figures in (("--help", helps), ("run", runs))
                    for name, seconds in figures.items()
                    if seconds > GOAL_SECONDS
                },
                "slowest_over_baseline": round(slowest / baseline, 3),
            }
        )
    )


if __name__ == "__main__":
    main()
