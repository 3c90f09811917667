"""The test suite's CPU time against a baseline commit's.

    .venv/bin/python benchmarks/bench_suite_cpu.py --baseline 12f851c
    .venv/bin/python benchmarks/bench_suite_cpu.py --baseline 12f851c --logs suite-logs \\
        --inventory suite-logs/inventory.jsonl

The baseline commit, then --commit (default HEAD), is cloned from this repository into a
temporary directory with `../shared` beside it (a link to --shared, by default this checkout's
`../shared` where it exists), and its suite runs as `make test` runs it: `python -m compileall -q
fairseq_struct benchmarks`, then `python -m pytest -q -n auto --dist load tests`, with the clone
first on PYTHONPATH and this checkout's virtual environment first on PATH: one interpreter and one
set of packages for both runs, so that only the code differs. Commits are measured, not the
working tree. Each run gets a new, empty torch inductor cache (TORCHINDUCTOR_CACHE_DIR), so
both compile what they compile as on a fresh machine, as CI does; a warm cache in one run and a
cold one in the other differs by about 30 s of CPU on a 2-core machine.

CPU is user + sys of everything the run waited for (the figure `time make test` prints), from
`getrusage(RUSAGE_CHILDREN)` around each run. The machine must be otherwise idle: the two runs
follow each other, and a machine's speed drifts by 5-15 % between sessions, so compare the
ratio, not figures of different days.

--inventory FILE adds a pytest plugin (`suite_cpu_inventory.py`, beside this file) to the
--commit run: one JSON line per test phase with the CPU of its worker's process tree (the worker,
the commands it started and the preloaded servers' forks, through their parents' reaped-children
times; with two or more workers, a command run in a server the other worker started counts in
that worker's phase). It reads /proc three times a test, which adds 1-2 % to that run's CPU.

Prints one JSON line: `cpu_s` and `baseline_cpu_s`, `ratio` (target <= 0.65, the suite's CPU
budget) and `meets_target`, each run's wall seconds and pytest summary. Exit status 1 when a run's tests fail
(its CPU is then no measure of the suite); --logs DIR keeps each run's output there, which ends
with pytest's 30 slowest test phases (`--durations=30`).
"""

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Optional

