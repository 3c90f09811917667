"""Peak memory and speed of translation-data preparation as the corpus grows.

`.venv/bin/python benchmarks/bench_prepare_scale.py` prints one JSON line per size and mode
(`peak_rss_mib` of the process tree, `pairs_per_s`, stage times), then one per mode with
`peak_rss_ratio`, `throughput_ratio` and `extrapolated_36m`. The corpus, the measures and the
figures: benchmarks/README.md#bench_prepare_scalepy.
"""

import argparse
import json
import logging
import os
import random
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Sequence, Tuple

import psutil
from child_peak_rss import peak_kib, wrapped

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

logger = logging.getLogger("bench_prepare_scale")

PREPARE_MODULE = "fairseq_struct.morph.prepare"
SRC, TGT = "en", "tr"
MIB = 1024 * 1024
TARGET_RSS_RATIO = 1.2
TARGET_THROUGHPUT_RATIO = 0.9
EXTRAPOLATION_PAIRS = 36_000_000
# With several processes in the tree, one memory sample in this many also reads their PSS.
PSS_EVERY = 5
# SentencePiece's training sample at every size: 200,000 lines are all of the 100k size's.
SAMPLE_AT_EVERY_SIZE = 200_000
# Log lines of prepare kept in --phases output (the first ones; a streaming prepare may log often).
MAX_PHASES = 40


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--sizes",
        type=int,
        nargs="+",
        default=[100_000, 1_000_000],
        help="training pairs of each corpus (default: 100000 1000000)",
    )
    parser.add_argument(
        "--modes",
        nargs="+",
        choices=("bpe", "morph"),
        default=["bpe"],
        help="prepare's --mode values to run, each at every size (default: bpe; morph needs "
        "zemberek and is slow)",
    )
    parser.add_argument("--text-en", type=Path, help="English side of real parallel text")
    parser.add_argument("--text-tr", type=Path, help="Turkish side, line-aligned with --text-en")
    parser.add_argument(
        "--valid-size", type=int, default=3000, help="pairs of valid and of test each (3000)"
    )
    parser.add_argument("--vocab-size", type=int, default=8000, help="prepare's --vocab-size")
    parser.add_argument(
        "--workers",
        type=int,
        default=1,
        help="prepare's --workers, passed where its --help lists the option (default: 1)",
    )
    parser.add_argument(
        "--prepare-args",
        default="",
        help='more options for prepare, one shell-quoted string given with "=", e.g. '
        '--prepare-args="--spm-threads 2"',
    )
    parser.add_argument(
        "--spm-sample",
        type=int,
        default=SAMPLE_AT_EVERY_SIZE,
        metavar="N",
        help="prepare's --spm-sample, passed where its --help lists the option, so that every "
        "size trains SentencePiece on the same number of lines: its memory grows with the "
        f"sample, not with the corpus (default: {SAMPLE_AT_EVERY_SIZE:,}; 0: prepare's default)",
    )
    parser.add_argument("--seed", type=int, default=1, help="seed of the corpus (default: 1)")
    parser.add_argument(
        "--interval", type=float, default=0.1, help="seconds between memory samples (0.1)"
    )
    parser.add_argument(
        "--tmp-dir",
        type=Path,
        default=None,
        help="where the working directory is made (default: the system's temporary directory)",
    )
    parser.add_argument(
        "--keep", action="store_true", help="keep corpora and outputs (their path is logged)"
    )
    parser.add_argument(
        "--phases",
        action="store_true",
        help="add `phases` to each line: the peak memory between consecutive log lines of "
        "prepare, i.e. per stage",
    )
    args = parser.parse_args(argv)
    if (args.text_en is None) != (args.text_tr is None):
        parser.error("--text-en and --text-tr go together")
    if min(args.sizes) < 1 or args.valid_size < 1 or args.vocab_size < 1 or args.workers < 1:
        parser.error("--sizes, --valid-size, --vocab-size and --workers must be positive")
    if args.interval <= 0:
        parser.error("--interval must be positive")
    args.sizes = sorted(set(args.sizes))
    return args


# ------------------------------------------------------------------------------- corpora

