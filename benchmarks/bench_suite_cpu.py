"""The test suite's CPU time against a baseline commit's.

`.venv/bin/python benchmarks/bench_suite_cpu.py --baseline 12f851c` prints one JSON line: `cpu_s`
and `baseline_cpu_s`, `ratio`, each run's wall seconds and pytest summary (exit status 1 when a
run's tests fail). How the runs are made and the figures: benchmarks/README.md#bench_suite_cpupy.
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