REPO_ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = Path(__file__).resolve().parent
TARGET_RATIO = 0.65
SUMMARY_COUNTS = re.compile(r"(\d+) (passed|failed|skipped|errors?)")


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _commit_of(ref: str) -> str:
    return subprocess.run(
        ["git", "-C", str(REPO_ROOT), "rev-parse", "--verify", f"{ref}^{{commit}}"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip


def _clone(commit: str, root: Path, shared: Optional[Path]) -> Path:
    """REPO_ROOT at `commit` in root/main, with root/shared linked to `shared`."""
    checkout = root / "main"
    subprocess.run(["git", "clone", "-q", str(REPO_ROOT), str(checkout)], check=True)
    subprocess.run(["git", "-C", str(checkout), "checkout", "-q", commit], check=True)
    if shared is not None:
        (root / "shared").symlink_to(shared.resolve(), target_is_directory=True)
    return checkout


def _pytest_summary(output: str) -> Dict[str, int]:
    """The counts of pytest's last summary line ("3 passed, 1 skipped in 2.0s")."""
    lines = [line for line in output.splitlines() if re.search(r" in [\d.]+s", line)]
    if not lines:
        return {}
    # "errors" → "error"; the other kinds end in "d".
    return {kind.rstrip("s"): int(count) for count, kind in SUMMARY_COUNTS.findall(lines[-1])}


def run_suite(
    checkout: Path, tests: List[str], workers: str, inventory: Optional[Path]
) -> Dict[str, object]:
    """The clone's suite as `make test` runs it, on this interpreter; its CPU, wall time,
    pytest summary and output."""
    # Not a pytest-xdist worker's variables, where this runs under pytest (its smoke test): the
    # suite would take itself for a worker.
    env = {name: value for name, value in os.environ.items() if not name.startswith("PYTEST_")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    python_path = [str(checkout)]
    # --durations: the 30 slowest test phases at the end of each run's log, to compare them
    # before and after.
    pytest_args = ["-q", "-p", "no:cacheprovider", "--durations=30"]
    if workers != "0":
        pytest_args += ["-n", workers, "--dist", "load"]
    if inventory is not None:
        python_path.append(str(BENCHMARKS))
        pytest_args += ["-p", "suite_cpu_inventory"]
        env["SUITE_CPU_INVENTORY"] = str(inventory.resolve())
    env["PYTHONPATH"] = os.pathsep.join(python_path)
    with tempfile.TemporaryDirectory(prefix="inductor-cache-") as cache:
        env["TORCHINDUCTOR_CACHE_DIR"] = cache
        commands = [
            [sys.executable, "-m", "compileall", "-q", "fairseq_struct", "benchmarks"],
            [sys.executable, "-m", "pytest", *pytest_args, *tests],
        ]
        cpu, start, output, returncode = _children_cpu(), time.perf_counter(), "", 0
        for command in commands:
            result = subprocess.run(
                command, cwd=checkout, env=env, stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT, text=True,
            )  # fmt: skip
            output += result.stdout
            returncode = returncode or result.returncode
        return {
            "cpu_s": round(_children_cpu() - cpu, 1),
            "wall_s": round(time.perf_counter() - start, 1),
            "returncode": returncode,
            "summary": _pytest_summary(output),
            "output": output,
        }


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", required=True, help="the commit to compare with")
    parser.add_argument("--commit", default="HEAD", help="the commit measured (default HEAD)")
    default_shared = REPO_ROOT.parent / "shared"
    parser.add_argument(
        "--shared", type=Path, default=default_shared if default_shared.is_dir() else None,
        help="the directory the clones find as ../shared (default: this checkout's, if any)",
    )  # fmt: skip
    parser.add_argument("--tests", nargs="+", default=["tests"], help="pytest's paths (tests)")
    parser.add_argument("--workers", default="auto", help="pytest-xdist's -n (0: no workers)")
    parser.add_argument("--inventory", type=Path, help="per-test CPU lines of --commit's run")
    parser.add_argument("--logs", type=Path, help="keep each run's output in this directory")
    args = parser.parse_args(argv)

    commits = {"baseline": _commit_of(args.baseline), "commit": _commit_of(args.commit)}
    if args.inventory is not None:
        args.inventory.parent.mkdir(parents=True, exist_ok=True)
        args.inventory.write_text("", encoding="utf-8")
    runs = {}
    with tempfile.TemporaryDirectory(prefix="bench-suite-cpu-") as work:
        for name, commit in commits.items():
            checkout = _clone(commit, Path(work) / name, args.shared)
            inventory = args.inventory if name == "commit" else None
            runs[name] = run_suite(checkout, args.tests, args.workers, inventory)
            print(f"{name} {commit[:12]}: {runs[name]['cpu_s']} s of CPU", file=sys.stderr)
    if args.logs is not None:
        args.logs.mkdir(parents=True, exist_ok=True)
        for name, run in runs.items():
            (args.logs / f"{name}.log").write_text(run["output"], encoding="utf-8")
    failed = [name for name, run in runs.items() if run["returncode"] != 0]
    for name in failed:
        print(f"error: the {name} run's tests failed:\n{runs[name]['output'][-3000:]}",
              file=sys.stderr)  # fmt: skip
    ratio = runs["commit"]["cpu_s"] / runs["baseline"]["cpu_s"]
    print(json.dumps({
        "benchmark": "suite_cpu",
        "baseline": commits["baseline"][:12],
        "commit": commits["commit"][:12],
        "baseline_cpu_s": runs["baseline"]["cpu_s"],
        "cpu_s": runs["commit"]["cpu_s"],
        "ratio": round(ratio, 3),
        "target_ratio": TARGET_RATIO,
        "meets_target": ratio <= TARGET_RATIO,
        "baseline_wall_s": runs["baseline"]["wall_s"],
        "wall_s": runs["commit"]["wall_s"],
        "baseline_tests": runs["baseline"]["summary"],
        "tests": runs["commit"]["summary"],
        "cpu_count": os.cpu_count(),
    }))  # fmt: skip
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