Pair = Tuple[str, str]


def demo_corpus(valid_size: int, seed: int) -> Tuple[List[Pair], List[Pair], Iterator[Pair], str]:
    """Valid, test and an endless train stream from the demo grammar."""
    from fairseq_struct.demo_data.synthetic_en_tr import generate_corpus, sample_pair

    held_out = generate_corpus(2 * valid_size, seed)
    seen_en = {english for english, _ in held_out}
    seen_tr = {turkish for _, turkish in held_out}

    def train() -> Iterator[Pair]:
        rng = random.Random(seed + 1)
        while True:
            english, turkish = sample_pair(rng)
            if english not in seen_en and turkish not in seen_tr:
                yield english, turkish

    description = (
        f"demo grammar (synthetic_en_tr, seed {seed}): train sampled with the grammar's repeats, "
        "valid/test distinct pairs disjoint from train"
    )
    return held_out[:valid_size], held_out[valid_size:], train(), description


def text_corpus(
    en_path: Path, tr_path: Path, valid_size: int, seed: int
) -> Tuple[List[Pair], List[Pair], Iterator[Pair], str]:
    """Valid, test and an endless train stream (repeated, reshuffled) from real parallel text."""
    english = en_path.read_text(encoding="utf-8").splitlines()
    turkish = tr_path.read_text(encoding="utf-8").splitlines()
    if len(english) != len(turkish):
        raise SystemExit(f"error: {en_path} has {len(english)} lines, {tr_path} {len(turkish)}")
    # Distinct usable pairs, in file order, then shuffled once: prepare refuses empty lines in
    # valid and test, and drops them from train.
    pairs = list(dict.fromkeys((e, t) for e, t in zip(english, turkish) if e.strip() and t.strip()))
    rng = random.Random(seed)
    rng.shuffle(pairs)
    if len(pairs) <= 2 * valid_size:
        raise SystemExit(
            f"error: {len(pairs)} distinct pairs leave nothing for train after 2 x --valid-size "
            f"{valid_size}; give a smaller --valid-size"
        )
    held_out = pairs[: 2 * valid_size]
    seen_en = {e for e, _ in held_out}
    seen_tr = {t for _, t in held_out}
    pool = [(e, t) for e, t in pairs[2 * valid_size :] if e not in seen_en and t not in seen_tr]
    if not pool:
        raise SystemExit("error: every training pair shares a side with valid or test")

    def train() -> Iterator[Pair]:
        repetition = list(pool)
        while True:
            rng.shuffle(repetition)
            yield from repetition

    description = (
        f"{en_path} / {tr_path}: {len(pool)} distinct training pairs repeated and shuffled "
        f"(seed {seed}); valid/test disjoint from train ({len(pairs) - len(pool)} pairs held out "
        "or left out)"
    )
    return held_out[:valid_size], held_out[valid_size:], train(), description


def write_pairs(prefix: Path, pairs: Sequence[Pair]) -> None:
    with open(f"{prefix}.{SRC}", "w", encoding="utf-8") as en, open(
        f"{prefix}.{TGT}", "w", encoding="utf-8"
    ) as tr:
        for english, turkish in pairs:
            en.write(english + "\n")
            tr.write(turkish + "\n")


def write_corpora(args: argparse.Namespace, root: Path) -> Tuple[Dict[int, Path], str]:
    """Valid and test once, and a train split per size (each a prefix of the next), streamed."""
    if args.text_en is not None:
        valid, test, train, description = text_corpus(
            args.text_en, args.text_tr, args.valid_size, args.seed
        )
    else:
        valid, test, train, description = demo_corpus(args.valid_size, args.seed)
    write_pairs(root / "valid", valid)
    write_pairs(root / "test", test)
    prefixes = {size: root / f"train{size}" for size in args.sizes}
    files = [
        (size, open(f"{prefix}.{lang}", "w", encoding="utf-8"))
        for size, prefix in prefixes.items()
        for lang in (SRC, TGT)
    ]
    started = time.monotonic()
    try:
        for index in range(max(args.sizes)):
            english, turkish = next(train)
            for size, handle in files:
                if index < size:
                    handle.write((english if handle.name.endswith(SRC) else turkish) + "\n")
    finally:
        for _, handle in files:
            handle.close()
    logger.info(
        "corpora of %s training pairs written in %.1f s: %s",
        ", ".join(map(str, args.sizes)),
        time.monotonic() - started,
        description,
    )
    return prefixes, description


