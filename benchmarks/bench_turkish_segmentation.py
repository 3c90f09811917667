"""Speed of the project's Turkish segmenter against Zemberek's per-sentence one (design.md §3).

`.venv/bin/python benchmarks/bench_turkish_segmentation.py FILE --workers 2` (FILE: Turkish text)
prints one JSON line: tokens/s of both, `ratio` (CPU time, cold caches), differing lines (exit
status 1 if any), N workers' speed-up. Details: benchmarks/README.md#bench_turkish_segmentationpy.
"""

import argparse
import gc
import json
import logging
import multiprocessing
import os
import resource
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple, TypeVar

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from fairseq_struct.morph import turkish  # noqa: E402
from fairseq_struct.morph.segmentation_cache import SegmentationCache  # noqa: E402

logger = logging.getLogger("bench_turkish_segmentation")

# Both sides segment a block of this many lines in turn.
BLOCK_LINES = 250
T = TypeVar("T")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("file", type=Path, help="Turkish text, one sentence a line")
    parser.add_argument("--lines", type=int, default=None, help="first N lines (default: all)")
    parser.add_argument(
        "--reference-lines",
        type=int,
        default=None,
        help="lines the reference segments, spread evenly over the file (default: all)",
    )
    parser.add_argument(
        "--workers", type=int, default=1, help="also time segment_lines with 1 and N workers"
    )
    parser.add_argument(
        "--scaling-lines",
        type=int,
        default=None,
        help="lines for the worker scaling runs (default: all)",
    )
    parser.add_argument(
        "--scaling-rounds",
        type=int,
        default=3,
        help="rounds of (1 worker, N workers) runs; the fastest run of each count is compared",
    )
    parser.add_argument(
        "--segmentation-cache",
        type=Path,
        default=None,
        help="also run segment_lines with this persistent cache (filled on a first run, "
        "reused by the next) and check its output",
    )
    parser.add_argument("--log-every", type=float, default=30.0, help="progress every N s")
    return parser.parse_args()


class Clock:
    """Accumulated wall-clock and process CPU seconds of the timed sections."""

    def __init__(self) -> None:
        self.wall = self.cpu = 0.0

    def run(self, function: Callable[[], T]) -> T:
        wall, cpu = time.perf_counter(), time.process_time()
        result = function()
        self.wall += time.perf_counter() - wall
        self.cpu += time.process_time() - cpu
        return result


def rates(tokens: int, clock: Clock) -> Dict[str, float]:
    return {
        "tokens_per_s_cpu": round(tokens / clock.cpu, 1),
        "tokens_per_s_wall": round(tokens / clock.wall, 1),
        "cpu_s": round(clock.cpu, 2),
        "wall_s": round(clock.wall, 2),
    }


def reference_or_none(segmenter: turkish.TurkishSegmenter, line: str) -> Optional[str]:
    """The reference segmentation of `line`, or None where Zemberek raises on it."""
    try:
        return segmenter.segment_reference(line)
    except Exception as error:
        logger.warning("the reference fails on %r: %r", line[:80], error)
        return None