# ------------------------------------------------------------------------------- measuring


class TreeMemorySampler(threading.Thread):
    """Samples the summed RSS of the command a child_peak_rss wrapper runs (the wrapper's
    descendants, not the wrapper itself) until it is stopped.

    Forked workers share their parent's pages until they write them, and each one's RSS counts
    them again; so while the tree has several processes, every PSS_EVERY-th sample also sums
    their proportional set size (shared pages divided among their sharers; reading it walks the
    page tables, ~12 ms per GB, too slow for every sample). `peak_pss` is the peak of that sum,
    a lone process's RSS standing for its PSS.
    """

    def __init__(self, wrapper_pid: int, interval: float) -> None:
        super().__init__(daemon=True)
        self.wrapper = psutil.Process(wrapper_pid)
        self.interval = interval
        self.peak = 0
        self.peak_processes = 0
        self.peak_pss = 0
        self.samples = 0
        self.started = time.monotonic()
        self.marks: List[Tuple[float, str, int]] = []  # (elapsed, log line, peak since last)
        self._peak_since_mark = 0
        self._stopping = threading.Event()
        self._lock = threading.Lock()

    def sample(self) -> None:
        try:
            processes = self.wrapper.children(recursive=True)
        except psutil.Error:
            return
        if not processes:  # the command has not started yet, or has ended
            return
        total = 0
        for process in processes:
            try:
                total += process.memory_info().rss
            except psutil.Error:
                pass  # ended between listing and reading
        pss = total if len(processes) == 1 else None
        if pss is None and self.samples % PSS_EVERY == 0:
            pss = 0
            for process in processes:
                try:
                    pss += process.memory_full_info().pss
                except psutil.Error:
                    pass
        with self._lock:
            self.samples += 1
            if pss is not None:
                self.peak_pss = max(self.peak_pss, pss)
            if total > self.peak:
                self.peak, self.peak_processes = total, len(processes)
            self._peak_since_mark = max(self._peak_since_mark, total)

    def mark(self, line: str) -> None:
        """A log line of prepare: the peak since the previous one belongs to the stage it ends."""
        self.sample()
        with self._lock:
            self.marks.append((time.monotonic() - self.started, line, self._peak_since_mark))
            self._peak_since_mark = 0

    def run(self) -> None:
        while not self._stopping.is_set():
            self.sample()
            self._stopping.wait(self.interval)

    def stop(self) -> None:
        self._stopping.set()
        self.join()


def prepare_options() -> Tuple[str, float]:
    """prepare's --help, to pass only the options that this version of it has, and its seconds."""
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", PREPARE_MODULE, "--help"],
        cwd=REPO,
        env=child_env(),
        capture_output=True,
        text=True,
        check=True,
    )
    return result.stdout, time.monotonic() - started


def import_cost() -> Tuple[int, float]:
    """Peak RSS and wall seconds of a process that only imports prepare (the package pulls in
    torch and fairseq): the part of every run's peak and time that does not depend on the corpus."""
    with tempfile.TemporaryDirectory() as scratch:
        peak_file = Path(scratch) / "peak_rss"
        started = time.monotonic()
        subprocess.run(
            wrapped([sys.executable, "-c", f"import {PREPARE_MODULE}"], peak_file),
            cwd=REPO,
            env=child_env(),
            capture_output=True,
            check=True,
        )
        return peak_kib(peak_file) * 1024, time.monotonic() - started


def child_env() -> Dict[str, str]:
    path = os.environ.get("PYTHONPATH")
    return dict(
        os.environ,
        PYTHONPATH=str(REPO) + (os.pathsep + path if path else ""),
        PYTHONUNBUFFERED="1",
    )