def compare(lines: List[str], reference_every: int, log_every: float, morphology: Any) -> dict:
    """Cold and reference runs in interleaved blocks, then the warm run."""
    segmenter = turkish.TurkishSegmenter(morphology)
    project, reference = Clock(), Clock()
    segmented: List[str] = []
    tokens_of: List[int] = []
    reference_tokens, differing, compared = 0, [], 0
    reference_failed: List[int] = []
    by_lines: Dict[int, float] = {}
    checkpoint = 1000
    last_log = time.monotonic()
    for block_start in range(0, len(lines), BLOCK_LINES):
        block = lines[block_start : block_start + BLOCK_LINES]
        for text, tokens, _ in project.run(lambda: segmenter._segment_many(block)):
            segmented.append(text)
            tokens_of.append(tokens)
        sample = range(block_start, block_start + len(block))
        sample = [i for i in sample if i % reference_every == 0]
        expected = reference.run(lambda: [reference_or_none(segmenter, lines[i]) for i in sample])
        for index, text in zip(sample, expected):
            if text is None:
                reference_failed.append(index + 1)
                continue
            compared += 1
            reference_tokens += tokens_of[index]
            if text != segmented[index]:
                differing.append(index + 1)
        done = len(segmented)
        while checkpoint <= done:
            by_lines[checkpoint] = sum(tokens_of[:checkpoint]) / project.cpu
            checkpoint *= 2
        if time.monotonic() - last_log >= log_every:
            last_log = time.monotonic()
            left = (len(lines) - done) / done * (project.wall + reference.wall)
            logger.info(
                "%d/%d lines; project %.0f tokens/s, reference %.0f tokens/s (CPU); ETA %.0f s",
                done,
                len(lines),
                sum(tokens_of) / project.cpu,
                reference_tokens / max(reference.cpu, 1e-9),
                left,
            )
    tokens = sum(tokens_of)
    by_lines[len(lines)] = tokens / project.cpu  # rounded when written: the last is the ratio's
    warm = Clock()
    again = warm.run(
        lambda: [
            x
            for at in range(0, len(lines), BLOCK_LINES)
            for x in segmenter.segment_many(lines[at : at + BLOCK_LINES])
        ]
    )
    assert again == segmented, "the warm run differs from the cold run"
    cold_rate = tokens / project.cpu
    reference_rate = reference_tokens / reference.cpu
    return {
        "tokens": tokens,
        "reference": {**rates(reference_tokens, reference), "lines": compared},
        "reference_sampled": compared < len(lines),
        "project_cold": rates(tokens, project),
        "project_warm": rates(tokens, warm),
        "ratio": round(cold_rate / reference_rate, 2),
        "ratio_wall": round((tokens / project.wall) / (reference_tokens / reference.wall), 2),
        "ratio_warm": round((tokens / warm.cpu) / reference_rate, 2),
        "project_cold_tokens_per_s_cpu_after_lines": {n: round(r, 1) for n, r in by_lines.items()},
        # grows with the file: every word type is analysed once, the reference analyses every token
        "ratio_after_lines": {n: round(rate / reference_rate, 2) for n, rate in by_lines.items()},
        "disambiguated_lines": segmenter.stats.disambiguated_lines,
        "compared_lines": compared,
        "differing_lines": len(differing),
        "first_differing_line_numbers": differing[:10],
        # lines on which Zemberek itself raises (e.g. a TypeError on "000000"): not compared
        "reference_failed_line_numbers": reference_failed,
        "segmented": segmented,
    }


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed_segment_lines(lines: List[str], workers: int, morphology: Any) -> Tuple[List[str], dict]:
    """segment_lines from cold caches: forked workers inherit a fresh shared segmenter."""
    turkish._SHARED = turkish.TurkishSegmenter(morphology)
    wall, cpu, child = time.perf_counter(), time.process_time(), children_cpu()
    out = turkish.segment_lines(lines, workers=workers)
    wall = time.perf_counter() - wall
    cpu = time.process_time() - cpu + children_cpu() - child
    return out, {"workers": workers, "wall_s": round(wall, 2), "cpu_s": round(cpu, 2)}


def independent_copies_wall(lines: List[str], copies: int, morphology: Any) -> float:
    """Wall time of `copies` forked 1-worker runs at once, each on all of `lines`.

    Work that needs no coordination at all: N x (1-worker wall) / this is the speed-up N cores
    of this machine give right now (shared caches, memory bandwidth, other tenants), the
    ceiling for `segment_lines` with N workers.
    """
    turkish._SHARED = turkish.TurkishSegmenter(morphology)  # each copy starts from it, cold
    gc.freeze()  # as ForkedHelpers does before it forks
    context = multiprocessing.get_context("fork")
    copies_ = [context.Process(target=turkish.segment_lines, args=(lines,)) for _ in range(copies)]
    started = time.perf_counter()
    for copy in copies_:
        copy.start()
    for copy in copies_:
        copy.join()
    assert all(copy.exitcode == 0 for copy in copies_), "a copy failed"
    return round(time.perf_counter() - started, 2)