def bytes_under(directory: Path) -> Tuple[int, Dict[str, int]]:
    """All bytes of the files under `directory`, and per top-level entry."""
    per_entry: Dict[str, int] = {}
    for path in directory.rglob("*"):
        if path.is_file() and not path.is_symlink():
            entry = path.relative_to(directory).parts[0]
            per_entry[entry] = per_entry.get(entry, 0) + path.stat().st_size
    return sum(per_entry.values()), dict(sorted(per_entry.items()))


def stage_seconds(report: object, prefix: str = "", depth: int = 0) -> Dict[str, float]:
    """Every `...seconds` number of prepare_report.json, and every number in a `...seconds`
    dict (`stage_seconds`), by its dotted path (stage times)."""
    found: Dict[str, float] = {}
    if depth > 4 or not isinstance(report, dict):
        return found
    for key, value in report.items():
        path = f"{prefix}{key}"
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            if str(key).endswith(("seconds", "_s")) or prefix.endswith(("seconds.", "_s.")):
                found[path] = value
        elif isinstance(value, dict):
            found.update(stage_seconds(value, path + ".", depth + 1))
    return found


def sample_sizes(report: object) -> Dict[str, object]:
    """SentencePiece sample settings, where the report states them (a streaming prepare)."""
    sentencepiece = report.get("sentencepiece") if isinstance(report, dict) else None
    if not isinstance(sentencepiece, dict):
        return {}
    return {key: value for key, value in sentencepiece.items() if "sample" in key}


def run_prepare(
    command: List[str], out_dir: Path, log_path: Path, interval: float
) -> Tuple[float, float, int, TreeMemorySampler]:
    """Run prepare; (wall s, CPU s of the tree, largest single-process RSS, sampler). The
    largest RSS is child_peak_rss's wrapper's figure, which this process's own peak cannot
    inflate."""
    peak_file = log_path.with_suffix(".peak_rss")
    started = time.monotonic()
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            wrapped(command, peak_file),
            cwd=REPO,
            env=child_env(),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.PIPE,
        )
        sampler = TreeMemorySampler(process.pid, interval)
        sampler.start()

        def copy_stderr() -> None:
            for line in process.stderr:
                log.write(line)
                log.flush()
                sampler.mark(line.decode("utf-8", "replace").strip())

        reader = threading.Thread(target=copy_stderr, daemon=True)
        reader.start()
        # wait4 instead of Popen.wait: it also gives the tree's CPU time (the wrapper's few
        # hundredths of a second included).
        _, status, usage = os.wait4(process.pid, 0)
        seconds = time.monotonic() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        sampler.stop()
        sampler.mark("(prepare ended)")
        reader.join()
        process.stderr.close()
    if process.returncode != 0:
        tail = log_path.read_text(encoding="utf-8", errors="replace")[-4000:]
        raise RuntimeError(f"{shlex.join(command)} failed ({process.returncode}):\n{tail}")
    cpu_seconds = usage.ru_utime + usage.ru_stime
    return seconds, cpu_seconds, peak_kib(peak_file) * 1024, sampler


def phases(sampler: TreeMemorySampler) -> List[Dict[str, object]]:
    kept = sampler.marks[:MAX_PHASES]
    return [
        {"until_s": round(elapsed, 2), "log": line[:120], "peak_rss_mib": round(peak / MIB, 1)}
        for elapsed, line, peak in kept
    ]