def main() -> int:
    args = parse_args()
    logging.basicConfig(
        format="%(asctime)s | %(message)s", level=logging.INFO, stream=sys.stderr, force=True
    )
    lines = args.file.read_text(encoding="utf-8").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    lines = lines[: args.lines]
    reference_lines = min(args.reference_lines or len(lines), len(lines))
    reference_every = max(1, len(lines) // max(reference_lines, 1))

    started = time.perf_counter()
    morphology = turkish.load_morphology()
    build_s = time.perf_counter() - started
    result = {
        "benchmark": "turkish_segmentation",
        "file": str(args.file),
        "lines": len(lines),
        "analyser_build_s_excluded": round(build_s, 1),
        "reference_method": "analyze_and_disambiguate(line).best_analysis() per line",
        "reference_lines_every": reference_every,
    }
    # Worker scaling first, in a process that holds only Zemberek, as a prepare run does (the
    # reference's caches would make the forked workers copy more pages).
    scaling = None
    if args.workers > 1:
        scaling_lines = lines[: args.scaling_lines]
        runs, outputs, copies_walls = [], [], []
        for _ in range(args.scaling_rounds):  # in turns: load hits all alike
            for workers in (1, args.workers):
                out, run = timed_segment_lines(scaling_lines, workers, morphology)
                outputs.append(out)
                runs.append(run)
            copies_walls.append(independent_copies_wall(scaling_lines, args.workers, morphology))
        assert all(out == outputs[0] for out in outputs), "the number of workers changed the output"
        one = min(run["wall_s"] for run in runs if run["workers"] == 1)
        many = min(run["wall_s"] for run in runs if run["workers"] == args.workers)
        one_cpu = min(run["cpu_s"] for run in runs if run["workers"] == 1)
        many_cpu = min(run["cpu_s"] for run in runs if run["workers"] == args.workers)
        scaling = {
            "lines": len(scaling_lines),
            "runs": runs,
            "speedup_wall": round(one / many, 2),
            "speedup_wall_per_round": [
                round(runs[at]["wall_s"] / runs[at + 1]["wall_s"], 2)
                for at in range(0, len(runs), 2)
            ],
            # On a CPU shared with other processes the wall clock says little; this is the
            # speed-up with a free core per worker and even load: N x (work of 1) / (work of N).
            "speedup_from_cpu_time": round(args.workers * one_cpu / many_cpu, 2),
            "independent_copies_wall_s": copies_walls,
            "speedup_ceiling_independent_copies": round(args.workers * one / min(copies_walls), 2),
            "load_average_1min": round(os.getloadavg()[0], 2),
        }
        turkish._SHARED = None  # its caches are not needed any more

    comparison = compare(lines, reference_every, args.log_every, morphology)
    segmented = comparison.pop("segmented")
    result.update(comparison)
    if reference_every > 1:
        result["reference_note"] = (
            f"reference timed on every {reference_every}th line ({comparison['compared_lines']} "
            "lines); its tokens/s is extrapolated to the file"
        )

    if scaling is not None:
        assert outputs[0] == segmented[: len(scaling_lines)], "segment_lines changed the output"
        result["workers_scaling"] = scaling

    if args.segmentation_cache is not None:
        turkish._SHARED = turkish.TurkishSegmenter(morphology)
        with SegmentationCache(args.segmentation_cache, turkish.cache_fingerprint()) as cache:
            stats = turkish.SegmentationStats()
            wall = time.perf_counter()
            out = turkish.segment_lines(lines, stats=stats, cache=cache, log_every_s=args.log_every)
            wall = time.perf_counter() - wall
        result["segmentation_cache"] = {
            "file": str(args.segmentation_cache),
            "cached_lines": stats.cached_lines,
            "tokens_per_s_wall": round(stats.tokens / wall, 1),
            "differing_lines": sum(a != b for a, b in zip(out, segmented)),
        }
        result["differing_lines"] += result["segmentation_cache"]["differing_lines"]

    result["wall_s_total"] = round(time.perf_counter() - started, 1)
    print(json.dumps(result))
    return 1 if result["differing_lines"] > 0 else 0


if __name__ == "__main__":
    sys.exit(main())