def measure(
    args: argparse.Namespace,
    size: int,
    mode: str,
    train_prefix: Path,
    root: Path,
    has_workers: bool,
    description: str,
    baseline: Tuple[int, float],
) -> Dict[str, object]:
    out_dir = root / f"out-{mode}-{size}"
    if out_dir.exists():
        shutil.rmtree(out_dir)
    command = [sys.executable, "-m", PREPARE_MODULE, "--src-lang", SRC, "--tgt-lang", TGT]
    command += ["--train", str(train_prefix), "--valid", str(root / "valid")]
    command += ["--test", str(root / "test"), "--mode", mode]
    command += ["--vocab-size", str(args.vocab_size), "--out-dir", str(out_dir)]
    if has_workers:
        command += ["--workers", str(args.workers)]
    command += shlex.split(args.prepare_args)
    logger.info("%s", shlex.join(command))
    seconds, cpu_seconds, single_peak, sampler = run_prepare(
        command, out_dir, root / f"prepare-{mode}-{size}.log", args.interval
    )
    written, written_by_entry = bytes_under(out_dir)
    report_path = out_dir / "prepare_report.json"
    report = json.loads(report_path.read_text(encoding="utf-8")) if report_path.is_file() else {}
    input_bytes = sum(os.path.getsize(f"{train_prefix}.{lang}") for lang in (SRC, TGT))
    figures: Dict[str, object] = {
        "benchmark": "prepare_scale",
        "line": "measurement",
        "size": size,
        "mode": mode,
        "peak_rss_mib": round(sampler.peak / MIB, 1),
        "peak_rss_processes": sampler.peak_processes,
        "peak_rss_single_process_mib": round(single_peak / MIB, 1),
        "peak_pss_mib": round(sampler.peak_pss / MIB, 1),
        "import_rss_mib": round(baseline[0] / MIB, 1),
        "peak_rss_above_import_mib": round((sampler.peak - baseline[0]) / MIB, 1),
        "rss_samples": sampler.samples,
        "sample_interval_s": args.interval,
        "seconds": round(seconds, 3),
        "pairs_per_s": round(size / seconds, 1),
        "import_s": round(baseline[1], 3),
        "pairs_per_s_after_import": round(size / max(seconds - baseline[1], 1e-3), 1),
        "cpu_s": round(cpu_seconds, 2),
        "bytes_written": written,
        "bytes_written_by_entry": written_by_entry,
        "train_input_bytes": input_bytes,
        "valid_test_pairs": args.valid_size,
        "workers": args.workers if has_workers else None,
        "workers_option": has_workers,
        "vocab_size": args.vocab_size,
        "prepare_args": args.prepare_args,
        "cpu_count": os.cpu_count(),
        "load_average": [round(load, 2) for load in os.getloadavg()],
        "stage_seconds": stage_seconds(report),
        "sentencepiece_sample": sample_sizes(report),
        "corpus": description,
        "prepare_commit": git_commit(),
    }
    if args.phases:
        figures["phases"] = phases(sampler)
    if not args.keep:
        shutil.rmtree(out_dir, ignore_errors=True)
    return figures


def git_commit() -> Optional[str]:
    try:
        result = subprocess.run(
            ["git", "describe", "--always", "--dirty"],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return result.stdout.strip() or None


# ------------------------------------------------------------------------------- summary


def line_through(x0: float, y0: float, x1: float, y1: float, x: float) -> float:
    return y1 + (y1 - y0) / (x1 - x0) * (x - x1)


def summary(mode: str, lines: List[Dict[str, object]], workers: Optional[int]) -> Dict[str, object]:
    """Largest size against smallest, and the straight-line extrapolation to 36M pairs."""
    small, large = lines[0], lines[-1]
    figures: Dict[str, object] = {
        "benchmark": "prepare_scale",
        "line": "summary",
        "mode": mode,
        "sizes": [line["size"] for line in lines],
        "peak_rss_mib": [line["peak_rss_mib"] for line in lines],
        "pairs_per_s": [line["pairs_per_s"] for line in lines],
        "workers": workers,
        "cpu_count": os.cpu_count(),
    }
    if len(lines) < 2:
        figures.update(
            peak_rss_ratio=None,
            throughput_ratio=None,
            rss_meets_target=None,
            throughput_meets_target=None,
            meets_target=None,
        )
        pairs_per_s = float(large["pairs_per_s"])
        figures["extrapolated_36m"] = {
            "seconds": round(EXTRAPOLATION_PAIRS / pairs_per_s),
            "hours": round(EXTRAPOLATION_PAIRS / pairs_per_s / 3600, 2),
            "peak_rss_mib": None,
            "method": "extrapolation, not a measurement: one size only, so time proportional "
            "to pairs at its pairs/s; memory needs two sizes",
        }
        return figures
    rss_ratio = float(large["peak_rss_mib"]) / float(small["peak_rss_mib"])
    throughput_ratio = float(large["pairs_per_s"]) / float(small["pairs_per_s"])
    figures.update(
        peak_rss_ratio=round(rss_ratio, 3),
        peak_rss_target=TARGET_RSS_RATIO,
        rss_meets_target=rss_ratio <= TARGET_RSS_RATIO,
        throughput_ratio=round(throughput_ratio, 3),
        throughput_target=TARGET_THROUGHPUT_RATIO,
        throughput_meets_target=throughput_ratio >= TARGET_THROUGHPUT_RATIO,
    )
    figures["meets_target"] = figures["rss_meets_target"] and figures["throughput_meets_target"]
    n0, n1 = float(small["size"]), float(large["size"])
    # Neither shrinks with more pairs: a falling line (noise) stays at the largest size's figure.
    seconds = max(
        float(large["seconds"]),
        line_through(n0, float(small["seconds"]), n1, float(large["seconds"]), 36e6),
    )
    rss = max(
        float(large["peak_rss_mib"]),
        line_through(n0, float(small["peak_rss_mib"]), n1, float(large["peak_rss_mib"]), 36e6),
    )
    above = [float(line["peak_rss_above_import_mib"]) for line in (small, large)]
    figures["peak_rss_above_import_ratio"] = round(above[1] / above[0], 3) if above[0] > 0 else None
    # Startup (importing torch and fairseq, ~3 s) flatters the larger size's pairs/s.
    figures["throughput_ratio_after_import"] = round(
        float(large["pairs_per_s_after_import"]) / float(small["pairs_per_s_after_import"]), 3
    )
    figures["rss_kib_per_pair"] = round(
        (float(large["peak_rss_mib"]) - float(small["peak_rss_mib"])) * 1024 / (n1 - n0), 3
    )
    figures["extrapolated_36m"] = {
        "pairs": EXTRAPOLATION_PAIRS,
        # Milliseconds: on tiny sizes whose line falls (noise), the largest size's figure is a
        # fraction of a second, which whole seconds would round to 0.
        "seconds": round(seconds, 3),
        "hours": round(seconds / 3600, 2),
        "peak_rss_mib": round(rss, 1),
        "peak_rss_gib": round(rss / 1024, 2),
        "workers": workers,
        "cpu_count": os.cpu_count(),
        "method": f"extrapolation, not a measurement: the straight line through the sizes "
        f"{int(n0)} and {int(n1)} (time and peak RSS), with these workers on this machine",
    }
    return figures


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(name)s: %(message)s", stream=sys.stderr
    )
    if args.tmp_dir is not None:
        args.tmp_dir.mkdir(parents=True, exist_ok=True)
    root = Path(tempfile.mkdtemp(prefix="prepare_scale_", dir=args.tmp_dir))
    try:
        options, help_seconds = prepare_options()
        has_workers = "--workers" in options
        if not has_workers:
            logger.info("prepare has no --workers option: not passed")
        if args.spm_sample and "--spm-sample" in options:  # --prepare-args may still override
            args.prepare_args = f"--spm-sample {args.spm_sample} {args.prepare_args}".strip()
        import_rss, import_seconds = import_cost()
        # Both runs import prepare: the faster one is the start-up cost with less noise.
        baseline = import_rss, min(import_seconds, help_seconds)
        logger.info(
            "importing prepare alone: %.1f MiB peak RSS, %.1f s", baseline[0] / MIB, baseline[1]
        )
        prefixes, description = write_corpora(args, root)
        for mode in args.modes:
            lines = []
            for size in args.sizes:
                figures = measure(
                    args, size, mode, prefixes[size], root, has_workers, description, baseline
                )
                print(json.dumps(figures, ensure_ascii=False), flush=True)
                lines.append(figures)
            workers = args.workers if has_workers else None
            print(json.dumps(summary(mode, lines, workers), ensure_ascii=False), flush=True)
    except (RuntimeError, OSError, subprocess.CalledProcessError) as error:
        logger.error("%s", error)
        return 1
    finally:
        if args.keep:
            logger.info("kept under %s", root)
        else:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
